package fx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Result values of the FX API (001 §17.2).
const (
	ResultLocked    = "FX_TRANSFER_LOCKED"
	ResultInitiated = "FX_TRANSFER_INITIATED"
	ResultClaimed   = "FX_TRANSFER_CLAIMED"
	ResultRefunded  = "FX_TRANSFER_REFUNDED"
)

// RefundReason says why a transfer was refunded (the refund's
// FinalityLog payload and its log line).
type RefundReason string

// The refund reasons.
const (
	RefundTimelock     RefundReason = "TIMELOCK_EXPIRED" // the claim window closed unclaimed
	RefundQuoteExpired RefundReason = "QUOTE_EXPIRED"    // a quote of the route expired or was withdrawn before the claim
	RefundLegLock      RefundReason = "LEG_LOCK_FAILED"  // a paying bank refused its leg's hold
	RefundRequested    RefundReason = "REQUESTED"        // POST .../refund after the window closed
)

// payerLeg and payeeLeg are the GtidLegs ids of currency leg i: the
// paying side and the receiving side.
func payerLeg(gtid string, i int) string { return LegTxID(gtid, i) + "-P" }
func payeeLeg(gtid string, i int) string { return LegTxID(gtid, i) + "-R" }

// CreateResult is the 201 body of POST /api/fx/transfers.
type CreateResult struct {
	Result        string `json:"result"`
	GTID          string `json:"gtid"`
	Hashlock      string `json:"hashlock"`
	Secret        string `json:"secret,omitempty"` // once, when ZC drew it
	AmountFrom    int64  `json:"amount_from"`
	AmountTo      int64  `json:"amount_to"`
	EffectiveRate int64  `json:"effective_rate"`
	ExpiresAt     string `json:"expires_at"`
	Legs          []Leg  `json:"legs"`
	Route         Route  `json:"route"`
}

// Create is POST /api/fx/transfers: authoritative repricing, the conduit
// GTID with its legs, H per leg and currency, the leg locks (bind_htlc)
// in one write transaction; then each paying bank's hold (reserve-funds,
// the bank-side leg lock) and each receiving account's check
// (leg-ready-check PAYEE). A refused hold refunds everything and answers
// RESERVE_FAILED. Without bind_htlc the GTID is decided at once and its
// legs settle through the banks (FX_TRANSFER_INITIATED).
//
// The same gtid and body again replays the first answer (without the
// secret); another body under the gtid is IDEMPOTENCY_KEY_CONFLICT.
func (f *FX) Create(ctx context.Context, req TransferRequest) (CreateResult, error) {
	if err := req.check(); err != nil {
		return CreateResult{}, err
	}
	if f.banks == nil {
		return CreateResult{}, errors.New("fx: no Banks port configured")
	}
	key, err := idem.GtKey(req.GTID, "FxTransferRequested", req.Payer.BankID)
	if err != nil {
		return CreateResult{}, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return CreateResult{}, fmt.Errorf("fx: encode request: %w", err)
	}
	var secret string
	if req.BindHTLC && req.Hashlock == "" {
		if secret, req.Hashlock, err = NewSecret(); err != nil {
			return CreateResult{}, err
		}
	}
	if !req.BindHTLC && req.Hashlock == "" {
		_, req.Hashlock, err = NewSecret() // the conduit's hashlock column; never used
		if err != nil {
			return CreateResult{}, err
		}
	}
	var res CreateResult
	raw, replayed, err := f.keys.Once(ctx, f.db, key, body, func(tx *store.Tx) ([]byte, error) {
		var err error
		res, err = f.lockTx(ctx, tx, req)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	})
	if err != nil {
		return CreateResult{}, err
	}
	if replayed {
		if err := json.Unmarshal(raw, &res); err != nil {
			return CreateResult{}, fmt.Errorf("fx: stored answer of %s: %w", req.GTID, err)
		}
		return res, f.resume(ctx, req)
	}
	f.log.InfoContext(ctx, "fx.transfer_locked", "gtid", req.GTID, "bind_htlc", req.BindHTLC, "amount_from", res.AmountFrom,
		"amount_to", res.AmountTo, "effective_rate", res.EffectiveRate, "quote_ids", strings.Join(res.Route.QuoteIDs(), ","))
	if err := f.lockAtBanks(ctx, req.GTID, res.Legs); err != nil {
		return CreateResult{}, err
	}
	if !req.BindHTLC {
		if _, err := f.decide(ctx, req.GTID, TransferInitiated, TransferInitiated); err != nil {
			return CreateResult{}, err
		}
	}
	res.Secret = secret
	return res, nil
}

