package orchestrator

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Owner types of the KeyRegistry keys that may sign a watcher observation
// (004 WATCHER_UNAUTHORIZED: EXTERNAL_RAIL or ATTESTER).
const (
	OwnerExternalRail = "EXTERNAL_RAIL"
	OwnerAttester     = "ATTESTER"
)

// CaseReasonWatcherEquivocation is the Case reason of conflicting watcher
// observations of one cross-chain HTLC (004 WATCHER_EQUIVOCATION).
const CaseReasonWatcherEquivocation = "WATCHER_EQUIVOCATION"

// relayOperator is the watcher operator of an unsigned observation
// relayed by a party bank: accepted only where the quorum is one watcher
// (onchain_min_watchers = 1, "従来の単一Watcher").
func relayOperator(bank string) string { return "RELAY:" + bank }

// WatcherSignature signs one watcher observation: the watcher's key
// (KeyRegistry, owner_type EXTERNAL_RAIL or ATTESTER; its owner_ref is the
// watcher operator the quorum counts), a nonce, when it observed, and an
// Ed25519 signature (base64) over WatcherSignedBytes.
type WatcherSignature struct {
	KeyID      string `json:"key_id"`
	Nonce      string `json:"nonce"`
	ObservedAt string `json:"observed_at"`
	Signature  string `json:"signature"`
}

// WatcherSignedPointers are the members a watcher signs, in order
// (signing.Canonical, 002 §12.6.2). preimage_hash is SHA-256 of the
// preimage the watcher saw released: the watcher never signs the secret.
var WatcherSignedPointers = []string{"/htlc_id", "/source", "/external_ref", "/preimage_hash", "/confirmations", "/key_id", "/nonce", "/observed_at"}

// WatcherSignedBytes is what a watcher signs for an observation of htlcID.
func WatcherSignedBytes(htlcID, source, externalRef, preimageHash string, confirmations int, w WatcherSignature) ([]byte, error) {
	return signing.Canonical(map[string]any{"htlc_id": htlcID, "source": source, "external_ref": externalRef,
		"preimage_hash": preimageHash, "confirmations": confirmations, "key_id": w.KeyID, "nonce": w.Nonce,
		"observed_at": w.ObservedAt}, WatcherSignedPointers)
}

// SignWatcherObservation fills w.Signature (for watchers and tests).
func SignWatcherObservation(priv ed25519.PrivateKey, htlcID, source, externalRef, preimageHash string, confirmations int, w *WatcherSignature) error {
	msg, err := WatcherSignedBytes(htlcID, source, externalRef, preimageHash, confirmations, *w)
	if err != nil {
		return err
	}
	w.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, msg))
	return nil
}

// watcherOperator verifies the observation's signature and returns the
// operator it counts for: the key's owner_ref. An unsigned observation
// counts as the relaying bank only when one watcher is the quorum.
func (o *Orchestrator) watcherOperator(ctx context.Context, c lane.HtlcContract, req HtlcOnchainFulfillment, presented, issuer string, now time.Time) (string, error) {
	w := req.Watcher
	if w == nil {
		if c.OnchainMinWatchers > 1 {
			return "", domainerr.New("WATCHER_UNAUTHORIZED", fmt.Sprintf("a quorum of %d watchers counts signed observations only", c.OnchainMinWatchers),
				map[string]any{"htlc_id": c.HtlcID, "onchain_min_watchers": c.OnchainMinWatchers})
		}
		return relayOperator(issuer), nil
	}
	for _, f := range []struct{ name, v string }{{"watcher.key_id", w.KeyID}, {"watcher.nonce", w.Nonce},
		{"watcher.observed_at", w.ObservedAt}, {"watcher.signature", w.Signature}} {
		if f.v == "" {
			return "", missingField(f.name)
		}
	}
	at, err := clock.ParseStamp(w.ObservedAt)
	if err != nil {
		return "", invalidField("watcher.observed_at", "must be RFC3339", w.ObservedAt)
	}
	key, err := signing.NewRegistry(o.db, o.clk).Get(ctx, w.KeyID)
	if err != nil {
		return "", err
	}
	if key.OwnerType != OwnerExternalRail && key.OwnerType != OwnerAttester {
		return "", domainerr.New("WATCHER_UNAUTHORIZED", "key "+w.KeyID+" is not a watcher's (EXTERNAL_RAIL or ATTESTER)",
			map[string]any{"key_id": w.KeyID, "owner_type": key.OwnerType})
	}
	if err := key.CheckUsableAt(at, now); err != nil {
		return "", err
	}
	msg, err := WatcherSignedBytes(c.HtlcID, c.CrossChainSource, req.ExternalRef, presented, req.Confirmations, *w)
	if err != nil {
		return "", err
	}
	sig, err := base64.StdEncoding.DecodeString(w.Signature)
	if err != nil || !ed25519.Verify(key.PublicKey, msg, sig) {
		return "", domainerr.New("EXTERNAL_SIGNATURE_INVALID", "the watcher observation's signature does not verify with key "+w.KeyID,
			map[string]any{"key_id": w.KeyID, "htlc_id": c.HtlcID})
	}
	return key.OwnerRef, nil
}

