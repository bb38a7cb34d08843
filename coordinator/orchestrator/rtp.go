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
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// Request to pay (spec 003 RtpRequests, 004 rtp-notify; docs/gtid-rtp.md).
const (
	// LaneRtp is Transactions.lane of the transfer a payer's acceptance
	// creates (it runs the EXPRESS path; above the HIGH_VALUE threshold
	// it escalates to HIGH_VALUE like any EXPRESS transfer).
	LaneRtp = "RTP"
	// KindRtp is the work item that delivers rtp-notify
	// (OrchestratorQueue.txid holds the rtp_id).
	KindRtp = "RTP"
)

// RtpState is RtpRequests.state.
type RtpState string

// The RTP states (003: CREATED|NOTIFIED|ACCEPTED|TX_CREATED|COMPLETED|
// DECLINED|EXPIRED|FAILED).
const (
	RtpCreated   RtpState = "CREATED"
	RtpNotified  RtpState = "NOTIFIED"
	RtpAccepted  RtpState = "ACCEPTED"
	RtpTxCreated RtpState = "TX_CREATED"
	RtpCompleted RtpState = "COMPLETED"
	RtpDeclined  RtpState = "DECLINED"
	RtpExpired   RtpState = "EXPIRED"
	RtpFailed    RtpState = "FAILED"
)

// AllowedRtpTransitions is the RTP state machine: every legal edge, each
// with the FinalityLog event that records it.
var AllowedRtpTransitions = map[RtpState]map[RtpState]finality.EventType{
	RtpCreated:   {RtpNotified: finality.RtpNotified, RtpExpired: finality.RtpExpired, RtpFailed: finality.RtpFailed},
	RtpNotified:  {RtpAccepted: finality.RtpAccepted, RtpDeclined: finality.RtpDeclined, RtpExpired: finality.RtpExpired},
	RtpAccepted:  {RtpTxCreated: finality.RtpTxCreated},
	RtpTxCreated: {RtpCompleted: finality.RtpCompleted, RtpFailed: finality.RtpFailed},
	RtpCompleted: nil,
	RtpDeclined:  nil,
	RtpExpired:   nil,
	RtpFailed:    nil,
}

// Terminal reports whether s has no outgoing edge.
func (s RtpState) Terminal() bool {
	next, ok := AllowedRtpTransitions[s]
	return ok && len(next) == 0
}

// RtpRequest is the body of POST /api/rtp/request, sent by the payee's
// bank. RtpID may be empty (RequestRtp assigns "RTP-<16 hex>").
type RtpRequest struct {
	RtpID            string         `json:"rtp_id,omitempty"`
	PayerBankID      string         `json:"payer_bank_id"`
	PayeeAccountHash string         `json:"payee_account_hash"`
	Amount           bankapi.Amount `json:"amount"`
	ExpiresAt        string         `json:"expires_at"`
	PayeeName        string         `json:"payee_name"`
	Description      string         `json:"description,omitempty"`
	EdiRef           string         `json:"edi_ref,omitempty"`
}

// RtpAccept is the body of POST /api/rtp/{rtp_id}/accept, sent by the
// payer's bank: the account the transfer debits.
type RtpAccept struct {
	PayerAccountHash string `json:"payer_account_hash"`
}

// RtpView is an RTP request with its chain (GET /api/rtp/{rtp_id}).
type RtpView struct {
	RtpID        string         `json:"rtp_id"`
	State        string         `json:"state"`
	ReasonCode   string         `json:"reason_code,omitempty"`
	PayeeBankID  string         `json:"payee_bank_id"`
	PayerBankID  string         `json:"payer_bank_id"`
	Amount       bankapi.Amount `json:"amount"`
	AttemptCount int            `json:"attempt_count"`
	MaxAttempts  int            `json:"max_attempts"`
	LinkedTxID   string         `json:"linked_txid,omitempty"`
	ExpiresAt    string         `json:"expires_at"`
	NotifiedAt   string         `json:"notified_at,omitempty"`
	ResponseType string         `json:"response_type,omitempty"` // ACCEPT|DECLINE
	RespondedAt  string         `json:"responded_at,omitempty"`
	PayeeName    string         `json:"payee_name,omitempty"`
	Description  string         `json:"description,omitempty"`
	CreatedAt    string         `json:"created_at"`
	UpdatedAt    string         `json:"updated_at"`
	Chain        []ChainEntry   `json:"chain"`
	Replayed     bool           `json:"-"`
}

