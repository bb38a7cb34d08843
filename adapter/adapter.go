package adapter

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// Inquirer answers the adapter's read-only questions to the core (over the
// core link): the current ledger balance of an account, and whether a name
// is its holder's name (the core never reveals the stored name). Both
// travel the MQ transport; an error means "no answer now" (offline,
// timeout).
type Inquirer interface {
	Balance(ctx context.Context, coreAccount string) (CoreBalance, error)
	NameCheck(ctx context.Context, coreAccount, name string) (NameResult, error)
}

// CoreBalance is an account's ledger balance at the core and the
// currency (ISO 4217) the core keeps the account in, as the core reports
// them: the adapter never assumes an account is in yen.
type CoreBalance struct {
	Ledger   int64
	Currency string
}

// NameResult is the core's answer to a name check.
type NameResult string

// The name check answers.
const (
	NameMatch     NameResult = "MATCH"
	NameMismatch  NameResult = "MISMATCH"
	NameNoAccount NameResult = "NO_ACCOUNT"
)

// Window is a daily interval in JST minutes of day, [From, To). To < From
// wraps past midnight. The core runs its batch (and is offline) inside it.
type Window struct{ From, To int }

// Contains reports whether minute m of the JST day is inside the window.
func (w Window) Contains(m int) bool {
	if w.From <= w.To {
		return m >= w.From && m < w.To
	}
	return m >= w.From || m < w.To
}

// Config wires one bank's adapter.
type Config struct {
	BankID string // three-digit bank code, e.g. "001"
	// DBPath is the adapter's own SQLite file (never the core's).
	DBPath string
	// Core applies postings (the outbox's only way to the core).
	Core outbox.Core
	// Inquiry answers balance and name inquiries. nil: name-check always
	// defers and reconciliation by inquiry is unavailable.
	Inquiry Inquirer
	// Cases opens real Cases (coordinator/cases) for BLOCKED postings and
	// reconciliation drifts.
	Cases outbox.CaseOpener
	// Postings receives each posting's final status at the core (APPLIED
	// or BLOCKED); nil: nobody is told (outbox.PostingReporter).
	Postings outbox.PostingReporter
	// RealTime is false for a bank whose core cannot answer name checks
	// online; name-check then always returns DEFERRED.
	RealTime bool
	// BatchWindows are the core's daily batch windows (JST).
	BatchWindows []Window
	// Currency is the core's home currency (default JPY): the currency of
	// every account opened without one.
	Currency string
	// Currencies are further currencies the bank keeps accounts in
	// (foreign-currency deposits, 外貨預金). Each account has exactly one
	// currency (Account.Currency); a command whose amount is in another
	// currency than its account's is INVALID_CURRENCY.
	Currencies []string
	// CustodyAccount is the account_hash of the bank's custody (別段預金
	// SUSPENSE) account. When set, an execute-credit for an account the
	// bank does not hold is credited there and answered with
	// custody_detail (spec 004); when empty it is ACCOUNT_NOT_FOUND.
	CustodyAccount string
	// Resume tells ZC the payee side's decision on a credit an
	// incoming-transfer filter held (resume-credit). nil: decisions are
	// recorded, and respond answers BANK_ERROR until it is configured.
	Resume CreditResumer
	// Transfers submits and reads the transfers customers send through the
	// customer API (ZC's POST /api/transfers and GET /api/transactions
	// with this bank's own credentials). nil: /me/transfers answers
	// BANK_ERROR.
	Transfers TransferPort
	// Accounts performs the account lifecycle at the core (the teller
	// API's account creation and closing; lifecycle.go): the core link.
	// nil: those routes answer BANK_ERROR.
	Accounts AccountCore
	// InquiryTimeout bounds name inquiries made by name-check (default 2s).
	InquiryTimeout time.Duration
	// Identity is the process serving this adapter (coordinator/procid);
	// it owns the adapter's in-progress request records. A node passes its
	// own, so a restart takes back what its earlier start left in
	// progress. Zero: an ephemeral identity (its records wait for their
	// lease).
	Identity procid.Identity
	// RequestLease is how long an in-progress request record (name-check
	// asking the core) stays with its owner before another process or a
	// retry takes it over. It must be longer than InquiryTimeout and
	// shorter than idem.OrphanAge (ErrRequestLease). Default
	// DefaultRequestLease (10s).
	RequestLease time.Duration
	Clock        clock.Clock
	Logger       *slog.Logger
}