// resume finishes what a first Create of the transfer may have left
// undone (the process stopped between the lock's commit and the banks'
// answers): every bank-side leg lock is asked again under its own
// request id (a bank replays what it answered) and a default-path
// transfer is decided. A transfer past its lock is left as it is.
func (f *FX) resume(ctx context.Context, req TransferRequest) error {
	t, err := f.Get(ctx, req.GTID)
	if err != nil {
		return err
	}
	if t.GtidState != lane.GtReceived || (t.Status != TransferLocked && t.Status != TransferInitiated) {
		return nil
	}
	if err := f.lockAtBanks(ctx, req.GTID, t.LegsOrLocks()); err != nil {
		return err
	}
	if t.Status == TransferInitiated {
		_, err = f.decide(ctx, req.GTID, TransferInitiated, TransferInitiated)
	}
	return err
}

// lockTx writes the transfer inside tx (see Create).
func (f *FX) lockTx(ctx context.Context, tx *store.Tx, req TransferRequest) (CreateResult, error) {
	now := f.now()
	rt, err := findBestRoute(ctx, tx, now, QuoteRequest{FromCurrency: req.FromCurrency, ToCurrency: req.ToCurrency,
		Amount: req.Amount, Denomination: req.Denomination, MaxBridgeHops: req.MaxBridgeHops})
	if err != nil {
		return CreateResult{}, err
	}
	if req.MinEffectiveRate > 0 && rt.EffectiveRate < req.MinEffectiveRate {
		return CreateResult{}, domainerr.New("FX_RATE_MISMATCH", "the repriced effective_rate is worse than min_effective_rate",
			map[string]any{"effective_rate": rt.EffectiveRate, "min_effective_rate": req.MinEffectiveRate})
	}
	legs, err := buildLegs(req, rt)
	if err != nil {
		return CreateResult{}, err
	}
	exp, err := expiry(req, rt, now)
	if err != nil {
		return CreateResult{}, err
	}
	setTimelocks(legs, exp)
	status, result := TransferInitiated, ResultInitiated
	if req.BindHTLC {
		status, result = TransferLocked, ResultLocked
	}
	stamp := clock.Stamp(now)
	ok, err := store.Insert(ctx, tx, "FxTransfers", []string{"gtid", "from_currency", "to_currency", "amount_from", "amount_to",
		"effective_rate", "hashlock", "route_json", "quote_ids", "status", "created_at", "updated_at"},
		req.GTID, req.FromCurrency, req.ToCurrency, rt.AmountFrom, rt.AmountTo, rt.EffectiveRate, req.Hashlock,
		mustJSON(rt), quoteIDsColumn(rt), string(status), stamp, stamp)
	if err != nil {
		return CreateResult{}, fmt.Errorf("fx: insert transfer: %w", err)
	}
	if !ok {
		return CreateResult{}, domainerr.New("STATE_GUARD", "an FX transfer with this gtid exists", map[string]any{"gtid": req.GTID})
	}
	ng := lane.NewGtid{GTID: req.GTID, InitiatorBankID: req.Payer.BankID, TotalAmount: rt.AmountFrom, ExpiresAt: clock.Stamp(exp),
		Payload: map[string]any{"fx": map[string]any{"from_currency": req.FromCurrency, "to_currency": req.ToCurrency,
			"amount_from": rt.AmountFrom, "amount_to": rt.AmountTo, "effective_rate": rt.EffectiveRate, "hashlock": req.Hashlock,
			"quote_ids": rt.QuoteIDs(), "bind_htlc": req.BindHTLC}}}
	for _, l := range legs {
		ng.Legs = append(ng.Legs,
			lane.NewLeg{LegID: payerLeg(req.GTID, l.Index), Role: lane.LegPayer, BankID: l.FromBankID, AccountHash: l.FromAccount,
				AmountValue: l.Amount, Currency: l.Currency, ExpiresAt: l.Timelock},
			lane.NewLeg{LegID: payeeLeg(req.GTID, l.Index), Role: lane.LegPayee, BankID: l.ToBankID, AccountHash: l.ToAccount,
				AmountValue: l.Amount, Currency: l.Currency, ExpiresAt: l.Timelock, OriginLegID: payerLeg(req.GTID, l.Index)})
	}
	gr, err := f.lanes.InsertGtidInTx(ctx, tx, ng)
	if err != nil {
		return CreateResult{}, err
	}
	if !gr.Inserted {
		return CreateResult{}, domainerr.New("STATE_GUARD", "a GTID with this id exists", map[string]any{"gtid": req.GTID})
	}
	for i := range legs {
		l := &legs[i]
		// ZC's side of the leg lock: the paying bank's H in the leg's
		// currency (JPY: Participants; others: ParticipantCurrencyLimits).
		// Over the limit is H_LIMIT_EXCEEDED and nothing is written.
		if _, err := f.h.ReserveH(ctx, tx, hlimit.ReserveRequest{ReservationID: HReservationID(req.GTID, l.Index), TxID: l.TxID,
			BankID: l.FromBankID, Currency: l.Currency, Amount: l.Amount, Mode: hlimit.ModeLocked}); err != nil {
			return CreateResult{}, err
		}
		if req.BindHTLC {
			l.State = LockLocked
			if _, err := tx.ExecContext(ctx, `INSERT INTO FxLegLocks (gtid, leg_index, currency, amount, from_bank_id,
				from_account_hash, to_bank_id, to_account_hash, hashlock, timelock, state, created_at, updated_at, version)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`, req.GTID, l.Index, l.Currency, l.Amount, l.FromBankID,
				l.FromAccount, l.ToBankID, l.ToAccount, req.Hashlock, l.Timelock, string(LockLocked), stamp, stamp); err != nil {
				return CreateResult{}, fmt.Errorf("fx: insert leg lock %d: %w", l.Index, err)
			}
		}
	}
	return CreateResult{Result: result, GTID: req.GTID, Hashlock: req.Hashlock, AmountFrom: rt.AmountFrom, AmountTo: rt.AmountTo,
		EffectiveRate: rt.EffectiveRate, ExpiresAt: clock.Stamp(exp), Legs: legs, Route: rt}, nil
}

