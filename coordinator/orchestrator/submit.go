package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/ident"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/mandate"
	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

// MaxAmountValue is MAX_AMOUNT_VALUE (spec 004): amounts above it are
// INVALID_AMOUNT at the input boundary.
const MaxAmountValue = bankapi.MaxAmountValue

func missingField(field string) error {
	return domainerr.New("MISSING_FIELD", field+" is required", map[string]any{"field": field})
}

func invalidField(field, msg string, v any) error {
	return domainerr.New("INVALID_REQUEST", field+": "+msg, map[string]any{"field": field, "value": v})
}

// validate checks a PaymentInitiated at the input boundary.
func validate(req PaymentInitiated) error {
	switch req.Lane {
	case "":
		return missingField("lane")
	case LaneExpress, LaneStandard, LaneHighValue, LaneBulk, LaneDeferred:
	case "HTLC":
		return domainerr.New("USE_HTLC_ENDPOINT", "lane HTLC is created through the HTLC endpoint", map[string]any{"field": "lane"})
	default:
		return domainerr.New("INVALID_LANE", "unknown or unsupported lane", map[string]any{"field": "lane", "value": req.Lane})
	}
	if req.Amount.Value <= 0 || req.Amount.Value > MaxAmountValue {
		return domainerr.New("INVALID_AMOUNT", fmt.Sprintf("amount.value must be in 1..%d (MAX_AMOUNT_VALUE)", int64(MaxAmountValue)),
			map[string]any{"field": "amount.value", "value": req.Amount.Value, "max": int64(MaxAmountValue)})
	}
	if req.Amount.Currency == "" {
		return missingField("amount.currency")
	}
	if req.Amount.Currency != "JPY" {
		return domainerr.New("INVALID_CURRENCY", "POST /api/transfers accepts JPY only", map[string]any{"field": "amount.currency", "value": req.Amount.Currency})
	}
	if err := CheckIdentifiers(req); err != nil {
		return err
	}
	if req.MandateID != "" {
		if err := mandate.CheckID(req.MandateID); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{{"payer.bank_id", req.Payer.BankID}, {"payer.account_hash", req.Payer.AccountHash},
		{"payee.bank_id", req.Payee.BankID}} {
		if strings.TrimSpace(f.v) == "" {
			return missingField(f.name)
		}
	}
	if strings.TrimSpace(req.Payee.AccountHash) == "" {
		// Spec 001 §13.1: an EXPRESS payee may be named by pspr_ref alone;
		// the payee bank resolves it before the decision (runChecks).
		if req.Lane != LaneExpress || strings.TrimSpace(req.PSPRRef) == "" {
			return domainerr.New("MISSING_FIELD", "payee.account_hash is required (an EXPRESS transfer may give pspr_ref instead)",
				map[string]any{"field": "payee.account_hash"})
		}
	}
	if req.Payer.BankID == req.Payee.BankID && req.Payer.AccountHash == req.Payee.AccountHash {
		return invalidField("payee.account_hash", "payer and payee are the same account", req.Payee.AccountHash)
	}
	for _, ts := range []struct{ name, v string }{{"expires_at", req.ExpiresAt}, {"requested_at", req.RequestedAt}} {
		if ts.v != "" {
			if _, err := clock.ParseStamp(ts.v); err != nil {
				return invalidField(ts.name, "must be RFC3339", ts.v)
			}
		}
	}
	return nil
}

// CheckIdentifiers checks every identifier of a PaymentInitiated against
// its kind in coordinator/ident (charset and length), naming the field of
// the first refusal (INVALID_REQUEST). Empty optional fields pass.
func CheckIdentifiers(req PaymentInitiated) error {
	fs := []ident.Field{{Name: "txid", Kind: ident.TxID, Value: req.TxID},
		{Name: "payer.bank_id", Kind: ident.BankID, Value: req.Payer.BankID},
		{Name: "payer.account_hash", Kind: ident.AccountHash, Value: req.Payer.AccountHash},
		{Name: "payer.vault_ref", Kind: ident.VaultRef, Value: req.Payer.VaultRef},
		{Name: "payee.bank_id", Kind: ident.BankID, Value: req.Payee.BankID},
		{Name: "payee.account_hash", Kind: ident.AccountHash, Value: req.Payee.AccountHash},
		{Name: "payee.vault_ref", Kind: ident.VaultRef, Value: req.Payee.VaultRef},
		{Name: "purpose", Kind: ident.Purpose, Value: req.Purpose},
		{Name: "pspr_ref", Kind: ident.PSPRRef, Value: req.PSPRRef},
		{Name: "participant_ref", Kind: ident.ParticipantRef, Value: req.ParticipantRef},
		{Name: "ref_issuer", Kind: ident.RefIssuer, Value: req.RefIssuer},
		{Name: "ref_proof", Kind: ident.RefProof, Value: req.RefProof},
		{Name: "client_ref", Kind: ident.ClientRef, Value: req.ClientRef}}
	if req.RiskHint != nil {
		fs = append(fs, ident.Field{Name: "risk_hint.vault_ref", Kind: ident.VaultRef, Value: req.RiskHint.VaultRef})
	}
	if err := ident.CheckAll(fs...); err != nil {
		return err
	}
	return bankapi.CheckEDI("edi_ref", req.EdiRef)
}

// ErrTxIDNotUsable is the one answer to a client-chosen txid outside the
// payer's namespace, and to a txid another pair's transfer already holds:
// the same status, code and body whether or not the txid exists, so a
// non-party learns nothing (docs/gateway.md "Identifiers").
func ErrTxIDNotUsable(issuer string) error {
	return domainerr.New("INVALID_REQUEST", "txid: a client-chosen txid must start with the payer's bank_id and '-' ("+issuer+
		"-...); omit txid to have the coordinator assign one", map[string]any{"field": "txid", "namespace": issuer + "-"})
}

// newTxID returns "TX-" and 24 hex digits (96 random bits): 27 characters.
func newTxID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "TX-" + hex.EncodeToString(b[:])
}