// Adapter is one bank's ingress in front of its legacy core. It is safe for
// concurrent use, and several Adapters (processes) may share its database.
type Adapter struct {
	bank     string
	db       *store.DB
	ob       *outbox.Outbox
	inq      Inquirer
	cases    outbox.CaseOpener
	realTime bool
	windows  []Window
	currency string
	accepted map[string]bool // currency and Currencies
	custody  string
	resume   CreditResumer
	xfers    TransferPort
	acctCore AccountCore
	keys     *idem.Keys
	inqWait  time.Duration
	id       procid.Identity
	owner    string // id.Owner of this adapter's request claims
	lease    time.Duration
	clk      clock.Clock
	log      *slog.Logger
	// bankAPI is the bank-side APIs' handler (BankAPI), built once.
	bankAPIOnce sync.Once
	bankAPI     http.Handler
}

// Open opens (creating if needed) the adapter database at cfg.DBPath with
// Schema and wires the outbox to cfg.Core.
func Open(ctx context.Context, cfg Config) (*Adapter, error) {
	if len(cfg.BankID) == 0 {
		return nil, errors.New("adapter: Config.BankID is required")
	}
	if cfg.DBPath == "" {
		return nil, errors.New("adapter: Config.DBPath is required")
	}
	db, err := OpenDB(ctx, cfg.DBPath)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", cfg.BankID, err)
	}
	a, err := New(db, cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	return a, nil
}

// New wires an Adapter on an already opened database (opened by OpenDB).
func New(db *store.DB, cfg Config) (*Adapter, error) {
	a := &Adapter{bank: cfg.BankID, db: db, inq: cfg.Inquiry, cases: cfg.Cases, realTime: cfg.RealTime,
		windows: cfg.BatchWindows, currency: cfg.Currency, custody: cfg.CustodyAccount, resume: cfg.Resume, xfers: cfg.Transfers, acctCore: cfg.Accounts, inqWait: cfg.InquiryTimeout,
		clk: cfg.Clock, log: cfg.Logger}
	if a.clk == nil {
		a.clk = clock.System{}
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("bank_id", cfg.BankID)
	if a.currency == "" {
		a.currency = "JPY"
	}
	a.accepted = map[string]bool{a.currency: true}
	for _, c := range cfg.Currencies {
		a.accepted[c] = true
	}
	a.keys = idem.New(a.clk, a.log)
	if a.inqWait <= 0 {
		a.inqWait = 2 * time.Second
	}
	a.id, a.lease = cfg.Identity, cfg.RequestLease
	if a.id.Node == "" {
		a.id = procid.Ephemeral("adapter", a.clk)
	}
	a.owner = a.id.Owner("adapter-" + cfg.BankID)
	if a.lease <= 0 {
		a.lease = DefaultRequestLease
	}
	if a.lease <= a.inqWait || a.lease >= idem.OrphanAge {
		return nil, fmt.Errorf("%w: RequestLease %s, InquiryTimeout %s, idem.OrphanAge %s", ErrRequestLease, a.lease, a.inqWait, idem.OrphanAge)
	}
	ob, err := outbox.New(outbox.Config{DB: db, Core: cfg.Core, Cases: cfg.Cases, Postings: cfg.Postings, Clock: a.clk,
		Logger: cfg.Logger, Actor: "BANK_" + cfg.BankID})
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", cfg.BankID, err)
	}
	a.ob = ob
	return a, nil
}

// BankID is the bank this adapter serves.
func (a *Adapter) BankID() string { return a.bank }

// DB is the adapter's own database.
func (a *Adapter) DB() *store.DB { return a.db }

// Outbox is the adapter's outbox (drain, recovery, operator moves).
func (a *Adapter) Outbox() *outbox.Outbox { return a.ob }

// Close closes the database.
func (a *Adapter) Close() error { return a.db.Close() }

// inBatchWindow reports whether the core's batch window is open now.
func (a *Adapter) inBatchWindow() bool {
	m := clock.MinutesOfDay(a.clk.Now())
	for _, w := range a.windows {
		if w.Contains(m) {
			return true
		}
	}
	return false
}

func (a *Adapter) now() string { return clock.Stamp(a.clk.Now()) }

// PostingRefLength is the length of the posting references the adapter
// generates (they must fit the core message's reference field).
const PostingRefLength = 16

var refEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newRef returns a fresh posting reference: "P" and 15 base32 characters
// (75 random bits), unique across re-initialisations of the bank, so an
// inquiry by reference can never find an older posting.
func newRef() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return "P" + refEncoding.EncodeToString(b[:])[:PostingRefLength-1]
}