// legProof is what a PAYER leg's bank_proof_ref holds: the paying bank's
// hold on the leg's amount.
type legProof struct {
	ReservationRef string `json:"reservation_ref"`
	BankID         string `json:"bank_id"`
	TxID           string `json:"txid"`
}

// lockAtBanks places each leg's hold at its paying bank (reserve-funds
// under the leg's txid) and checks each receiving account (leg-ready-check
// PAYEE), moving the GtidLegs to LEG_READY. The first refusal (or a bank
// not reached) refunds the whole transfer: RESERVE_FAILED / the error.
func (f *FX) lockAtBanks(ctx context.Context, gtid string, legs []Leg) error {
	for _, l := range legs {
		var rr bankapi.ReserveFundsResponse
		err := f.banks.Call(ctx, l.FromBankID, &bankapi.ReserveFundsRequest{RequestIDValue: requestID(l.TxID, bankapi.ReserveFunds),
			TxID: l.TxID, Amount: bankapi.Amount{Value: l.Amount, Currency: l.Currency}, AccountHash: l.FromAccount}, &rr)
		if err == nil && (rr.Result != bankapi.ResultReserved || rr.ReservationRef == "") {
			err = domainerr.New("RESERVE_FAILED", "the paying bank refused the leg's hold",
				map[string]any{"gtid": gtid, "leg_index": l.Index, "bank_id": l.FromBankID, "reason_code": rr.ReasonCode})
		}
		if err == nil {
			proof := mustJSON(legProof{ReservationRef: rr.ReservationRef, BankID: l.FromBankID, TxID: l.TxID})
			_, err = f.lanes.TransitionLeg(ctx, lane.LegTransition{LegID: payerLeg(gtid, l.Index), GTID: gtid,
				From: lane.LegPending, To: lane.LegReady, BankProofRef: proof})
		}
		if err == nil {
			var cr bankapi.CheckResponse
			err = f.banks.Call(ctx, l.ToBankID, &bankapi.LegReadyCheckRequest{RequestIDValue: requestID(l.TxID, bankapi.LegReadyCheck),
				GTID: gtid, LegID: payeeLeg(gtid, l.Index), Role: bankapi.RolePayee,
				Amount: bankapi.Amount{Value: l.Amount, Currency: l.Currency}, AccountHash: l.ToAccount}, &cr)
			if err == nil && cr.Result != bankapi.ResultOK {
				err = domainerr.New("ACCOUNT_NOT_FOUND", "the receiving bank refused the leg's account",
					map[string]any{"gtid": gtid, "leg_index": l.Index, "bank_id": l.ToBankID, "reason_code": cr.ReasonCode})
			}
		}
		if err == nil {
			_, err = f.lanes.TransitionLeg(ctx, lane.LegTransition{LegID: payeeLeg(gtid, l.Index), GTID: gtid,
				From: lane.LegPending, To: lane.LegReady})
		}
		if err != nil {
			f.log.WarnContext(ctx, "fx.leg_lock_failed", "gtid", gtid, "leg_index", l.Index, "error", err.Error())
			if _, rerr := f.refund(ctx, gtid, RefundLegLock, true); rerr != nil {
				return errors.Join(err, rerr)
			}
			return err
		}
	}
	return nil
}

