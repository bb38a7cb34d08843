package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/coordinator/conditions"
	"log/slog"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// Banks is how the orchestrator reaches a participant bank's ingress
// (spec 004 ZC→Bank Ingress API). The gateway implements it over signed
// HTTP (coordinator/bankclient); tests wire adapter.Adapter instances in
// process (test/e2e).
//
// Call sends req to POST /bank/{bankID}/zc-ingress/{req.Command()} as JSON
// and decodes a 2xx JSON body into resp, a pointer to the command's
// response type in bankapi (ReserveFundsResponse, ExecuteResponse,
// CheckResponse, NameCheckResponse, NotifyResponse, DebitSettledResponse,
// ReleaseReserveResponse, ...). The error contract is what the queue's
// retry policy relies on:
//
//   - the bank answered with a catalog error body (bankapi.ErrorBody):
//     return a *domainerr.Error carrying the BANK'S reason_code, category
//     and details unchanged (build it as &domainerr.Error{Code: body.ReasonCode,
//     Category: domainerr.Category(body.Category), Message: body.Error,
//     Details: body.Details}, so a code unknown to this build keeps its
//     category);
//   - the bank could not be reached, the connection failed, or it answered
//     5xx without a catalog body: BANK_ERROR (DOWNSTREAM);
//   - no answer within the deadline (context deadline, client timeout):
//     BANK_TIMEOUT (TIMEOUT).
//
// Call must be safe for concurrent use. Request ids (req.RequestID()) are
// deterministic per txid and command, so a retried Call is idempotent at
// the bank.
type Banks interface {
	Call(ctx context.Context, bankID string, req bankapi.Request, resp any) error
}

// Timeouts are the timeout sweep's limits (spec 004 state reason codes),
// measured from Transactions.pending_since (the start of the current wait,
// written by the lane primitives). They are PR-* parameters: these are
// their defaults for the orchestrator (zero: the coordinator/params
// default), and a value an operator set in the parameter ledger wins,
// read at use time (docs/orchestrator.md).
type Timeouts struct {
	// Exec: DECIDED_TO_SETTLE with no payer execution after this long ->
	// SUSPENDED, SUSPEND_EXEC_TIMEOUT. Default 60s.
	Exec time.Duration
	// PayeeProof: PAYER_EXEC_CONFIRMED with no payee execution after this
	// long -> SUSPENDED, SUSPEND_PAYEE_PROOF_TIMEOUT. Default 60s.
	PayeeProof time.Duration
	// Suspended: SUSPENDED for longer than this -> FAILED_EXECUTION,
	// FAILED_EXEC_TIMEOUT (and a Case). Default 24h.
	Suspended time.Duration
	// AdapterDownAfter: after this many consecutive BANK_ERROR/BANK_TIMEOUT
	// answers to an execution command, the transfer is parked in SUSPENDED
	// with SUSPEND_ADAPTER_DOWN (the queue keeps retrying). Default 3.
	AdapterDownAfter int
}

// Backoff is the retry schedule of the durable queue: attempt n (1-based)
// waits min(Base * 2^(n-1), Max). Defaults: Base 1s, Max 5m.
type Backoff struct {
	Base, Max time.Duration
}

// Config wires an Orchestrator.
type Config struct {
	// DB is the coordinator database (store.Schema applied). Required.
	DB *store.DB
	// Banks reaches the banks' ingress. Required for RunOnce/Run.
	Banks Banks
	// Clock is the only time source (nil: clock.System{}).
	Clock clock.Clock
	// Logger receives one JSON line per event (nil: discard).
	Logger *slog.Logger
	// FinalityLog is the log the lane primitives append to (nil:
	// finality.New(Clock)); pass the one carrying the outbox hook.
	FinalityLog *finality.Log
	Timeouts    Timeouts
	Backoff     Backoff
	// WorkerID names this worker in claimed queue rows (default
	// "worker-1"). A node passes an owner string (procid.Identity.Owner):
	// Run then takes back at once the items an earlier start of the same
	// node id left claimed (TakeBackEarlierClaims).
	WorkerID string
	// Lease is how long a claimed work item stays claimed before another
	// worker may take it over. It must be shorter than every timeout that
	// acts on a claimed item (Timeouts.Exec, PayeeProof, Suspended), so a
	// dead worker's item is taken over before the sweep acts on it; New
	// refuses a longer one (ErrLeaseTooLong). Default: 30s, or half the
	// shortest of those timeouts when that is less.
	Lease time.Duration
	// BatchSize is how many due items RunOnce and Run claim per claim
	// commit (default 32).
	BatchSize int
	// Concurrency is how many claimed items RunOnce and Run work at the
	// same time (default 1; a node runs one Run with 256). Items of one
	// transfer are never worked concurrently.
	Concurrency int
	// ManualVenue leaves HIGH_VALUE transfers at the BOJ venue
	// (owner VENUE:BOJ) until RunVenue is called; by default the worker runs
	// the simulated venue right after instructing it.
	ManualVenue bool
	// Conditions evaluates the condition expressions attached to HTLCs at
	// claim (nil: coordinator/conditions on DB, ConditionsChecker).
	Conditions ConditionChecker
}