// RtpNotFound is the one body for an unknown rtp_id (and, at the
// gateway, for a request the reader is not a party to).
func RtpNotFound(id string) error {
	return domainerr.New("RTP_NOT_FOUND", "RTP request not found", map[string]any{"rtp_id": id})
}

// rtpRow is an RtpRequests row as the lane reads it.
type rtpRow struct {
	id, payee, payer, payeeAcct, payeeName, desc, expires, linked string
	state                                                         RtpState
	amount                                                        int64
	attempts, max                                                 int
}

// readRtpTx reads a request (in a read or a write transaction: every
// move is a CAS on state, so nothing is locked).
func readRtpTx(ctx context.Context, tx *store.Tx, id string) (rtpRow, error) {
	var r rtpRow
	var state string
	err := tx.QueryRowContext(ctx, `SELECT rtp_id, payee_bank_id, payer_bank_id, COALESCE(payee_account_hash, ''), COALESCE(payee_name, ''),
		COALESCE(description, ''), expires_at, COALESCE(linked_txid, ''), state, amount_value, attempt_count, max_attempts
		FROM RtpRequests WHERE rtp_id = ?`, id).Scan(&r.id, &r.payee, &r.payer, &r.payeeAcct, &r.payeeName, &r.desc,
		&r.expires, &r.linked, &state, &r.amount, &r.attempts, &r.max)
	if errors.Is(err, sql.ErrNoRows) {
		return r, RtpNotFound(id)
	}
	if err != nil {
		return r, wrapDB("read rtp", err)
	}
	r.state = RtpState(state)
	return r, nil
}

// rtpMove is one guarded RTP transition.
type rtpMove struct {
	id       string
	from, to RtpState
	reason   string
	payload  map[string]any
	set      map[string]any // further RtpRequests columns (fixed names only)
}

// rtpColumns are the RtpRequests columns a move may set.
var rtpColumns = map[string]bool{"linked_txid": true, "notified_at": true, "payer_account_id": true, "response_type": true,
	"responded_at": true, "attempt_count": true}

// transitionRtpInTx moves an RTP request inside tx: the edge must be in
// AllowedRtpTransitions, the writable gate must pass, and the UPDATE is a
// CAS on state (the graph has no cycle, so a state seen twice is the same
// visit); only when it applied is the entry appended to the request's
// chain (gtid = rtp_id, txid NULL). A request no longer in from is not
// applied (false, nil).
func (o *Orchestrator) transitionRtpInTx(ctx context.Context, tx *store.Tx, m rtpMove) (bool, error) {
	ev, ok := AllowedRtpTransitions[m.from][m.to]
	if !ok {
		return false, domainerr.New("IMPOSSIBLE_TRANSITION", "transition not in the RTP state machine",
			map[string]any{"rtp_id": m.id, "from": string(m.from), "to": string(m.to)})
	}
	if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
		return false, err
	}
	now := clock.Stamp(o.clk.Now())
	q := "UPDATE RtpRequests SET state = ?, updated_at = ?"
	args := []any{string(m.to), now}
	names := make([]string, 0, len(m.set))
	for c := range m.set {
		if !rtpColumns[c] {
			return false, domainerr.New("INVALID_REQUEST", "unknown RtpRequests column", map[string]any{"column": c})
		}
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		q += ", " + c + " = ?"
		args = append(args, m.set[c])
	}
	q += " WHERE rtp_id = ? AND state = ?"
	args = append(args, m.id, string(m.from))
	applied, err := store.Applied(tx.ExecContext(ctx, q, args...))
	if err != nil || !applied {
		return false, wrapDB("rtp CAS", err)
	}
	p := map[string]any{}
	for k, v := range m.payload {
		p[k] = v
	}
	if m.reason != "" {
		p["reason_code"] = m.reason
	}
	if _, err := o.flog.Append(ctx, tx, finality.Event{GTID: m.id, Type: ev, StateFrom: string(m.from), StateTo: string(m.to), Payload: p}); err != nil {
		return false, err
	}
	o.log.InfoContext(ctx, "orchestrator.rtp_transition", "rtp_id", m.id, "from", string(m.from), "to", string(m.to), "reason_code", m.reason)
	return true, nil
}