func requestID(txid string, cmd bankapi.Command) string {
	k, err := idem.TxKey(txid, string(cmd), "ZC")
	if err != nil {
		return "TX:" + txid + ":" + string(cmd) + ":ZC"
	}
	return k
}

// ClaimResult is the 200 body of POST /api/fx/transfers/{gtid}/claim.
type ClaimResult struct {
	Result    string         `json:"result"`
	GTID      string         `json:"gtid"`
	Status    TransferStatus `json:"status"`
	GtidState lane.GtidState `json:"gtid_state"`
	Already   bool           `json:"already"`
}

// Claim presents the secret of a bind_htlc transfer. SHA-256(secret) must
// be the hashlock (PREIMAGE_MISMATCH); the transfer must be LOCKED with
// every leg held at its bank (STATE_GUARD), not refunded
// (FX_ALREADY_REFUNDED), inside its claim window (FX_CLAIM_WINDOW_EXPIRED)
// and every quote of its route still live (FX_QUOTE_EXPIRED). Then, in
// one write transaction, every leg lock moves LOCKED -> CLAIMED, the
// transfer LOCKED -> SETTLING, the GTID is decided and each currency leg
// is materialised and handed to the orchestrator: the legs settle
// through the banks' adapters. A claim of a transfer already claimed
// answers already = true.
func (f *FX) Claim(ctx context.Context, gtid, secret string) (ClaimResult, error) {
	t, err := f.Get(ctx, gtid)
	if err != nil {
		return ClaimResult{}, err
	}
	if secret == "" || Hashlock(secret) != t.Hashlock {
		return ClaimResult{}, domainerr.New("PREIMAGE_MISMATCH", "SHA-256 of the secret is not the transfer's hashlock", map[string]any{"gtid": gtid})
	}
	if len(t.LegLocks) == 0 {
		return ClaimResult{}, domainerr.New("STATE_GUARD", "the transfer has no leg locks (not bind_htlc)", map[string]any{"gtid": gtid})
	}
	return f.decide(ctx, gtid, TransferLocked, TransferSettling)
}