// observation is one OnchainProofObserved entry of a cross-chain HTLC.
type observation struct {
	Operator      string `json:"watcher_operator"`
	ExternalRef   string `json:"external_ref"`
	PresentedHash string `json:"presented_hash"`
	Confirmations int    `json:"confirmations"`
}

// observationsTx reads the watcher observations recorded for txid and
// whether an equivocation was detected before, inside tx.
func observationsTx(ctx context.Context, tx *store.Tx, txid string) (obs []observation, equivocated bool, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT event_type, payload_json FROM FinalityLog WHERE txid = ? AND event_type IN (?, ?) ORDER BY event_seq`,
		txid, string(finality.OnchainProofObserved), string(finality.WatcherEquivocationDetected))
	if err != nil {
		return nil, false, wrapDB("read watcher observations", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ev, payload string
		if err := rows.Scan(&ev, &payload); err != nil {
			return nil, false, wrapDB("scan watcher observation", err)
		}
		if ev == string(finality.WatcherEquivocationDetected) {
			equivocated = true
			continue
		}
		var x observation
		if err := json.Unmarshal([]byte(payload), &x); err != nil {
			return nil, false, fmt.Errorf("orchestrator: watcher observation of %s: %w", txid, err)
		}
		obs = append(obs, x)
	}
	return obs, equivocated, wrapDB("read watcher observations", rows.Err())
}

// quorumOf is the watcher quorum over obs (all agreeing): the distinct
// operators, sorted, and the confirmation depth the quorum vouches for —
// the smallest of the operators' latest reports (004
// ONCHAIN_INSUFFICIENT_CONFIRMATIONS: "深度は定足数を構成する相異なる運用主体の申告の最小値").
func quorumOf(obs []observation) (operators []string, depth int) {
	latest := map[string]int{}
	for _, x := range obs {
		latest[x.Operator] = x.Confirmations
	}
	depth = -1
	for op, d := range latest {
		operators = append(operators, op)
		if depth < 0 || d < depth {
			depth = d
		}
	}
	sort.Strings(operators)
	return operators, max(depth, 0)
}

// conflicts reports whether x contradicts an earlier observation: the
// on-chain escrow is released once, so every watcher must report the same
// release (external_ref) of the same preimage (its hash). A watcher that
// reports another release, or another preimage for the same release,
// equivocates (004 WATCHER_EQUIVOCATION).
func conflicts(obs []observation, x observation) (observation, bool) {
	for _, p := range obs {
		if p.ExternalRef != x.ExternalRef || p.PresentedHash != x.PresentedHash {
			return p, true
		}
	}
	return observation{}, false
}

// watcherOutcome is what one observation led to inside its commit.
type watcherOutcome struct {
	err       error // the refusal to answer after the commit (nil: released)
	operators []string
	depth     int
}

// observeTx records one watcher observation of c (state
// HTLC_ONCHAIN_PENDING, owner CHAIN:default) inside tx and applies the
// quorum: an observation that contradicts another records
// WatcherEquivocationDetected and opens (or joins) the HTLC's
// WATCHER_EQUIVOCATION Case — fail closed: no observation releases the
// HTLC after that, the outer timelock reclaims it; fewer distinct
// operators than onchain_min_watchers records OnchainQuorumPending; a
// quorum whose depth is below the chain's minimum is
// ONCHAIN_INSUFFICIENT_CONFIRMATIONS. A quorum that holds releases:
// HTLC_ONCHAIN_PENDING -> HTLC_FULFILL_REQUESTED as the chain, handed
// back to ZC (handoff #4 exit), and the drive is queued. A row that moved
// (a racing observation or the sweep's reclaim) is errConflict.
func (o *Orchestrator) observeTx(ctx context.Context, tx *store.Tx, c lane.HtlcContract, x observation, req HtlcOnchainFulfillment, issuer string) (watcherOutcome, error) {
	now := o.clk.Now()
	if expiredAt(c, now) {
		return watcherOutcome{}, errConflict
	}
	prior, equivocated, err := observationsTx(ctx, tx, c.TxID)
	if err != nil {
		return watcherOutcome{}, err
	}
	if equivocated {
		return watcherOutcome{err: domainerr.New("WATCHER_EQUIVOCATION", "the watchers of this HTLC equivocated; it is held until its outer timelock and a Case is open",
			map[string]any{"htlc_id": c.HtlcID})}, nil
	}
	record := func(ev finality.EventType, payload map[string]any) error {
		res, err := o.lanes.RecordInTx(ctx, tx, lane.Record{TxID: c.TxID, State: lane.HtlcOnchainPending, Issuer: lane.OwnerChainDefault,
			EventType: ev, Payload: payload})
		if err == nil && !res.Applied {
			err = errConflict
		}
		return err
	}
	dup := false
	for _, p := range prior {
		dup = dup || p == x
	}
	if !dup {
		if err := record(finality.OnchainProofObserved, map[string]any{"htlc_id": c.HtlcID, "cross_chain_source": c.CrossChainSource,
			"watcher_operator": x.Operator, "external_ref": x.ExternalRef, "presented_hash": x.PresentedHash,
			"confirmations": x.Confirmations, "relayed_by": issuer, "observed_at": clock.Stamp(now)}); err != nil {
			return watcherOutcome{}, err
		}
	}
	if p, bad := conflicts(prior, x); bad {
		if err := record(finality.WatcherEquivocationDetected, map[string]any{"htlc_id": c.HtlcID, "reason_code": CaseReasonWatcherEquivocation,
			"cross_chain_source": c.CrossChainSource, "earlier": p, "later": x}); err != nil {
			return watcherOutcome{}, err
		}
		opened, err := o.cases.OpenCase(ctx, tx, cases.OpenRequest{ReasonCode: CaseReasonWatcherEquivocation, OpenedBy: "ZC",
			RelatedTxID: c.TxID, DetectionPath: "orchestrator.htlc_watchers", Cause: c.CrossChainSource + ":" + c.HtlcID,
			Description: fmt.Sprintf("HTLC %s on %s: watcher %s reported release %s, watcher %s reported release %s; held fail-closed until the outer timelock %s",
				c.HtlcID, c.CrossChainSource, p.Operator, p.ExternalRef, x.Operator, x.ExternalRef, c.Timelock)})
		if err != nil {
			return watcherOutcome{}, err
		}
		o.log.WarnContext(ctx, "htlc.watcher_equivocation", "htlc_id", c.HtlcID, "txid", c.TxID, "case_id", opened.CaseID)
		return watcherOutcome{err: domainerr.New("WATCHER_EQUIVOCATION", "conflicting watcher observations; the HTLC is held fail-closed and a Case is open",
			map[string]any{"htlc_id": c.HtlcID, "case_id": opened.CaseID})}, nil
	}
	operators, depth := quorumOf(append(prior, x))
	if len(operators) < c.OnchainMinWatchers {
		if err := record(finality.OnchainQuorumPending, map[string]any{"htlc_id": c.HtlcID, "watchers": operators,
			"have": len(operators), "need": c.OnchainMinWatchers}); err != nil {
			return watcherOutcome{}, err
		}
		return watcherOutcome{operators: operators, err: domainerr.New("ONCHAIN_QUORUM_PENDING",
			fmt.Sprintf("%d of %d distinct watchers have observed the release", len(operators), c.OnchainMinWatchers),
			map[string]any{"htlc_id": c.HtlcID, "have": len(operators), "need": c.OnchainMinWatchers, "watchers": operators})}, nil
	}
	if depth < c.OnchainMinConfirmations {
		return watcherOutcome{operators: operators, depth: depth, err: domainerr.New("ONCHAIN_INSUFFICIENT_CONFIRMATIONS",
			"the watcher quorum vouches for fewer confirmations than the chain class requires",
			map[string]any{"htlc_id": c.HtlcID, "confirmations": depth, "required": c.OnchainMinConfirmations})}, nil
	}
	proof, err := json.Marshal(map[string]any{"external_ref": x.ExternalRef, "confirmations": depth, "watchers": operators, "proof": req.Proof})
	if err != nil {
		return watcherOutcome{}, err
	}
	res, err := o.lanes.TransitionInTx(ctx, tx, lane.Transition{TxID: c.TxID, From: lane.HtlcOnchainPending, To: lane.HtlcFulfillRequested,
		EventType: finality.HtlcFulfillRequested, Issuer: lane.OwnerChainDefault, NewOwner: lane.OwnerZC,
		Payload: map[string]any{"htlc_id": c.HtlcID, "hashlock": c.Hashlock, "secret_verified": true, "source": ClaimSourceOnchain,
			"external_ref": x.ExternalRef, "confirmations": depth, "watchers": operators, "verified_at": clock.Stamp(now), "relayed_by": issuer},
		SideUpdates: lane.HtlcEdge(c.HtlcID, lane.HtlcContractOnchain, lane.HtlcContractFulfill, clock.Stamp(now),
			map[string]any{"secret_verified": 1, "onchain_release_proof_json": string(proof)})})
	if err != nil {
		return watcherOutcome{}, err
	}
	if !res.Applied {
		return watcherOutcome{}, errConflict
	}
	return watcherOutcome{operators: operators, depth: depth}, o.enqueue(ctx, tx, KindDrive, c.TxID, LaneHTLC, StatusReady, now)
}
