package orchestrator

import (
	"context"
	"encoding/json"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// HtlcCrossChainLock is the body of POST /api/htlc/{htlc_id}/cross-chain-lock:
// the on-chain escrow under the same hashlock was observed locked.
type HtlcCrossChainLock struct {
	OnchainLockRef string          `json:"onchain_lock_ref"`
	Proof          json.RawMessage `json:"proof,omitempty"` // SettlementProofRef of the CrossChainLocked observation
}

// HtlcOnchainFulfillment is the body of POST
// /api/htlc/{htlc_id}/onchain-fulfillment: the watcher saw the on-chain
// escrow released with the preimage.
type HtlcOnchainFulfillment struct {
	Preimage      string          `json:"preimage"` // hex; checked, never stored
	ExternalRef   string          `json:"external_ref"`
	Confirmations int             `json:"confirmations"`
	Proof         json.RawMessage `json:"proof,omitempty"`
	// Watcher signs the observation (WatcherSignedBytes); required when
	// the HTLC's watcher quorum is more than one.
	Watcher *WatcherSignature `json:"watcher,omitempty"`
}

// CrossChainLockHTLC moves a cross-chain HTLC from HTLC_LOCKED into
// HTLC_ONCHAIN_PENDING and hands its custody to the chain's watchers
// (handoff #4 enter, 000 §5.2): one TransitionInTx with NewOwner
// CHAIN:default, event HtlcOnchainPending. issuer is a party bank relaying
// the observation. NOT_CROSS_CHAIN for an HTLC created without
// cross_chain; repeating the same lock answers the same view.
func (o *Orchestrator) CrossChainLockHTLC(ctx context.Context, htlcID string, req HtlcCrossChainLock, issuer string) (HtlcView, error) {
	c, r, err := o.loadHtlc(ctx, "htlc_id", htlcID)
	if err != nil {
		return HtlcView{}, err
	}
	if issuer != c.PayerBankID && issuer != c.PayeeBankID {
		return HtlcView{}, HtlcNotFound(htlcID)
	}
	if c.CrossChainSource == "" {
		return HtlcView{}, domainerr.New("NOT_CROSS_CHAIN", "the HTLC has no cross_chain_source", map[string]any{"htlc_id": htlcID})
	}
	if req.OnchainLockRef == "" {
		return HtlcView{}, missingField("onchain_lock_ref")
	}
	if c.State == lane.HtlcContractOnchain && c.OnchainLockRef == req.OnchainLockRef {
		v := htlcView(c, string(r.State), r.ReasonCode, r.Owner)
		v.Replayed = true
		return v, nil
	}
	if r.State != lane.HtlcLocked {
		return HtlcView{}, domainerr.New("STATE_GUARD", "the HTLC is not HTLC_LOCKED", map[string]any{"htlc_id": htlcID, "tx_state": string(r.State)})
	}
	now := o.clk.Now()
	if expiredAt(c, now) {
		return o.claimAfterExpiry(ctx, c)
	}
	if t, err := clock.ParseStamp(c.OnchainTimelock); err == nil && !now.Before(t) {
		return HtlcView{}, domainerr.New("ONCHAIN_TIMEOUT", "the on-chain timelock has passed", map[string]any{"htlc_id": htlcID, "onchain_timelock": c.OnchainTimelock})
	}
	set := map[string]any{"onchain_lock_ref": req.OnchainLockRef}
	if len(req.Proof) > 0 {
		set["onchain_lock_proof_json"] = string(req.Proof)
	}
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		res, err := o.lanes.TransitionInTx(ctx, tx, lane.Transition{TxID: c.TxID, From: lane.HtlcLocked, To: lane.HtlcOnchainPending,
			EventType: finality.HtlcOnchainPending, NewOwner: lane.OwnerChainDefault,
			Payload: map[string]any{"htlc_id": c.HtlcID, "cross_chain_source": c.CrossChainSource, "onchain_lock_ref": req.OnchainLockRef,
				"onchain_timelock": c.OnchainTimelock, "relayed_by": issuer},
			SideUpdates: lane.HtlcEdge(c.HtlcID, lane.HtlcContractLocked, lane.HtlcContractOnchain, clock.Stamp(now), set)})
		if err != nil {
			return err
		}
		if !res.Applied {
			return errConflict
		}
		return nil
	})
	if err == errConflict || domainerr.Has(err, "CONCURRENCY_CONFLICT") {
		return HtlcView{}, domainerr.New("CONCURRENCY_CONFLICT", "the HTLC changed concurrently; read it and retry", map[string]any{"htlc_id": htlcID})
	}
	if err != nil {
		return HtlcView{}, err
	}
	o.log.InfoContext(ctx, "htlc.onchain_pending", "htlc_id", c.HtlcID, "txid", c.TxID, "owner", lane.OwnerChainDefault)
	return o.GetHTLC(ctx, htlcID, issuer)
}