// rtpParams are the parameters a new request to pay is created under,
// read from the parameter ledger inside the request's transaction
// (coordinator/params; one statement): PR-RTP-ATTEMPT-MAX becomes the
// row's max_attempts, PR-RTP-MAX-LIFETIME bounds its expires_at.
type rtpParams struct {
	maxAttempts int
	lifetime    time.Duration
}

func rtpParamsTx(ctx context.Context, tx *store.Tx) (rtpParams, error) {
	changed, err := params.ChangedTx(ctx, tx)
	if err != nil {
		return rtpParams{}, err
	}
	p := rtpParams{maxAttempts: int(params.DefaultRtpAttemptMax), lifetime: params.DefaultRtpMaxLifetime}
	if v, ok := changed[params.RtpAttemptMax]; ok {
		p.maxAttempts = int(v)
	}
	if v, ok := changed[params.RtpMaxLifetime]; ok {
		p.lifetime = time.Duration(v) * time.Second
	}
	return p, nil
}

func validateRtp(req RtpRequest, issuer string, now time.Time, lifetime time.Duration) error {
	if req.RtpID != "" {
		if err := ident.Check(ident.BankRef, "rtp_id", req.RtpID); err != nil {
			return err
		}
		if !strings.HasPrefix(req.RtpID, "RTP-"+issuer+"-") {
			return invalidField("rtp_id", "a client-chosen rtp_id must start with 'RTP-<issuing bank id>-'", req.RtpID)
		}
	}
	for _, f := range []struct{ name, v string }{{"payer_bank_id", req.PayerBankID}, {"payee_account_hash", req.PayeeAccountHash},
		{"expires_at", req.ExpiresAt}, {"payee_name", req.PayeeName}} {
		if strings.TrimSpace(f.v) == "" {
			return missingField(f.name)
		}
	}
	if err := ident.Check(ident.BankID, "payer_bank_id", req.PayerBankID); err != nil {
		return err
	}
	if err := ident.Check(ident.AccountHash, "payee_account_hash", req.PayeeAccountHash); err != nil {
		return err
	}
	if req.EdiRef != "" {
		if err := ident.Check(ident.ClientRef, "edi_ref", req.EdiRef); err != nil {
			return err
		}
	}
	if req.Amount.Value <= 0 || req.Amount.Value > bankapi.MaxAmountValue {
		return domainerr.New("INVALID_AMOUNT", "amount.value must be 1..1000000000000 minor units",
			map[string]any{"field": "amount.value", "value": req.Amount.Value})
	}
	if req.Amount.Currency != "JPY" {
		return domainerr.New("INVALID_CURRENCY", "a request to pay is in JPY (its transfer is a POST /api/transfers transfer)",
			map[string]any{"field": "amount.currency", "value": req.Amount.Currency})
	}
	exp, err := clock.ParseStamp(req.ExpiresAt)
	if err != nil {
		return invalidField("expires_at", "must be RFC3339", req.ExpiresAt)
	}
	if !exp.After(now) {
		return domainerr.New("EXPIRED", "expires_at is not in the future", map[string]any{"field": "expires_at", "value": req.ExpiresAt})
	}
	if exp.Sub(now) > lifetime {
		return domainerr.New("INVALID_REQUEST", "expires_at: at most "+lifetime.String()+" ahead ("+string(params.RtpMaxLifetime)+")",
			map[string]any{"field": "expires_at", "value": req.ExpiresAt, "parameter": string(params.RtpMaxLifetime),
				"max_lifetime_seconds": int64(lifetime / time.Second)})
	}
	return nil
}