// idemKey is the IdempotencyKeys key of a PaymentInitiated: the client's
// key scoped to the authenticated participant, so two banks' keys never
// collide. Transactions.idempotency_key stores the same value.
func idemKey(issuer, key string) string { return onceKey(scopeTransfer, issuer, key) }

// EffectiveLane is the lane a transfer runs in: EXPRESS and STANDARD
// transfers strictly above threshold (the payer's hv_threshold, or else
// PR-HV-THRESHOLD as the parameter ledger holds it) escalate to HIGH_VALUE.
func EffectiveLane(requested string, amount, threshold int64) string {
	if (requested == LaneExpress || requested == LaneStandard) && amount > threshold {
		return LaneHighValue
	}
	return requested
}

func (o *Orchestrator) submit(ctx context.Context, req PaymentInitiated, key, issuer string) (SubmitResult, error) {
	// Read-only modes refuse new transfers before anything else
	// (registerOnce's writable gate).
	out, replayed, err := registerOnce(ctx, o, scopeTransfer, issuer, key, req, func(tx *store.Tx, body []byte) (SubmitResult, error) {
		accepted, err := o.acceptTx(ctx, tx, req, key, issuer, body, &submitEnv{})
		if err != nil {
			return accepted, err
		}
		o.log.InfoContext(ctx, "orchestrator.accepted", "txid", accepted.TxID, "lane", accepted.Lane, "requested_lane", req.Lane,
			"payer_bank_id", req.Payer.BankID, "payee_bank_id", req.Payee.BankID, "amount", req.Amount.Value)
		return accepted, nil
	})
	out.Replayed = replayed
	return out, err
}

// submitEnv is what accepting a transfer reads besides its request: the
// participants and the PR-HV-THRESHOLD parameter. A Submit reads them
// afresh; a bulk submission (SubmitBulk) reads each once per transaction.
type submitEnv struct {
	parts map[string]participants.Participant
	hv    *int64
	lane  string // the lane of a transfer another flow creates (LaneRtp); "" for Submit
}

func (e *submitEnv) participant(ctx context.Context, tx *store.Tx, bankID string) (participants.Participant, error) {
	if p, ok := e.parts[bankID]; ok {
		return p, nil
	}
	p, err := participants.GetInTx(ctx, tx, bankID)
	if err != nil {
		return p, err
	}
	if e.parts == nil {
		e.parts = map[string]participants.Participant{}
	}
	e.parts[bankID] = p
	return p, nil
}