// OnchainFulfillHTLC records one watcher's observation that the on-chain
// escrow was released with the preimage (handoff #4 exit, 000 §5.2; 001
// §15.6; docs/htlc.md "Watchers"). The observation counts for its
// watcher operator (the signing key's owner_ref; an unsigned relay only
// where one watcher is the quorum) and is applied by observeTx: recorded
// as OnchainProofObserved, refused fail-closed with a WATCHER_EQUIVOCATION
// Case when it contradicts another, ONCHAIN_QUORUM_PENDING while fewer than
// onchain_min_watchers operators agree, ONCHAIN_INSUFFICIENT_CONFIRMATIONS
// while the quorum's smallest depth is below the chain's minimum; once the
// quorum holds, the chain, owner of the row, moves it
// HTLC_ONCHAIN_PENDING -> HTLC_FULFILL_REQUESTED and hands it back to ZC in
// the same CAS (Issuer CHAIN:default, NewOwner ZC); the drive then settles
// it. Past the outer timelock the lease has ended: ZC reclaims and cancels
// the row instead and the observation is refused with EXPIRED. A preimage
// that does not hash to the hashlock is ONCHAIN_PROOF_MISMATCH (recorded as
// HtlcClaimRejected by the chain).
func (o *Orchestrator) OnchainFulfillHTLC(ctx context.Context, htlcID string, req HtlcOnchainFulfillment, issuer string) (HtlcView, error) {
	c, r, err := o.loadHtlc(ctx, "htlc_id", htlcID)
	if err != nil {
		return HtlcView{}, err
	}
	if issuer != c.PayerBankID && issuer != c.PayeeBankID {
		return HtlcView{}, HtlcNotFound(htlcID)
	}
	if c.CrossChainSource == "" {
		return HtlcView{}, domainerr.New("NOT_CROSS_CHAIN", "the HTLC has no cross_chain_source", map[string]any{"htlc_id": htlcID})
	}
	presented, err := hashOf(req.Preimage)
	if err != nil {
		return HtlcView{}, err
	}
	match := presented == c.Hashlock
	if v, done, err := o.claimSettledAnswer(c, r, match); done {
		if err != nil && domainerr.Has(err, "PREIMAGE_MISMATCH") {
			err = domainerr.New("ONCHAIN_PROOF_MISMATCH", "the preimage does not hash to the hashlock", map[string]any{"htlc_id": htlcID})
		}
		return v, err
	}
	if r.State != lane.HtlcOnchainPending || r.Owner != lane.OwnerChainDefault {
		return HtlcView{}, domainerr.New("STATE_GUARD", "the HTLC is not HTLC_ONCHAIN_PENDING", map[string]any{"htlc_id": htlcID, "tx_state": string(r.State)})
	}
	if expiredAt(c, o.clk.Now()) {
		return o.claimAfterExpiry(ctx, c)
	}
	if !match {
		if _, err := o.lanes.RecordWithLog(ctx, lane.Record{TxID: c.TxID, State: lane.HtlcOnchainPending, Issuer: lane.OwnerChainDefault,
			EventType: finality.HtlcClaimRejected, Payload: map[string]any{"reason_code": "ONCHAIN_PROOF_MISMATCH", "htlc_id": c.HtlcID,
				"external_ref": req.ExternalRef, "presented_hash": presented}}); err != nil {
			return HtlcView{}, err
		}
		return HtlcView{}, domainerr.New("ONCHAIN_PROOF_MISMATCH", "the preimage does not hash to the hashlock", map[string]any{"htlc_id": htlcID})
	}
	if req.ExternalRef == "" {
		return HtlcView{}, missingField("external_ref")
	}
	if req.Confirmations < 0 {
		return HtlcView{}, invalidField("confirmations", "must not be negative", req.Confirmations)
	}
	operator, err := o.watcherOperator(ctx, c, req, presented, issuer, o.clk.Now())
	if err != nil {
		return HtlcView{}, err
	}
	x := observation{Operator: operator, ExternalRef: req.ExternalRef, PresentedHash: presented, Confirmations: req.Confirmations}
	var out watcherOutcome
	for attempt := 0; ; attempt++ {
		err = o.db.Write(ctx, func(tx *store.Tx) error {
			var err error
			out, err = o.observeTx(ctx, tx, c, x, req, issuer)
			return err
		})
		// Another watcher's observation moved the row's version first:
		// read again and count this one against the new state.
		if (err == errConflict || domainerr.Has(err, "CONCURRENCY_CONFLICT")) && attempt < 8 && !expiredAt(c, o.clk.Now()) {
			c2, r2, lerr := o.loadHtlc(ctx, "htlc_id", htlcID)
			if lerr != nil {
				return HtlcView{}, lerr
			}
			if r2.State == lane.HtlcOnchainPending && r2.Owner == lane.OwnerChainDefault {
				c = c2
				continue
			}
		}
		break
	}
	if err == errConflict || domainerr.Has(err, "CONCURRENCY_CONFLICT") || domainerr.Has(err, "OWNERSHIP_VIOLATION") {
		// The sweep reclaimed the lease first (owner ZC now), or another
		// observation released it.
		return o.claimReload(ctx, htlcID, match)
	}
	if err != nil {
		return HtlcView{}, err
	}
	if out.err != nil {
		o.log.InfoContext(ctx, "htlc.onchain_observed", "htlc_id", c.HtlcID, "txid", c.TxID, "watcher_operator", operator,
			"reason_code", domainerr.Code(out.err), "watchers", len(out.operators))
		return HtlcView{}, out.err
	}
	o.log.InfoContext(ctx, "htlc.onchain_fulfilled", "htlc_id", c.HtlcID, "txid", c.TxID, "watchers", out.operators, "confirmations", out.depth)
	return o.GetHTLC(ctx, htlcID, issuer)
}
