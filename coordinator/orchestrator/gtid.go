package orchestrator

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/mandate"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// The GTID multi-leg lane (spec 000 ch. 4, 003 GtidTransactions and
// GtidLegs, 004 leg-ready-check; docs/gtid-rtp.md).
const (
	// LaneGtid is Transactions.lane of a GTID leg's transfer.
	LaneGtid = "GTID"
	// KindGtid is the work item that drives a GTID (OrchestratorQueue.txid
	// holds the gtid).
	KindGtid = "GTID"
	// DefaultGtidTimeout is how long a GTID may take to get every leg
	// ready when the request names no timeout_sec; MaxGtidTimeout bounds it.
	DefaultGtidTimeout = 60 * time.Second
	MaxGtidTimeout     = 24 * time.Hour
)

// gtidCurrencies are the currencies POST /api/gtid/register accepts
// (spec 004 INVALID_CURRENCY).
var gtidCurrencies = map[string]bool{"JPY": true, "USD": true, "EUR": true, "GBP": true, "CHF": true}

// GtidLegRequest is one leg of POST /api/gtid/register.
type GtidLegRequest struct {
	LegID       string         `json:"leg_id"`
	Role        string         `json:"role"` // PAYER|PAYEE
	BankID      string         `json:"bank_id"`
	AccountHash string         `json:"account_hash"`
	Amount      bankapi.Amount `json:"amount"`
}

// GtidRegister is the body of POST /api/gtid/register. GTID may be empty
// (RegisterGtid assigns "GT-<16 hex>"); a given one must lie in the
// issuer's namespace ("<bank_id>-...") like a client-chosen txid.
type GtidRegister struct {
	GTID       string           `json:"gtid,omitempty"`
	Legs       []GtidLegRequest `json:"legs"`
	TimeoutSec int64            `json:"timeout_sec,omitempty"`
	// MandateID (optional, 003 GtidTransactions.mandate_id) is the
	// mandate every PAYER leg is sent under: each leg is checked against
	// it at the GTID's precheck like a transfer citing it (spec 000
	// §11.2-e), and a leg it refuses cancels the whole GTID.
	MandateID string `json:"mandate_id,omitempty"`
}

// GtidRegisterResult is RegisterGtid's answer, stored with the
// idempotency key.
type GtidRegisterResult struct {
	GTID       string `json:"gtid"`
	State      string `json:"state"`
	LegCount   int    `json:"leg_count"`
	ExpiresAt  string `json:"expires_at"`
	AcceptedAt string `json:"accepted_at"`
	Replayed   bool   `json:"-"`
}

// legPair is a PAYER leg and the PAYEE leg it pays: spec 000's pairing
// rule (payer and payee legs each sorted by leg_id, paired by index).
type legPair struct{ payer, payee GtidLegRequest }

// pairLegs pairs the legs; a GTID whose legs do not pair one to one with
// equal amounts is AMOUNT_BALANCE_MISMATCH.
func pairLegs(legs []GtidLegRequest) ([]legPair, error) {
	var payers, payees []GtidLegRequest
	for _, g := range legs {
		if g.Role == bankapi.RolePayer {
			payers = append(payers, g)
		} else {
			payees = append(payees, g)
		}
	}
	byID := func(s []GtidLegRequest) { sort.Slice(s, func(i, j int) bool { return s[i].LegID < s[j].LegID }) }
	byID(payers)
	byID(payees)
	if len(payers) != len(payees) {
		return nil, domainerr.New("AMOUNT_BALANCE_MISMATCH", "every PAYER leg pays exactly one PAYEE leg (paired by leg_id order)",
			map[string]any{"payer_legs": len(payers), "payee_legs": len(payees)})
	}
	out := make([]legPair, len(payers))
	for i := range payers {
		if payers[i].Amount != payees[i].Amount {
			return nil, domainerr.New("AMOUNT_BALANCE_MISMATCH", "paired legs must carry the same amount and currency",
				map[string]any{"payer_leg_id": payers[i].LegID, "payee_leg_id": payees[i].LegID,
					"payer_amount": payers[i].Amount, "payee_amount": payees[i].Amount})
		}
		out[i] = legPair{payers[i], payees[i]}
	}
	return out, nil
}