// RequestRtp records a request to pay from issuerBankID (the payee's
// bank) under idempotencyKey, in one write transaction: the RtpRequests
// row (CREATED, RtpRequested on its chain) and the RTP work item that
// delivers rtp-notify to the payer's bank (up to max_attempts times).
func (o *Orchestrator) RequestRtp(ctx context.Context, req RtpRequest, idempotencyKey, issuerBankID string) (RtpView, error) {
	out, replayed, err := registerOnce(ctx, o, scopeRtp, issuerBankID, idempotencyKey, req, func(tx *store.Tx, _ []byte) (RtpView, error) {
		return o.requestRtpTx(ctx, tx, req, issuerBankID)
	})
	out.Replayed = replayed
	return out, err
}

// requestRtpTx records the request inside registerOnce's transaction.
func (o *Orchestrator) requestRtpTx(ctx context.Context, tx *store.Tx, req RtpRequest, issuerBankID string) (RtpView, error) {
	now := o.clk.Now()
	pr, err := rtpParamsTx(ctx, tx)
	if err != nil {
		return RtpView{}, err
	}
	if err := validateRtp(req, issuerBankID, now, pr.lifetime); err != nil {
		return RtpView{}, err
	}
	for _, id := range []string{issuerBankID, req.PayerBankID} {
		p, err := participants.GetInTx(ctx, tx, id)
		if err != nil {
			return RtpView{}, err
		}
		if !p.IsActive {
			return RtpView{}, domainerr.New("PARTICIPANT_NOT_FOUND", "participant is not active", map[string]any{"bank_id": id})
		}
	}
	id := req.RtpID
	if id == "" {
		id = "RTP-" + strings.ReplaceAll(uuid.New(), "-", "")[:16]
	}
	stamp := clock.Stamp(now)
	ok, err := store.Insert(ctx, tx, "RtpRequests", []string{"rtp_id", "payee_bank_id", "payer_bank_id", "amount_value", "state",
		"attempt_count", "max_attempts", "expires_at", "created_at", "updated_at", "payee_name", "description", "edi_ref", "payee_account_hash"},
		id, issuerBankID, req.PayerBankID, req.Amount.Value, string(RtpCreated), 0, pr.maxAttempts, req.ExpiresAt, stamp, stamp,
		req.PayeeName, nullStr(req.Description), nullStr(req.EdiRef), req.PayeeAccountHash)
	if err != nil {
		return RtpView{}, wrapDB("insert rtp", err)
	}
	if !ok {
		return RtpView{}, invalidField("rtp_id", "an RTP request with this rtp_id already exists", id)
	}
	if _, err := o.flog.Append(ctx, tx, finality.Event{GTID: id, Type: finality.RtpRequested, StateTo: string(RtpCreated),
		Payload: map[string]any{"payee_bank_id": issuerBankID, "payer_bank_id": req.PayerBankID, "amount": req.Amount,
			"expires_at": req.ExpiresAt, "max_attempts": pr.maxAttempts}}); err != nil {
		return RtpView{}, err
	}
	if err := o.enqueue(ctx, tx, KindRtp, id, LaneRtp, StatusReady, now); err != nil {
		return RtpView{}, err
	}
	o.log.InfoContext(ctx, "orchestrator.rtp_requested", "rtp_id", id, "payee_bank_id", issuerBankID, "payer_bank_id", req.PayerBankID,
		"amount", req.Amount.Value, "expires_at", req.ExpiresAt)
	return rtpViewTx(ctx, tx, id)
}