func (e *submitEnv) hvThreshold(ctx context.Context, tx *store.Tx) (int64, error) {
	if e.hv != nil {
		return *e.hv, nil
	}
	v, err := params.GetTx(ctx, tx, params.HVThreshold)
	if err != nil {
		return 0, err
	}
	e.hv = &v
	return v, nil
}

// admission is what admitTx found: the payer and the lane the transfer
// runs in (hv is the threshold that decided it).
type admission struct {
	payer participants.Participant
	eff   string
	hv    int64
}

// admitTx runs Submit's checks that write nothing: validation, the
// issuer, both participants (active, participation mode), the payer's
// per-transfer limit and the HIGH_VALUE escalation.
func (o *Orchestrator) admitTx(ctx context.Context, tx *store.Tx, req PaymentInitiated, issuer string, env *submitEnv) (admission, error) {
	if err := validate(req); err != nil {
		return admission{}, err
	}
	if issuer != req.Payer.BankID {
		return admission{}, domainerr.New("UNAUTHORIZED", "a participant may only initiate transfers as the payer bank",
			map[string]any{"field": "payer.bank_id", "issuer": issuer})
	}
	payer, err := env.participant(ctx, tx, req.Payer.BankID)
	if err != nil {
		return admission{}, err
	}
	payee, err := env.participant(ctx, tx, req.Payee.BankID)
	if err != nil {
		return admission{}, err
	}
	for _, p := range []participants.Participant{payer, payee} {
		if !p.IsActive {
			return admission{}, domainerr.New("PARTICIPANT_NOT_FOUND", "participant is not active", map[string]any{"bank_id": p.BankID})
		}
	}
	if payer.ParticipationMode == participants.ModeReceiveOnly {
		return admission{}, domainerr.New("PARTICIPATION_MODE_RECEIVE_ONLY", "the payer bank participates as RECEIVE_ONLY",
			map[string]any{"bank_id": payer.BankID})
	}
	if payee.ParticipationMode == participants.ModeSendOnly {
		return admission{}, domainerr.New("INVALID_REQUEST", "the payee bank participates as SEND_ONLY and cannot receive",
			map[string]any{"field": "payee.bank_id", "bank_id": payee.BankID, "participation_mode": participants.ModeSendOnly})
	}
	if err := o.checkTxLimit(ctx, tx, payer, req.Amount.Value); err != nil {
		return admission{}, err
	}
	prHV, err := env.hvThreshold(ctx, tx)
	if err != nil {
		return admission{}, err
	}
	hv := payer.HVThresholdOr(prHV)
	eff := EffectiveLane(req.Lane, req.Amount.Value, hv)
	if eff != req.Lane && req.Payee.AccountHash == "" {
		return admission{}, domainerr.New("MISSING_FIELD", "payee.account_hash is required: the amount takes the transfer to "+eff+
			", which does not resolve pspr_ref", map[string]any{"field": "payee.account_hash", "lane": eff})
	}
	return admission{payer: payer, eff: eff, hv: hv}, nil
}

// newTx is the Transactions row and first FinalityLog entry of an
// admitted request: txid is the request's or a new one, businessDate the
// JST date its amount was counted in (hlimit.ConsumeDaily).
func newTx(req PaymentInitiated, key, issuer string, a admission, businessDate string) lane.NewTx {
	txid := req.TxID
	if txid == "" {
		txid = newTxID()
	}
	extra := map[string]any{"schema_version": orDefault(req.SchemaVersion, "1.0")}
	if req.Purpose != "" {
		extra["purpose"] = req.Purpose
	}
	if req.PSPRRef != "" {
		extra["pspr_ref"] = req.PSPRRef
	}
	if req.MandateID != "" {
		extra["mandate_id"] = req.MandateID
	}
	if req.EdiRef != "" {
		extra["edi_ref"] = req.EdiRef
	}
	payload := map[string]any{"request": req, "issuer_bank_id": issuer, "requested_lane": req.Lane, "lane": a.eff,
		hlimit.DailyDateKey: businessDate} // what a cancel gives back to
	if a.eff != req.Lane {
		payload["hv_escalation"] = map[string]any{"hv_threshold": a.hv, "parameter": string(params.HVThreshold)}
	}
	return lane.NewTx{TxID: txid, Lane: a.eff, AmountValue: req.Amount.Value, Currency: req.Amount.Currency,
		PayerBankID: req.Payer.BankID, PayerAccountHash: req.Payer.AccountHash, PayeeBankID: req.Payee.BankID,
		PayeeAccountHash: req.Payee.AccountHash, IdempotencyKey: idemKey(issuer, key), ExpiresAt: req.ExpiresAt,
		ExtraColumns: extra, Payload: payload}
}