// validateGtid checks a register request without reading anything.
func validateGtid(req GtidRegister, issuer string) error {
	if req.GTID != "" {
		if err := ident.Check(ident.TxID, "gtid", req.GTID); err != nil {
			return err
		}
		if !ident.InNamespace(req.GTID, issuer) {
			return invalidField("gtid", "a client-chosen gtid must start with the issuing bank's id and '-'", req.GTID)
		}
	}
	if req.MandateID != "" {
		if err := mandate.CheckID(req.MandateID); err != nil {
			return err
		}
	}
	if len(req.Legs) < 2 {
		return domainerr.New("MISSING_LEG_ROLE", "a GTID needs at least one PAYER and one PAYEE leg", map[string]any{"legs": len(req.Legs)})
	}
	if req.TimeoutSec < 0 || time.Duration(req.TimeoutSec)*time.Second > MaxGtidTimeout {
		return invalidField("timeout_sec", "must be between 1 and 86400 (0: the default 60)", req.TimeoutSec)
	}
	gtid := req.GTID
	if gtid == "" {
		gtid = "GT-0123456789abcdef" // the length RegisterGtid assigns
	}
	sums := map[string][2]int64{} // currency -> payer, payee
	roles := map[string]bool{}
	seen := map[string]bool{}
	for i, g := range req.Legs {
		f := fmt.Sprintf("legs[%d].", i)
		for name, v := range map[string]string{"leg_id": g.LegID, "role": g.Role, "bank_id": g.BankID, "account_hash": g.AccountHash} {
			if strings.TrimSpace(v) == "" {
				return missingField(f + name)
			}
		}
		if err := ident.Check(ident.TxID, f+"leg_id", g.LegID); err != nil {
			return err
		}
		if err := ident.Check(ident.TxID, f+"leg_id", bankapi.LegTxID(gtid, g.LegID)); err != nil {
			return invalidField(f+"leg_id", "gtid + '.' + leg_id names the leg's transfer and must fit a txid (32 bytes)", g.LegID)
		}
		if seen[g.LegID] {
			return invalidField(f+"leg_id", "leg_id repeated", g.LegID)
		}
		seen[g.LegID] = true
		if err := ident.Check(ident.BankID, f+"bank_id", g.BankID); err != nil {
			return err
		}
		if err := ident.Check(ident.AccountHash, f+"account_hash", g.AccountHash); err != nil {
			return err
		}
		if g.Role != bankapi.RolePayer && g.Role != bankapi.RolePayee {
			return invalidField(f+"role", "must be PAYER or PAYEE", g.Role)
		}
		roles[g.Role] = true
		if g.Amount.Value <= 0 || g.Amount.Value > bankapi.MaxAmountValue {
			return domainerr.New("INVALID_AMOUNT", "amount.value must be 1..1000000000000 minor units",
				map[string]any{"field": f + "amount.value", "value": g.Amount.Value})
		}
		if !gtidCurrencies[g.Amount.Currency] {
			return domainerr.New("INVALID_CURRENCY", "currency must be JPY, USD, EUR, GBP or CHF",
				map[string]any{"field": f + "amount.currency", "value": g.Amount.Currency})
		}
		s := sums[g.Amount.Currency]
		if g.Role == bankapi.RolePayer {
			s[0] += g.Amount.Value
		} else {
			s[1] += g.Amount.Value
		}
		sums[g.Amount.Currency] = s
	}
	if !roles[bankapi.RolePayer] || !roles[bankapi.RolePayee] {
		return domainerr.New("MISSING_LEG_ROLE", "a GTID needs at least one PAYER and one PAYEE leg", nil)
	}
	for cur, s := range sums {
		if s[0] != s[1] {
			return domainerr.New("AMOUNT_BALANCE_MISMATCH", "PAYER and PAYEE legs must balance per currency",
				map[string]any{"currency": cur, "payer_total": s[0], "payee_total": s[1]})
		}
	}
	_, err := pairLegs(req.Legs)
	return err
}