// driveRtp delivers rtp-notify (the KindRtp item): each delivery is one
// attempt, counted by a CAS on attempt_count before it is sent and sent
// under its own request_id (RTP:{rtp_id}:{attempt}:rtp-notify:ZC). A
// delivered notice moves CREATED -> NOTIFIED; a bank that cannot be
// reached is tried again until max_attempts, then FAILED
// (RTP_ATTEMPTS_EXHAUSTED); a bank that refuses it fails it at once. The
// next attempt waits in the work queue (not before) for the next
// PR-RTP-ATTEMPT-SCHEDULE time of the same JST day before expires_at
// (none left: FAILED now), or, with no schedule, for the queue's backoff.
func (o *Orchestrator) driveRtp(ctx context.Context, id string) error {
	var r rtpRow
	if err := o.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		r, err = readRtpTx(ctx, tx, id)
		return err
	}); err != nil {
		return err
	}
	if r.state != RtpCreated {
		return nil
	}
	now := o.clk.Now()
	if exp, err := clock.ParseStamp(r.expires); err == nil && !now.Before(exp) {
		return o.commit(ctx, func(tx *store.Tx) error {
			_, err := o.transitionRtpInTx(ctx, tx, rtpMove{id: id, from: RtpCreated, to: RtpExpired, reason: ReasonRtpTimeout,
				payload: map[string]any{"expires_at": r.expires}})
			return err
		})
	}
	n := r.attempts + 1
	if err := o.db.Write(ctx, func(tx *store.Tx) error {
		ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE RtpRequests SET attempt_count = ?, updated_at = ?
			WHERE rtp_id = ? AND state = ? AND attempt_count = ?`, n, clock.Stamp(now), id, string(RtpCreated), r.attempts))
		if err != nil {
			return wrapDB("count rtp attempt", err)
		}
		if !ok {
			return errConflict
		}
		return nil
	}); err != nil {
		if err == errConflict {
			return nil // someone else moved it; the item runs again if needed
		}
		return err
	}
	attempt, err := idem.RtpKey(id, fmt.Sprint(n), string(bankapi.RTPNotify), "ZC")
	if err != nil {
		return err
	}
	var resp bankapi.NotifyResponse
	sendErr := o.send(ctx, r.payer, id, &bankapi.RTPNotifyRequest{RequestIDValue: attempt, RTPID: id, PayeeBankID: r.payee,
		PayerBankID: r.payer, Amount: bankapi.Amount{Value: r.amount, Currency: "JPY"}, ExpiresAt: r.expires, PayeeName: r.payeeName,
		Description: r.desc}, &resp)
	o.log.InfoContext(ctx, "orchestrator.rtp_notify", "rtp_id", id, "attempt", n, "max_attempts", r.max, "reason_code", domainerr.Code(sendErr))
	switch {
	case sendErr == nil:
		return o.commit(ctx, func(tx *store.Tx) error {
			_, err := o.transitionRtpInTx(ctx, tx, rtpMove{id: id, from: RtpCreated, to: RtpNotified,
				set: map[string]any{"notified_at": clock.Stamp(o.clk.Now())}, payload: map[string]any{"attempt": n, "request_id": attempt}})
			if err != nil {
				return err
			}
			return o.finishClaimInTx(ctx, tx)
		})
	}
	failed := map[string]any{"attempts": n, "cause_reason_code": domainerr.Code(sendErr)}
	if domainerr.ShouldRetry(sendErr) && n < r.max {
		next, ok, err := o.rtpNextAttempt(ctx, r.expires)
		switch {
		case err != nil:
			return err
		case next.IsZero():
			return sendErr // no schedule: the queue retries with backoff
		case ok:
			o.log.InfoContext(ctx, "orchestrator.rtp_reattempt_scheduled", "rtp_id", id, "attempt", n+1, "not_before", clock.Stamp(next))
			return errWait{until: next, reason: domainerr.Code(sendErr)}
		}
		failed["schedule"] = "no " + string(params.RtpAttemptSchedule) + " time left before the JST day ends or expires_at"
	}
	return o.commit(ctx, func(tx *store.Tx) error {
		_, err := o.transitionRtpInTx(ctx, tx, rtpMove{id: id, from: RtpCreated, to: RtpFailed, reason: ReasonRtpNotifyFailed,
			payload: failed})
		if err != nil {
			return err
		}
		return o.finishClaimInTx(ctx, tx)
	})
}

// rtpNextAttempt is when the next rtp-notify attempt of a request expiring
// at expires may run under PR-RTP-ATTEMPT-SCHEDULE, read from the ledger
// now (a change applies to the next re-attempt of every request): the
// first listed JST time after now on today's JST date and before
// expires_at (ok). Zero time: no schedule (the queue's backoff); a
// schedule with no such time left is (non-zero, false): the request is
// to end today rather than be retried on another day.
func (o *Orchestrator) rtpNextAttempt(ctx context.Context, expires string) (next time.Time, ok bool, err error) {
	var sched int64
	if err := o.db.Read(ctx, func(tx *store.Tx) error {
		sched, err = params.GetTx(ctx, tx, params.RtpAttemptSchedule)
		return err
	}); err != nil {
		return time.Time{}, false, err
	}
	if sched == 0 {
		return time.Time{}, false, nil
	}
	now := o.clk.Now()
	next, ok = params.NextSlot(sched, now)
	if exp, perr := clock.ParseStamp(expires); ok && (perr != nil || !next.Before(exp)) {
		ok = false
	}
	if !ok {
		return now, false, nil
	}
	return next, true, nil
}

// AcceptRtp is the payer's acceptance (issuerBankID must be the request's
// payer bank), one write transaction: NOTIFIED -> ACCEPTED, the transfer
// accepted exactly as POST /api/transfers accepts one (limits, daily
// total, RECEIVED with PaymentInitiated, its DRIVE item) in lane RTP with
// client_ref = rtp_id, and ACCEPTED -> TX_CREATED with linked_txid. Any
// refusal of the transfer (DAILY_LIMIT_EXCEEDED, ...) rolls all of it
// back: the request stays NOTIFIED. Answering a request that is not
// NOTIFIED (accepted or declined already, expired) is INVALID_STATE with
// nothing written; the request as it is comes back with it.
func (o *Orchestrator) AcceptRtp(ctx context.Context, id string, req RtpAccept, issuerBankID string) (RtpView, error) {
	if strings.TrimSpace(req.PayerAccountHash) == "" {
		return RtpView{}, missingField("payer_account_hash")
	}
	if err := ident.Check(ident.AccountHash, "payer_account_hash", req.PayerAccountHash); err != nil {
		return RtpView{}, err
	}
	return o.respondRtp(ctx, id, issuerBankID, func(tx *store.Tx, r rtpRow) error {
		stamp := clock.Stamp(o.clk.Now())
		if _, err := o.transitionRtpInTx(ctx, tx, rtpMove{id: id, from: RtpNotified, to: RtpAccepted,
			set:     map[string]any{"response_type": "ACCEPT", "responded_at": stamp, "payer_account_id": req.PayerAccountHash},
			payload: map[string]any{"payer_account_hash": req.PayerAccountHash}}); err != nil {
			return err
		}
		pi := PaymentInitiated{Lane: LaneExpress, Amount: bankapi.Amount{Value: r.amount, Currency: "JPY"},
			Payer: Party{BankID: r.payer, AccountHash: req.PayerAccountHash}, Payee: Party{BankID: r.payee, AccountHash: r.payeeAcct},
			Purpose: "BILL", ClientRef: id}
		body, err := json.Marshal(pi)
		if err != nil {
			return err
		}
		// '#' is outside the client key charset (ident.Key): no POST
		// /api/transfers key can take the transfer's idempotency_key.
		res, err := o.acceptTx(ctx, tx, pi, "RTP#"+id+"#accept", issuerBankID, body, &submitEnv{lane: LaneRtp})
		if err != nil {
			return err
		}
		_, err = o.transitionRtpInTx(ctx, tx, rtpMove{id: id, from: RtpAccepted, to: RtpTxCreated,
			set: map[string]any{"linked_txid": res.TxID}, payload: map[string]any{"txid": res.TxID, "lane": res.Lane}})
		return err
	})
}

// DeclineRtp is the payer's refusal: NOTIFIED -> DECLINED (RTP_DECLINED).
func (o *Orchestrator) DeclineRtp(ctx context.Context, id, issuerBankID string) (RtpView, error) {
	return o.respondRtp(ctx, id, issuerBankID, func(tx *store.Tx, r rtpRow) error {
		_, err := o.transitionRtpInTx(ctx, tx, rtpMove{id: id, from: RtpNotified, to: RtpDeclined, reason: ReasonRtpDeclined,
			set: map[string]any{"response_type": "DECLINE", "responded_at": clock.Stamp(o.clk.Now())}})
		return err
	})
}

// respondRtp runs the payer's answer fn on a NOTIFIED request, in one
// write transaction. The issuer must be the payer bank (UNAUTHORIZED); a
// request past expires_at is EXPIRED (the sweep records EXPIRED); a
// request the payer already answered the same way answers as it is.
func (o *Orchestrator) respondRtp(ctx context.Context, id, issuer string, fn func(tx *store.Tx, r rtpRow) error) (RtpView, error) {
	var v RtpView
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err
		}
		r, err := readRtpTx(ctx, tx, id)
		if err != nil {
			return err
		}
		if r.payer != issuer {
			return domainerr.New("UNAUTHORIZED", "only the payer bank answers a request to pay", map[string]any{"rtp_id": id, "issuer": issuer})
		}
		if r.state != RtpNotified {
			v, err = rtpViewTx(ctx, tx, id)
			if err != nil {
				return err
			}
			v.Replayed = true
			return errRtpAnswered{state: r.state}
		}
		if exp, err := clock.ParseStamp(r.expires); err == nil && !o.clk.Now().Before(exp) {
			return domainerr.New("EXPIRED", "the request to pay has expired", map[string]any{"rtp_id": id, "expires_at": r.expires})
		}
		if err := fn(tx, r); err != nil {
			return err
		}
		v, err = rtpViewTx(ctx, tx, id)
		return err
	})
	var answered errRtpAnswered
	if errors.As(err, &answered) {
		return v, domainerr.New("INVALID_STATE", "the request to pay is not waiting for the payer's answer",
			map[string]any{"rtp_id": id, "state": string(answered.state)})
	}
	return v, err
}

type errRtpAnswered struct{ state RtpState }

func (e errRtpAnswered) Error() string { return "rtp already " + string(e.state) }

// Rtp reads a request to pay (RTP_NOT_FOUND when unknown).
func (o *Orchestrator) Rtp(ctx context.Context, id string) (v RtpView, err error) {
	err = o.db.Read(ctx, func(tx *store.Tx) error {
		v, err = rtpViewTx(ctx, tx, id)
		return err
	})
	return v, err
}

func rtpViewTx(ctx context.Context, tx *store.Tx, id string) (RtpView, error) {
	var v RtpView
	var linked, notified, rtype, responded, name, desc sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT rtp_id, state, payee_bank_id, payer_bank_id, amount_value, attempt_count, max_attempts,
		linked_txid, expires_at, notified_at, response_type, responded_at, payee_name, description, created_at, updated_at
		FROM RtpRequests WHERE rtp_id = ?`, id).Scan(&v.RtpID, &v.State, &v.PayeeBankID, &v.PayerBankID, &v.Amount.Value, &v.AttemptCount,
		&v.MaxAttempts, &linked, &v.ExpiresAt, &notified, &rtype, &responded, &name, &desc, &v.CreatedAt, &v.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return v, RtpNotFound(id)
	}
	if err != nil {
		return v, wrapDB("read rtp", err)
	}
	v.Amount.Currency = "JPY"
	v.LinkedTxID, v.NotifiedAt, v.ResponseType, v.RespondedAt = linked.String, notified.String, rtype.String, responded.String
	v.PayeeName, v.Description = name.String, desc.String
	if v.Chain, err = chainEntries(ctx, tx, id); err != nil {
		return v, err
	}
	if RtpState(v.State).Terminal() {
		var payload string
		if err := tx.QueryRowContext(ctx, `SELECT payload_json FROM FinalityLog WHERE gtid = ? AND txid IS NULL ORDER BY event_seq DESC LIMIT 1`,
			id).Scan(&payload); err == nil {
			var p struct {
				ReasonCode string `json:"reason_code"`
			}
			if json.Unmarshal([]byte(payload), &p) == nil {
				v.ReasonCode = p.ReasonCode
			}
		}
	}
	return v, nil
}