// decide is the decision of a conduit GTID (see Claim): from LOCKED
// (claim) to SETTLING, or INITIATED (default path) staying INITIATED.
func (f *FX) decide(ctx context.Context, gtid string, from, to TransferStatus) (ClaimResult, error) {
	var out ClaimResult
	var txids []string
	err := f.db.Write(ctx, func(tx *store.Tx) error {
		txids = nil
		t, err := getTransferTx(ctx, tx, gtid)
		if err != nil {
			return err
		}
		out = ClaimResult{Result: ResultClaimed, GTID: gtid, Status: t.Status, GtidState: t.GtidState}
		switch t.Status {
		case TransferRefunded:
			return domainerr.New("FX_ALREADY_REFUNDED", "the transfer was refunded", map[string]any{"gtid": gtid})
		case TransferSettling, TransferSettled:
			out.Already = true
			return nil
		}
		if t.Status != from || (from == TransferInitiated && t.GtidState != lane.GtReceived) {
			if from == TransferInitiated {
				out.Already = true
				return nil
			}
			return domainerr.New("STATE_GUARD", "the transfer is not "+string(from), map[string]any{"gtid": gtid, "status": string(t.Status)})
		}
		now := f.now()
		deadline, err := claimDeadline(t.LegsOrLocks())
		if err != nil {
			return err
		}
		if !now.Before(deadline) {
			return domainerr.New("FX_CLAIM_WINDOW_EXPIRED", "too little time is left before the upstream timelock to settle",
				map[string]any{"gtid": gtid, "claim_deadline": clock.Stamp(deadline)})
		}
		if err := quotesLive(ctx, tx, now, t.QuoteIDs); err != nil {
			return err
		}
		for _, g := range t.Legs {
			if g.State != lane.LegReady {
				return domainerr.New("STATE_GUARD", "a leg is not held at its bank yet", map[string]any{"gtid": gtid, "leg_id": g.LegID, "state": string(g.State)})
			}
		}
		if to != from {
			if err := moveTransfer(ctx, tx, gtid, from, to, now); err != nil {
				return err
			}
			for _, l := range t.LegLocks {
				if err := moveLock(ctx, tx, gtid, l.Index, LockLocked, LockClaimed, now); err != nil {
					return err
				}
			}
		}
		payload := map[string]any{"decision": "SETTLE", "hashlock": t.Hashlock, "quote_ids": t.QuoteIDs}
		for _, st := range [][2]lane.GtidState{{lane.GtReceived, lane.GtPrechecked}, {lane.GtPrechecked, lane.GtDecidedToSettle}} {
			ev := finality.GtidPrechecked
			if st[1] == lane.GtDecidedToSettle {
				ev = finality.GtidDecided
			}
			r, err := f.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: gtid, From: st[0], To: st[1], EventType: ev, Payload: payload})
			if err != nil {
				return err
			}
			if !r.Applied {
				return domainerr.New("CONCURRENCY_CONFLICT", "the GTID moved concurrently", map[string]any{"gtid": gtid, "state": string(r.PreviousState)})
			}
		}
		for _, l := range t.LegsOrLocks() {
			var proof legProof
			for _, g := range t.Legs {
				if g.LegID == payerLeg(gtid, l.Index) {
					_ = json.Unmarshal([]byte(g.BankProofRef), &proof)
				}
			}
			if _, err := f.lanes.MaterialiseLegTxInTx(ctx, tx, lane.LegTx{GTID: gtid,
				LegIDs: []string{payerLeg(gtid, l.Index), payeeLeg(gtid, l.Index)},
				Tx: lane.NewTx{TxID: l.TxID, AmountValue: l.Amount, Currency: l.Currency, PayerBankID: l.FromBankID,
					PayerAccountHash: l.FromAccount, PayeeBankID: l.ToBankID, PayeeAccountHash: l.ToAccount,
					IdempotencyKey: requestID(l.TxID, "FxLegDecided"), ExpiresAt: l.Timelock,
					ExtraColumns: map[string]any{"decision_proof_ref": "DP-" + gtid},
					Payload:      map[string]any{"fx_leg_index": l.Index, "h_reservation_id": HReservationID(gtid, l.Index)}}}); err != nil {
				return err
			}
			if f.accept != nil {
				if err := f.accept.AcceptDecidedLegInTx(ctx, tx, l.TxID, l.FromBankID, proof.ReservationRef); err != nil {
					return err
				}
			}
			txids = append(txids, l.TxID)
		}
		out.Status, out.GtidState = to, lane.GtDecidedToSettle
		return nil
	})
	if err != nil {
		return ClaimResult{}, err
	}
	if !out.Already {
		f.log.InfoContext(ctx, "fx.transfer_decided", "gtid", gtid, "status", string(out.Status), "leg_txids", strings.Join(txids, ","))
	}
	return out, nil
}