// RegisterGtid accepts a multi-leg transaction from issuerBankID (one of
// its legs' banks) under idempotencyKey, in one write transaction: the
// writable gate, validation, the participants, the GtidTransactions row
// with its GtidLegs (GT_RECEIVED, GtidRegistered on the GTID's chain,
// through lane.InsertGtidInTx), and the GTID work item that sends
// leg-ready-check to every leg's bank. Idempotency is registerOnce's.
func (o *Orchestrator) RegisterGtid(ctx context.Context, req GtidRegister, idempotencyKey, issuerBankID string) (GtidRegisterResult, error) {
	out, replayed, err := registerOnce(ctx, o, scopeGtid, issuerBankID, idempotencyKey, req, func(tx *store.Tx, _ []byte) (GtidRegisterResult, error) {
		return o.registerGtidTx(ctx, tx, req, issuerBankID)
	})
	out.Replayed = replayed
	return out, err
}

func (o *Orchestrator) registerGtidTx(ctx context.Context, tx *store.Tx, req GtidRegister, issuer string) (GtidRegisterResult, error) {
	if err := validateGtid(req, issuer); err != nil {
		return GtidRegisterResult{}, err
	}
	party := false
	for _, g := range req.Legs {
		p, err := participants.GetInTx(ctx, tx, g.BankID)
		if err != nil {
			return GtidRegisterResult{}, err
		}
		if !p.IsActive {
			return GtidRegisterResult{}, domainerr.New("PARTICIPANT_NOT_FOUND", "participant is not active", map[string]any{"bank_id": p.BankID})
		}
		if g.Role == bankapi.RolePayer && p.ParticipationMode == participants.ModeReceiveOnly {
			return GtidRegisterResult{}, domainerr.New("PARTICIPATION_MODE_RECEIVE_ONLY", "a PAYER leg's bank participates as RECEIVE_ONLY",
				map[string]any{"leg_id": g.LegID, "bank_id": p.BankID})
		}
		if g.Role == bankapi.RolePayee && p.ParticipationMode == participants.ModeSendOnly {
			return GtidRegisterResult{}, domainerr.New("INVALID_REQUEST", "a PAYEE leg's bank participates as SEND_ONLY and cannot receive",
				map[string]any{"leg_id": g.LegID, "bank_id": p.BankID})
		}
		party = party || g.BankID == issuer
	}
	if !party {
		return GtidRegisterResult{}, domainerr.New("UNAUTHORIZED", "a participant may only register a GTID it has a leg in",
			map[string]any{"issuer": issuer})
	}
	gtid := req.GTID
	if gtid == "" {
		gtid = "GT-" + strings.ReplaceAll(uuid.New(), "-", "")[:16]
	}
	timeout := DefaultGtidTimeout
	if req.TimeoutSec > 0 {
		timeout = time.Duration(req.TimeoutSec) * time.Second
	}
	now := o.clk.Now()
	expires := clock.Stamp(now.Add(timeout))
	n := lane.NewGtid{GTID: gtid, InitiatorBankID: issuer, ExpiresAt: expires, MandateID: req.MandateID,
		Payload: map[string]any{"initiator_bank_id": issuer, "leg_count": len(req.Legs), "expires_at": expires}}
	if req.MandateID != "" {
		n.Payload.(map[string]any)["mandate_id"] = req.MandateID
	}
	for _, g := range req.Legs {
		// GtidLegs.leg_id is unique across GTIDs: the registered leg_id
		// is normalised to "{gtid}.{leg_id}" (bankapi.LegTxID) and kept
		// in origin_leg_id (003).
		n.Legs = append(n.Legs, lane.NewLeg{LegID: bankapi.LegTxID(gtid, g.LegID), OriginLegID: g.LegID, Role: lane.LegRole(g.Role), BankID: g.BankID, AccountHash: g.AccountHash,
			AmountValue: g.Amount.Value, Currency: g.Amount.Currency, ExpiresAt: expires})
	}
	ins, err := o.lanes.InsertGtidInTx(ctx, tx, n)
	if err != nil {
		return GtidRegisterResult{}, err
	}
	if !ins.Inserted {
		return GtidRegisterResult{}, invalidField("gtid", "a GTID with this gtid already exists", gtid)
	}
	if err := o.enqueue(ctx, tx, KindGtid, gtid, LaneGtid, StatusReady, now); err != nil {
		return GtidRegisterResult{}, err
	}
	o.log.InfoContext(ctx, "orchestrator.gtid_registered", "gtid", gtid, "initiator_bank_id", issuer, "legs", len(req.Legs), "expires_at", expires)
	return GtidRegisterResult{GTID: gtid, State: string(lane.GtReceived), LegCount: len(req.Legs), ExpiresAt: expires,
		AcceptedAt: clock.Stamp(now)}, nil
}