// DefaultRunConcurrency is how many work items a node's Run loops keep
// in flight in total (docs/orchestrator.md, "Worker model").
const DefaultRunConcurrency = 256

// Orchestrator drives transfers. It is safe for concurrent use; several
// Orchestrators (workers) may share one database.
type Orchestrator struct {
	db    *store.DB
	banks Banks
	clk   clock.Clock
	log   *slog.Logger
	flog  *finality.Log
	lanes *lane.Lanes
	h     *hlimit.H
	keys  *idem.Keys
	cases *cases.Cases
	parts *participants.Registry
	to    Timeouts
	bo    Backoff
	cfg   Config
	wake  *waker // shared by every Orchestrator on db (wake.go)
}

// ErrLeaseTooLong is New's refusal of a Config.Lease that is not shorter
// than every timeout acting on the same work item (docs/orchestrator.md,
// "Owners, restart and leases").
var ErrLeaseTooLong = errors.New("orchestrator: the work item lease must be shorter than the timeouts it races")

// New returns an Orchestrator.
func New(cfg Config) (*Orchestrator, error) {
	if cfg.DB == nil {
		return nil, errors.New("orchestrator: Config.DB is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.FinalityLog == nil {
		cfg.FinalityLog = finality.New(cfg.Clock)
	}
	if cfg.Conditions == nil {
		cfg.Conditions = ConditionsChecker(conditions.NewEvaluator(cfg.DB, cfg.Clock, nil))
	}
	if cfg.Timeouts.Exec <= 0 {
		cfg.Timeouts.Exec = params.DefaultExecTimeout
	}
	if cfg.Timeouts.PayeeProof <= 0 {
		cfg.Timeouts.PayeeProof = params.DefaultPayeeProofTimeout
	}
	if cfg.Timeouts.Suspended <= 0 {
		cfg.Timeouts.Suspended = params.DefaultSuspendedTimeout
	}
	if cfg.Timeouts.AdapterDownAfter <= 0 {
		cfg.Timeouts.AdapterDownAfter = int(params.DefaultAdapterDownAfter)
	}
	if cfg.Backoff.Base <= 0 {
		cfg.Backoff.Base = time.Second
	}
	if cfg.Backoff.Max <= 0 {
		cfg.Backoff.Max = 5 * time.Minute
	}
	if cfg.WorkerID == "" {
		cfg.WorkerID = "worker-1"
	}
	shortest := min(cfg.Timeouts.Exec, cfg.Timeouts.PayeeProof, cfg.Timeouts.Suspended)
	if cfg.Lease <= 0 {
		cfg.Lease = min(params.DefaultLease, shortest/2)
	}
	if cfg.Lease >= shortest {
		return nil, fmt.Errorf("%w: Config.Lease %s, Timeouts.Exec %s, PayeeProof %s, Suspended %s",
			ErrLeaseTooLong, cfg.Lease, cfg.Timeouts.Exec, cfg.Timeouts.PayeeProof, cfg.Timeouts.Suspended)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 32
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	o := &Orchestrator{db: cfg.DB, banks: cfg.Banks, clk: cfg.Clock, log: cfg.Logger.With("component", "orchestrator"),
		flog: cfg.FinalityLog, to: cfg.Timeouts, bo: cfg.Backoff, cfg: cfg}
	o.wake = wakerFor(cfg.DB)
	o.lanes = lane.New(cfg.DB, cfg.FinalityLog, sysmode.Gate{}, cfg.Clock, cfg.Logger)
	o.h = hlimit.New(cfg.Clock, cfg.Logger)
	o.keys = idem.New(cfg.Clock, cfg.Logger)
	o.cases = cases.New(cfg.Clock, cfg.Logger, 0)
	o.parts = participants.New(cfg.DB, cfg.Clock)
	return o, nil
}

// Participants is the participant administration on the same database and
// clock (create/update participants, limits, windows, hv_threshold).
func (o *Orchestrator) Participants() *participants.Registry { return o.parts }

// DB is the coordinator database.
func (o *Orchestrator) DB() *store.DB { return o.db }

// Party is the payer or payee of a PaymentInitiated (001 §13.1).
type Party struct {
	BankID      string `json:"bank_id"`
	AccountHash string `json:"account_hash,omitempty"`
	VaultRef    string `json:"vault_ref,omitempty"`
}

// RiskHint is PaymentInitiated.risk_hint.
type RiskHint struct {
	VaultRef string `json:"vault_ref,omitempty"`
}

// PaymentInitiated is the body of POST /api/transfers (spec 001 §13.1).
// TxID may be empty: Submit then assigns "TX-<uuid>" (returned in
// SubmitResult, and the same on every replay of the key). A given txid
// and every other identifier must match its coordinator/ident kind
// (CheckIdentifiers).
type PaymentInitiated struct {
	TxID           string         `json:"txid,omitempty"`
	Lane           string         `json:"lane"`
	Amount         bankapi.Amount `json:"amount"`
	Payer          Party          `json:"payer"`
	Payee          Party          `json:"payee"`
	Purpose        string         `json:"purpose,omitempty"`
	PSPRRef        string         `json:"pspr_ref,omitempty"`
	ParticipantRef string         `json:"participant_ref,omitempty"`
	RefIssuer      string         `json:"ref_issuer,omitempty"`
	RefProof       string         `json:"ref_proof,omitempty"`
	RequestedAt    string         `json:"requested_at,omitempty"`
	ExpiresAt      string         `json:"expires_at,omitempty"`
	ClientRef      string         `json:"client_ref,omitempty"`
	RiskHint       *RiskHint      `json:"risk_hint,omitempty"`
	// MandateID names the mandate the transfer is sent under (spec 003
	// Transactions.mandate_id; "MANDATE-..."): the precheck refuses the
	// transfer when the mandate's chain does not allow it (mandate.go).
	MandateID string `json:"mandate_id,omitempty"`
	// EdiRef is the transfer's remittance information (送金内容; spec 003
	// Transactions.edi_ref): free text up to bankapi.MaxEDILength
	// characters, e.g. the 全銀 EDI情報 of a file-drop record. It travels to
	// the payee bank on execute-credit, where EDI_PATTERN filters read it.
	EdiRef string `json:"edi_ref,omitempty"`
	// SchemaVersion is stored in Transactions.schema_version ("" = "1.0");
	// the gateway checks n/n-1 before calling Submit.
	SchemaVersion string `json:"schema_version,omitempty"`
}

// SubmitResult is Submit's answer. Its JSON is stored with the
// idempotency key, so a replay returns byte-identical JSON (Replayed is
// not part of it).
type SubmitResult struct {
	TxID string `json:"txid"`
	// Lane is the effective lane (HIGH_VALUE after automatic escalation);
	// RequestedLane is what the body asked for.
	Lane          string `json:"lane"`
	RequestedLane string `json:"requested_lane"`
	State         string `json:"state"` // RECEIVED
	AcceptedAt    string `json:"accepted_at"`
	// Replayed is true when the key was already done and this is the
	// stored answer (the gateway may set an Idempotent-Replayed header).
	Replayed bool `json:"-"`
}

// Submit accepts a PaymentInitiated from issuerBankID (the authenticated
// participant; it must be the payer bank) under idempotencyKey, in one
// write transaction: the writable gate, validation, participant limits,
// the Transactions row (RECEIVED, PaymentInitiated on its chain), the
// daily total, the work item, and the stored response.
//
// Idempotency: the same key and the same body return the same
// SubmitResult (Replayed true) and never a second Transactions row; the
// same key with a different body is IDEMPOTENCY_KEY_CONFLICT (409); a key
// whose first request is still in flight is IDEMPOTENCY_REPLAY.
//
// Errors (all *domainerr.Error): SYSTEM_QUORUM_LOSS_READ_ONLY /
// SYSTEM_BCP_READ_ONLY (read-only mode, checked first); MISSING_FIELD,
// INVALID_REQUEST, INVALID_LANE, USE_HTLC_ENDPOINT (lane HTLC),
// INVALID_AMOUNT (<= 0 or > MAX_AMOUNT_VALUE), INVALID_CURRENCY (not JPY);
// UNAUTHORIZED (issuer is not the payer bank); PARTICIPANT_NOT_FOUND
// (payer or payee unknown or inactive); PARTICIPATION_MODE_RECEIVE_ONLY
// (payer may only receive) / INVALID_REQUEST (payee is SEND_ONLY);
// AMOUNT_EXCEEDS_TX_LIMIT; DAILY_LIMIT_EXCEEDED.
func (o *Orchestrator) Submit(ctx context.Context, req PaymentInitiated, idempotencyKey, issuerBankID string) (SubmitResult, error) {
	return o.submit(ctx, req, idempotencyKey, issuerBankID)
}

// Decision is View.decision (001 §13.6).
type Decision struct {
	Status           string `json:"status"` // NONE|DECIDED_TO_SETTLE|DECIDED_CANCEL
	DecisionProofRef string `json:"decision_proof_ref,omitempty"`
}

// Execution is View.execution (001 §13.6): a is the payer's debit, b the
// payee's credit. The proof refs are the bank_proof_ref JSON objects.
type Execution struct {
	A                 string `json:"a"` // NONE|OK|NG
	B                 string `json:"b"` // NONE|OK|NG
	PayerBankProofRef string `json:"payer_bank_proof_ref,omitempty"`
	PayeeBankProofRef string `json:"payee_bank_proof_ref,omitempty"`
}

// CaseRef is View.case.
type CaseRef struct {
	CaseID string `json:"case_id,omitempty"`
	Status string `json:"status,omitempty"`
}

// Chain is one hash chain carrying facts about the transaction, keyed
// "TX:<txid>" (or "GT:<gtid>", "DNS:<cycle>"), with its MAX(event_seq)
// (0 when it has no entry yet). watermark_detail.shards is built from it.
type Chain struct {
	Key    string `json:"key"`
	MaxSeq int64  `json:"max_seq"`
}

// View is everything the QueryResponse of spec 001 §13.6 needs, read
// from one snapshot of the coordinator database. The gateway computes
// freshness_level from ReadModelLag and renders watermark /
// watermark_detail from Watermark and Chains. Query reads only, so it
// works in every read-only mode.
type View struct {
	TxID                     string         `json:"txid"`
	Lane                     string         `json:"lane"`
	State                    string         `json:"state"`
	ReasonCode               string         `json:"reason_code,omitempty"`
	Amount                   bankapi.Amount `json:"amount"`
	PayerBankID              string         `json:"payer_bank_id"`
	PayeeBankID              string         `json:"payee_bank_id"`
	Owner                    string         `json:"owner"`
	Version                  int64          `json:"version"`
	Decision                 Decision       `json:"decision"`
	Execution                Execution      `json:"execution"`
	Case                     CaseRef        `json:"case"`
	ExternalSettlementStatus string         `json:"external_settlement_status"`
	CreatedAt                string         `json:"created_at"`
	UpdatedAt                string         `json:"updated_at"`
	// AsOf is when the snapshot was read (Clock).
	AsOf string `json:"as_of"`
	// ReadModelLag is how far the derived row lags the authoritative log
	// (001 §13.6): the TX chain's MAX(occurred_at) minus the Transactions
	// row's updated_at, 0 when the row has seen its newest entry.
	ReadModelLag time.Duration `json:"-"`
	// NextActionHint is the closed set WAIT | RETRY_LATER |
	// CONTACT_PAYER_BANK | OPEN_CASE.
	NextActionHint string `json:"next_action_hint"`
	// NextRetryAt is set when a retry of this transfer's work is scheduled.
	NextRetryAt string `json:"next_retry_at,omitempty"`
	// Watermark is the max of Chains' MaxSeq.
	Watermark int64   `json:"watermark"`
	Chains    []Chain `json:"chains"`
}

// Next action hints (001 §13.6, closed set of 4).
const (
	HintWait             = "WAIT"
	HintRetryLater       = "RETRY_LATER"
	HintContactPayerBank = "CONTACT_PAYER_BANK"
	HintOpenCase         = "OPEN_CASE"
)

// Query reads a transfer for the QueryResponse. An unknown txid is
// TX_NOT_FOUND. Authorization (who may see it) is the gateway's job:
// View carries PayerBankID and PayeeBankID for the party check.
func (o *Orchestrator) Query(ctx context.Context, txid string) (View, error) {
	return o.query(ctx, txid)
}

// RunOnce claims up to BatchSize due work items (guarded UPDATE, safe with
// several workers) and works them, Concurrency at a time, applying the
// queue retry policy to failures. It returns how many items it claimed and
// the first failure to record an outcome (work failures are outcomes, not
// errors).
func (o *Orchestrator) RunOnce(ctx context.Context) (int, error) {
	return o.runOnce(ctx)
}

// Run works the queue until ctx is done. It claims due items in batches
// (BatchSize per claim commit) and works up to Concurrency of them at the
// same time, so their steps share group commits; items of one transfer
// are worked one after another, never concurrently. When it has nothing
// to claim it sleeps, at ~0 CPU, until an in-process signal (an enqueue
// on this database: Submit, a sweep, a venue or refund step, a batch
// window), a completion of its own work, or the timer of the earliest
// item not yet due (retry backoff, a wait, an expired lease). idle bounds
// that sleep when the clock is not clock.System (default 50ms when
// idle <= 0): a manual clock's jumps signal nothing; on the system clock
// the bound is a 1s backstop, for writers in another process. It first
// takes back the items an earlier start of this node left claimed
// (TakeBackEarlierClaims). It returns ctx's error after its in-flight
// items are done.
func (o *Orchestrator) Run(ctx context.Context, idle time.Duration) error {
	return o.run(ctx, idle)
}

// SweepResult counts what one TimeoutSweep did.
type SweepResult struct {
	ExecTimeouts       int `json:"suspend_exec_timeout"`        // DECIDED_TO_SETTLE -> SUSPENDED
	PayeeProofTimeouts int `json:"suspend_payee_proof_timeout"` // PAYER_EXEC_CONFIRMED -> SUSPENDED
	FailedTimeouts     int `json:"failed_exec_timeout"`         // SUSPENDED -> FAILED_EXECUTION
	WindowResumed      int `json:"window_resumed"`              // COUNTERPARTY_WINDOW_CLOSED rows re-queued
	GtidTimeouts       int `json:"gtid_timeout"`                // GT_RECEIVED/GT_PRECHECKED past expires_at -> GT_DECIDED_CANCEL
	RtpExpired         int `json:"rtp_expired"`                 // RTP requests past expires_at -> EXPIRED

	// HTLC (docs/htlc.md)
	HtlcTimelockExpired int `json:"htlc_timelock_expired"` // HTLC_LOCKED/ONCHAIN_PENDING -> DECIDED_CANCEL, TIMELOCK_EXPIRED
	HtlcLeaseReclaimed  int `json:"htlc_lease_reclaimed"`  // of those, reclaimed from CHAIN:default first (handoff #4)
	HtlcReceivedExpired int `json:"htlc_received_expired"` // RECEIVED (lock never completed) -> DECIDED_CANCEL, TIMELOCK_EXPIRED
}

// TimeoutSweep is the internal timeout sweep (POST
// /internal/cron/timeout-sweep): it applies SUSPEND_EXEC_TIMEOUT,
// SUSPEND_PAYEE_PROOF_TIMEOUT and FAILED_EXEC_TIMEOUT to rows with
// owner='ZC' whose pending_since is older than the Timeouts, and requeues
// transfers parked with COUNTERPARTY_WINDOW_CLOSED whose payee window is
// open again. Each row moves through the lane primitives (CAS), so a row
// that advanced concurrently is skipped.
func (o *Orchestrator) TimeoutSweep(ctx context.Context) (SweepResult, error) {
	return o.sweep(ctx)
}