// rtpTransferSettledInTx runs in the commit that settles an RTP lane
// transfer: its request moves TX_CREATED -> COMPLETED.
func (o *Orchestrator) rtpTransferSettledInTx(ctx context.Context, tx *store.Tx, txid string) error {
	var id string
	err := tx.QueryRowContext(ctx, "SELECT rtp_id FROM RtpRequests WHERE linked_txid = ? AND state = ?", txid, string(RtpTxCreated)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return wrapDB("read rtp of "+txid, err)
	}
	_, err = o.transitionRtpInTx(ctx, tx, rtpMove{id: id, from: RtpTxCreated, to: RtpCompleted, payload: map[string]any{"txid": txid}})
	return err
}

// sweepRtp is the RTP part of the timeout sweep: requests still CREATED
// or NOTIFIED at expires_at expire (CANCEL_RTP_TIMEOUT), and requests
// whose linked transfer ended end with it (SETTLED -> COMPLETED, for a
// transfer that escalated out of lane RTP; CANCELLED or FAILED_EXECUTION
// -> FAILED with the transfer's reason). Each is a CAS. It returns how
// many expired.
func (o *Orchestrator) sweepRtp(ctx context.Context, now time.Time) (int, error) {
	type due struct {
		id, reason, txid string
		from, to         RtpState
	}
	var rows []due
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rs, err := tx.QueryContext(ctx, `SELECT rtp_id, state, '', '' FROM RtpRequests WHERE state IN (?, ?) AND expires_at <= ?
			UNION ALL SELECT r.rtp_id, r.state, t.state, COALESCE(t.reason_code, '') FROM RtpRequests r JOIN Transactions t ON t.txid = r.linked_txid
			WHERE r.state = ? AND t.state IN ('SETTLED', 'CANCELLED', 'FAILED_EXECUTION')`,
			string(RtpCreated), string(RtpNotified), clock.Stamp(now), string(RtpTxCreated))
		if err != nil {
			return wrapDB("rtp sweep select", err)
		}
		defer rs.Close()
		for rs.Next() {
			var d due
			var from, txState string
			if err := rs.Scan(&d.id, &from, &txState, &d.reason); err != nil {
				return wrapDB("rtp sweep scan", err)
			}
			d.from = RtpState(from)
			switch txState {
			case "":
				d.to, d.reason = RtpExpired, ReasonRtpTimeout
			case "SETTLED":
				d.to, d.reason = RtpCompleted, ""
			default:
				d.to, d.txid = RtpFailed, txState
			}
			rows = append(rows, d)
		}
		return rs.Err()
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range rows {
		applied := false
		payload := map[string]any{}
		if d.to == RtpExpired {
			payload["expired_at"] = clock.Stamp(now)
		}
		if d.to == RtpFailed {
			payload["transfer_state"] = d.txid
		}
		if err := o.commit(ctx, func(tx *store.Tx) error {
			var err error
			applied, err = o.transitionRtpInTx(ctx, tx, rtpMove{id: d.id, from: d.from, to: d.to, reason: d.reason, payload: payload})
			return err
		}); err != nil {
			return n, err
		}
		if applied && d.to == RtpExpired {
			n++
		}
	}
	return n, nil
}