// GtidLegView is one leg in a GtidView.
type GtidLegView struct {
	LegID       string         `json:"leg_id"`
	Role        string         `json:"role"`
	BankID      string         `json:"bank_id"`
	Amount      bankapi.Amount `json:"amount"`
	State       string         `json:"state"`
	TxID        string         `json:"txid,omitempty"`
	TxState     string         `json:"tx_state,omitempty"`
	ReadyResult string         `json:"ready_result,omitempty"` // the bank's leg-ready-check answer (OK|NG)
	ReadyReason string         `json:"ready_reason_code,omitempty"`
}

// GtidView is GET /api/gtid/{gtid}: the aggregate with its legs, the
// counts derived from the legs' real states (003: the stored counters are
// a dashboard snapshot and may drift), and the GTID chain's entries.
type GtidView struct {
	GTID             string        `json:"gtid"`
	State            string        `json:"state"`
	ReasonCode       string        `json:"reason_code,omitempty"`
	CaseID           string        `json:"case_id,omitempty"`
	InitiatorBankID  string        `json:"initiator_bank_id"`
	MandateID        string        `json:"mandate_id,omitempty"`
	TotalAmount      int64         `json:"total_amount"`
	LegCount         int           `json:"leg_count"`
	LegsReadyCount   int           `json:"legs_ready_count"`
	LegsSettledCount int           `json:"legs_settled_count"`
	ExpiresAt        string        `json:"expires_at,omitempty"`
	Version          int64         `json:"version"`
	CreatedAt        string        `json:"created_at"`
	UpdatedAt        string        `json:"updated_at"`
	Legs             []GtidLegView `json:"legs"`
	Chain            []ChainEntry  `json:"chain"`
}

// ChainEntry is one FinalityLog entry of a GTID or RTP chain.
type ChainEntry struct {
	EventSeq  int64  `json:"event_seq"`
	EventType string `json:"event_type"`
	StateFrom string `json:"state_from,omitempty"`
	StateTo   string `json:"state_to"`
}