// quotesLive refuses a route whose quote expired or was withdrawn.
func quotesLive(ctx context.Context, tx *store.Tx, now time.Time, ids []string) error {
	for _, id := range ids {
		q, err := getQuote(ctx, tx, id)
		if err != nil {
			return err
		}
		vt, err := clock.ParseStamp(q.ValidTo)
		if err != nil {
			return fmt.Errorf("fx: quote %s valid_to: %w", id, err)
		}
		if q.Status != QuoteActive || !now.Before(vt) {
			return domainerr.New("FX_QUOTE_EXPIRED", "a quote of the route expired or was withdrawn",
				map[string]any{"quote_id": id, "status": string(q.Status), "valid_to": q.ValidTo})
		}
	}
	return nil
}

// moveTransfer is the guarded update of FxTransfers.status, checked
// against TransferTransitions; a transfer that moved meanwhile is
// CONCURRENCY_CONFLICT (the caller's transaction rolls back).
func moveTransfer(ctx context.Context, tx *store.Tx, gtid string, from, to TransferStatus, now time.Time) error {
	if !CanTransfer(from, to) {
		return domainerr.New("IMPOSSIBLE_TRANSITION", "FX transfer transition not in TransferTransitions",
			map[string]any{"gtid": gtid, "from": string(from), "to": string(to)})
	}
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE FxTransfers SET status = ?, updated_at = ? WHERE gtid = ? AND status = ?`,
		string(to), clock.Stamp(now), gtid, string(from)))
	if err != nil {
		return fmt.Errorf("fx: %s %s->%s: %w", gtid, from, to, err)
	}
	if !ok {
		return domainerr.New("CONCURRENCY_CONFLICT", "the transfer moved concurrently", map[string]any{"gtid": gtid})
	}
	return nil
}

// moveLock is the guarded update of one leg lock.
func moveLock(ctx context.Context, tx *store.Tx, gtid string, index int, from, to LockState, now time.Time) error {
	if !CanLock(from, to) {
		return domainerr.New("IMPOSSIBLE_TRANSITION", "leg lock transition not in LockTransitions",
			map[string]any{"gtid": gtid, "leg_index": index, "from": string(from), "to": string(to)})
	}
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE FxLegLocks SET state = ?, version = version + 1, updated_at = ?
		WHERE gtid = ? AND leg_index = ? AND state = ?`, string(to), clock.Stamp(now), gtid, index, string(from)))
	if err != nil {
		return fmt.Errorf("fx: leg lock %s/%d %s->%s: %w", gtid, index, from, to, err)
	}
	if !ok {
		return domainerr.New("CONCURRENCY_CONFLICT", "leg lock moved concurrently", map[string]any{"gtid": gtid, "leg_index": index})
	}
	return nil
}

// RefundResult is the 200 body of POST /api/fx/transfers/{gtid}/refund.
type RefundResult struct {
	Result       string         `json:"result"`
	GTID         string         `json:"gtid"`
	Status       TransferStatus `json:"status"`
	RefundedLegs []int          `json:"refunded_legs"`
}

// Refund refunds a LOCKED transfer that can no longer be claimed: its
// claim window closed, or a quote of its route expired or was withdrawn.
// Before that it is STATE_GUARD (the payer may still claim), and so is a
// claimed transfer.
func (f *FX) Refund(ctx context.Context, gtid string) (RefundResult, error) {
	return f.refund(ctx, gtid, RefundRequested, false)
}