// queueEntry is the work item a new transfer of lane eff starts with.
func queueEntry(eff string) (kind, status string) {
	if eff == LaneBulk || eff == LaneDeferred {
		return KindBatch, StatusWaiting
	}
	return KindDrive, StatusReady
}

// acceptTx is the work of one Submit inside tx, after the writable gate
// and the idempotency claim: admitTx, the daily limit, the Transactions
// row with its first FinalityLog entry, the progress row and the work
// item. body is the request as stored for the key.
func (o *Orchestrator) acceptTx(ctx context.Context, tx *store.Tx, req PaymentInitiated, key, issuer string, body []byte, env *submitEnv) (SubmitResult, error) {
	a, err := o.admitTx(ctx, tx, req, issuer, env)
	if err != nil {
		return SubmitResult{}, err
	}
	if env.lane != "" && a.eff == req.Lane { // a transfer another flow creates (RTP), unless escalated
		a.eff, req.Lane = env.lane, env.lane
	}
	daily, err := o.h.ConsumeDaily(ctx, tx, a.payer.BankID, req.Amount.Value)
	if err != nil {
		return SubmitResult{}, err
	}
	n := newTx(req, key, issuer, a, daily.BusinessDate)
	txid, eff := n.TxID, a.eff
	ins, err := o.lanes.InsertTxInTx(ctx, tx, n)
	if err != nil {
		return SubmitResult{}, err
	}
	if !ins.Inserted {
		// Only the payer of the existing transfer learns that it
		// exists; anyone else gets the answer the gateway gives to a
		// txid outside the issuer's namespace, before any lookup.
		var payerOfExisting string
		if err := tx.QueryRowContext(ctx, `SELECT payer_bank_id FROM Transactions WHERE txid = ?`, txid).Scan(&payerOfExisting); err != nil {
			return SubmitResult{}, wrapDB("read the existing txid", err)
		}
		if payerOfExisting != issuer {
			return SubmitResult{}, ErrTxIDNotUsable(issuer)
		}
		return SubmitResult{}, invalidField("txid", "a transaction with this txid already exists", txid)
	}
	now := o.clk.Now()
	stamp := clock.Stamp(now)
	if _, err := tx.ExecContext(ctx, `INSERT INTO OrchestratorTransfers (`+progressColumns+`)
		VALUES (?, ?, ?, ?, ?)`, txid, issuer, string(body), stamp, stamp); err != nil {
		return SubmitResult{}, wrapDB("insert progress", err)
	}
	kind, status := queueEntry(eff)
	if err := o.enqueue(ctx, tx, kind, txid, eff, status, now); err != nil {
		return SubmitResult{}, err
	}
	return SubmitResult{TxID: txid, Lane: eff, RequestedLane: req.Lane, State: string(lane.Received), AcceptedAt: stamp}, nil
}

// progressColumns are the OrchestratorTransfers columns a new transfer
// sets.
const progressColumns = "txid, issuer_bank_id, request_json, created_at, updated_at"

// checkTxLimit refuses an amount above the payer's tx_amount_limit
// (AMOUNT_EXCEEDS_TX_LIMIT).
func (o *Orchestrator) checkTxLimit(ctx context.Context, tx *store.Tx, payer participants.Participant, amount int64) error {
	if payer.TxAmountLimit != nil && amount > *payer.TxAmountLimit {
		return domainerr.New("AMOUNT_EXCEEDS_TX_LIMIT", "amount exceeds the payer bank's per-transfer limit",
			map[string]any{"field": "amount.value", "value": amount, "tx_amount_limit": *payer.TxAmountLimit})
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