// Gtid reads a GTID (GTID_NOT_FOUND when unknown). Authorization is the
// gateway's: every leg's bank is a party.
func (o *Orchestrator) Gtid(ctx context.Context, gtid string) (GtidView, error) {
	var v GtidView
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		g, legs, err := readGtidTx(ctx, tx, gtid)
		if err != nil {
			return err
		}
		v = GtidView{GTID: g.gtid, State: string(g.state), ReasonCode: g.reason, CaseID: g.caseID, InitiatorBankID: g.initiator, MandateID: g.mandateID, TotalAmount: g.total,
			LegCount: len(legs), ExpiresAt: g.expiresAt, Version: g.version, CreatedAt: g.createdAt, UpdatedAt: g.updatedAt}
		for _, l := range legs {
			lv := GtidLegView{LegID: originLegID(l), Role: string(l.Role), BankID: l.BankID, Amount: bankapi.Amount{Value: l.AmountValue, Currency: l.Currency},
				State: string(l.State), TxID: l.TxID}
			var ans legAnswer
			if l.BankProofRef != "" && json.Unmarshal([]byte(l.BankProofRef), &ans) == nil {
				lv.ReadyResult, lv.ReadyReason = ans.Result, ans.ReasonCode
			}
			if l.TxID != "" {
				if err := tx.QueryRowContext(ctx, "SELECT state FROM Transactions WHERE txid = ?", l.TxID).Scan(&lv.TxState); err != nil {
					return wrapDB("read leg transfer", err)
				}
			}
			switch l.State {
			case lane.LegReady, lane.LegDecided, lane.LegSettled:
				v.LegsReadyCount++
			}
			if l.State == lane.LegSettled {
				v.LegsSettledCount++
			}
			v.Legs = append(v.Legs, lv)
		}
		v.Chain, err = chainEntries(ctx, tx, gtid)
		return err
	})
	return v, err
}

// chainEntries lists an aggregate chain (gtid set, txid NULL) in order.
func chainEntries(ctx context.Context, tx *store.Tx, id string) ([]ChainEntry, error) {
	rows, err := tx.QueryContext(ctx, `SELECT event_seq, event_type, COALESCE(state_from, ''), state_to FROM FinalityLog
		WHERE gtid = ? AND txid IS NULL ORDER BY event_seq`, id)
	if err != nil {
		return nil, wrapDB("read chain", err)
	}
	defer rows.Close()
	var out []ChainEntry
	for rows.Next() {
		var e ChainEntry
		if err := rows.Scan(&e.EventSeq, &e.EventType, &e.StateFrom, &e.StateTo); err != nil {
			return nil, wrapDB("scan chain", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// gtidRow is the guarded part of a GtidTransactions row.
type gtidRow struct {
	gtid, initiator      string
	mandateID            string
	state                lane.GtidState
	reason, caseID       string // from the GTID chain's entry into state
	total, version       int64
	expiresAt            string
	createdAt, updatedAt string
}

// readGtidTx reads a GTID and its legs inside tx.
func readGtidTx(ctx context.Context, tx *store.Tx, gtid string) (gtidRow, []lane.Leg, error) {
	var g gtidRow
	var state string
	err := tx.QueryRowContext(ctx, `SELECT gtid, state, initiator_bank_id, total_amount, version, COALESCE(expires_at, ''), created_at, updated_at,
		COALESCE(mandate_id, '') FROM GtidTransactions WHERE gtid = ?`, gtid).Scan(&g.gtid, &state, &g.initiator, &g.total, &g.version, &g.expiresAt,
		&g.createdAt, &g.updatedAt, &g.mandateID)
	if errors.Is(err, sql.ErrNoRows) {
		return g, nil, GtidNotFound(gtid)
	}
	if err != nil {
		return g, nil, wrapDB("read gtid", err)
	}
	g.state = lane.GtidState(state)
	// The reason (and Case) of the state: the payload of the chain's
	// latest entry into it (a cancel, a suspension, a failure).
	p, err := lastGtidPayloadTx(ctx, tx, gtid, g.state)
	if err != nil {
		return g, nil, err
	}
	g.reason, g.caseID = p.ReasonCode, p.CaseID
	legs, err := lane.LegsInTx(ctx, tx, gtid)
	return g, legs, err
}

// originLegID is the leg_id the participant registered (GtidLegs stores
// "{gtid}.{leg_id}" with the registered one in origin_leg_id).
func originLegID(l lane.Leg) string {
	if l.OriginLegID != "" {
		return l.OriginLegID
	}
	return l.LegID
}

// GtidNotFound is the one body for an unknown gtid (and, at the gateway,
// for a GTID the reader is not a party to).
func GtidNotFound(gtid string) error {
	return domainerr.New("GTID_NOT_FOUND", "GTID not found", map[string]any{"gtid": gtid})
}