// refund moves the transfer to REFUNDED in one write transaction: leg
// locks LOCKED -> REFUNDED, H released, GtidLegs cancelled, the GTID
// GT_DECIDED_CANCEL -> GT_CANCELLED, and each paying bank's hold handed
// to the orchestrator's RELEASE work item (release-reserve, retried until
// the bank answers). force skips the claimability check (a leg lock that
// failed at a bank).
func (f *FX) refund(ctx context.Context, gtid string, reason RefundReason, force bool) (RefundResult, error) {
	var out RefundResult
	var legTx []string
	err := f.db.Write(ctx, func(tx *store.Tx) error {
		legTx = nil
		t, err := getTransferTx(ctx, tx, gtid)
		if err != nil {
			return err
		}
		out = RefundResult{Result: ResultRefunded, GTID: gtid, Status: t.Status, RefundedLegs: []int{}}
		if t.Status == TransferRefunded {
			return nil
		}
		// LOCKED, or INITIATED and not decided yet (its legs were never
		// all held): anything else has been decided.
		if t.Status != TransferLocked && !(t.Status == TransferInitiated && t.GtidState == lane.GtReceived) {
			return domainerr.New("STATE_GUARD", "only a transfer not yet claimed or decided can be refunded", map[string]any{"gtid": gtid, "status": string(t.Status)})
		}
		now := f.now()
		if !force {
			deadline, err := claimDeadline(t.LegsOrLocks())
			if err != nil {
				return err
			}
			if now.Before(deadline) {
				if qerr := quotesLive(ctx, tx, now, t.QuoteIDs); qerr == nil {
					return domainerr.New("STATE_GUARD", "the transfer can still be claimed until its claim deadline",
						map[string]any{"gtid": gtid, "claim_deadline": clock.Stamp(deadline)})
				} else if de, ok := domainerr.As(qerr); !ok || de.Code != "FX_QUOTE_EXPIRED" {
					return qerr
				}
				reason = RefundQuoteExpired
			} else if reason == RefundRequested {
				reason = RefundTimelock
			}
		}
		if err := moveTransfer(ctx, tx, gtid, t.Status, TransferRefunded, now); err != nil {
			return err
		}
		for _, l := range t.LegLocks {
			if err := moveLock(ctx, tx, gtid, l.Index, LockLocked, LockRefunded, now); err != nil {
				return err
			}
			out.RefundedLegs = append(out.RefundedLegs, l.Index)
		}
		for _, l := range t.LegsOrLocks() {
			if _, err := f.h.ReleaseForTx(ctx, tx, l.TxID); err != nil {
				return err
			}
			legTx = append(legTx, l.TxID)
		}
		for _, g := range t.Legs {
			if g.State != lane.LegPending && g.State != lane.LegReady && g.State != lane.LegNotReady {
				return domainerr.New("INVARIANT_VIOLATION", "a refunded GTID leg is past its decision", map[string]any{"gtid": gtid, "leg_id": g.LegID})
			}
			if g.Role == lane.LegPayer && g.BankProofRef != "" {
				var p legProof
				if err := json.Unmarshal([]byte(g.BankProofRef), &p); err != nil {
					return fmt.Errorf("fx: hold of leg %s: %w", g.LegID, err)
				}
				if p.ReservationRef != "" {
					if f.accept == nil {
						return errors.New("fx: no LegAcceptor configured to release the legs' holds")
					}
					if err := f.accept.ReleaseHoldInTx(ctx, tx, orchestrator.LaneGtid, p.TxID, p.ReservationRef); err != nil {
						return err
					}
				}
			}
			if _, err := f.lanes.TransitionLegInTx(ctx, tx, lane.LegTransition{LegID: g.LegID, GTID: gtid, From: g.State, To: lane.LegCancelled}); err != nil {
				return err
			}
		}
		payload := map[string]any{"reason": string(reason), "refunded_legs": out.RefundedLegs}
		for _, st := range [][2]lane.GtidState{{lane.GtReceived, lane.GtDecidedCancel}, {lane.GtDecidedCancel, lane.GtCancelled}} {
			ev := finality.GtidDecidedCancel
			if st[1] == lane.GtCancelled {
				ev = finality.GtidCancelled
			}
			r, err := f.lanes.TransitionGtidInTx(ctx, tx, lane.GtidTransition{GTID: gtid, From: st[0], To: st[1], EventType: ev, Payload: payload})
			if err != nil {
				return err
			}
			if !r.Applied {
				return domainerr.New("CONCURRENCY_CONFLICT", "the GTID moved concurrently", map[string]any{"gtid": gtid, "state": string(r.PreviousState)})
			}
		}
		out.Status = TransferRefunded
		return nil
	})
	if err != nil {
		return RefundResult{}, err
	}
	if len(legTx) == 0 {
		return out, nil // refunded before: nothing more to do
	}
	f.log.InfoContext(ctx, "fx.transfer_refunded", "gtid", gtid, "reason", string(reason), "leg_txids", strings.Join(legTx, ","))
	return out, nil
}

// NotFound is GTID_NOT_FOUND for an unknown FX transfer.
func NotFound(gtid string) error {
	return domainerr.New("GTID_NOT_FOUND", "no FX transfer with this gtid", map[string]any{"gtid": gtid})
}
