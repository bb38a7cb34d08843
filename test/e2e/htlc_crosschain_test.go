package e2e

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/signing"
)

func crossChain(tl time.Time) func(*orchestrator.HtlcCreate) {
	return func(r *orchestrator.HtlcCreate) {
		r.CrossChain = &orchestrator.CrossChain{Source: "CHAIN-X", OnchainTimelock: tl.Add(-20 * time.Minute).Format(time.RFC3339),
			OnchainChainClass: "PUBLIC", OnchainCryptoSuite: "secp256k1"}
	}
}

// watcher is a registered watcher key: its operator is what the quorum
// counts.
type watcher struct {
	keyID string
	priv  ed25519.PrivateKey
}

// watchers registers one EXTERNAL_RAIL key per operator.
func (s *htlcStack) watchers(ops ...string) map[string]watcher {
	s.t.Helper()
	out := map[string]watcher{}
	for _, op := range ops {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			s.t.Fatal(err)
		}
		w := watcher{keyID: "KEY-W-" + op, priv: priv}
		if err := signing.NewRegistry(s.zc, s.clk).Register(s.ctx, signing.Key{KeyID: w.keyID, OwnerType: orchestrator.OwnerExternalRail,
			OwnerRef: op, PublicKey: pub, ValidFrom: start.Add(-time.Hour)}); err != nil {
			s.t.Fatal(err)
		}
		out[op] = w
	}
	return out
}

// observe relays w's signed observation of the release ref of preimage
// with conf confirmations (through the payee bank).
func (s *htlcStack) observe(v orchestrator.HtlcView, w watcher, ref, preimage string, conf int) (orchestrator.HtlcView, error) {
	raw, _ := hex.DecodeString(preimage)
	sum := sha256.Sum256(raw)
	sig := orchestrator.WatcherSignature{KeyID: w.keyID, Nonce: fmt.Sprintf("n-%s-%s-%d", ref, w.keyID, conf), ObservedAt: s.clk.Now().UTC().Format(time.RFC3339)}
	if err := orchestrator.SignWatcherObservation(w.priv, v.HtlcID, v.CrossChainSource, ref, hex.EncodeToString(sum[:]), conf, &sig); err != nil {
		s.t.Fatal(err)
	}
	return s.o.OnchainFulfillHTLC(s.ctx, v.HtlcID, orchestrator.HtlcOnchainFulfillment{Preimage: preimage, ExternalRef: ref,
		Confirmations: conf, Watcher: &sig}, "002")
}

var (
	evClassified = string(finality.OnchainFinalityClassified) + ":RECEIVED>RECEIVED"
	evOnchain    = string(finality.HtlcOnchainPending) + ":HTLC_LOCKED>HTLC_ONCHAIN_PENDING"
	evObserved   = string(finality.OnchainProofObserved) + ":HTLC_ONCHAIN_PENDING>HTLC_ONCHAIN_PENDING"
	evQuorumWait = string(finality.OnchainQuorumPending) + ":HTLC_ONCHAIN_PENDING>HTLC_ONCHAIN_PENDING"
	evOnchainRel = string(finality.HtlcFulfillRequested) + ":HTLC_ONCHAIN_PENDING>HTLC_FULFILL_REQUESTED"
)

// TestHTLCCrossChainHandoff (000 §5.2 handoff #4, enter and exit; 001
// §15.6; 004 ONCHAIN_QUORUM_PENDING): the create records
// OnchainFinalityClassified; the on-chain lock hands the row to
// CHAIN:default (the sweep and a preimage claim cannot move it). A PUBLIC
// chain needs two distinct watcher operators: an unsigned relay is
// WATCHER_UNAUTHORIZED, a wrong preimage ONCHAIN_PROOF_MISMATCH, the first
// watcher's observation ONCHAIN_QUORUM_PENDING, a second key of the same
// operator still pending, the second operator's observation with one
// confirmation ONCHAIN_INSUFFICIENT_CONFIRMATIONS (the quorum's depth is
// the smallest report); its deeper report releases the HTLC as the chain
// and hands it back to ZC in the same CAS; it settles through the cores.
func TestHTLCCrossChainHandoff(t *testing.T) {
	s := newHTLCStack(t, nil)
	ws := s.watchers("WATCH-A", "WATCH-B")
	// a second key of WATCH-A: one operator, however many keys
	pub, priv, _ := ed25519.GenerateKey(nil)
	if err := signing.NewRegistry(s.zc, s.clk).Register(s.ctx, signing.Key{KeyID: "KEY-W-A2", OwnerType: orchestrator.OwnerExternalRail,
		OwnerRef: "WATCH-A", PublicKey: pub, ValidFrom: start.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	a2 := watcher{keyID: "KEY-W-A2", priv: priv}
	before := s.snapshot()
	tl := start.Add(time.Hour)
	v, pre := s.lockOne("x1", 21, 6_000, tl, crossChain(tl))
	if v.OnchainFinalityClass != "PROBABILISTIC" || v.OnchainQuantumRisk != "VULNERABLE" || v.OnchainMinWatchers != 2 || v.OnchainMinConfirmations != 2 {
		t.Fatalf("classification %+v", v)
	}
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'OnchainFinalityClassified'
		AND json_extract(payload_json, '$.onchain_finality_class') = 'PROBABILISTIC' AND json_extract(payload_json, '$.onchain_quantum_risk') = 'VULNERABLE'
		AND json_extract(payload_json, '$.onchain_min_watchers') = 2`, v.TxID); n != 1 {
		t.Fatalf("OnchainFinalityClassified entries %d", n)
	}
	got, err := s.o.CrossChainLockHTLC(s.ctx, v.HtlcID, orchestrator.HtlcCrossChainLock{OnchainLockRef: "0xLOCK"}, "001")
	if err != nil || got.TxState != "HTLC_ONCHAIN_PENDING" || got.Owner != lane.OwnerChainDefault || got.State != "HTLC_ONCHAIN_PENDING" {
		t.Fatalf("cross-chain lock %+v %v", got, err)
	}
	// ZC's own paths cannot move a row the chain holds.
	_, err = s.claim(v.HtlcID, pre)
	wantCode(t, err, "STATE_GUARD")
	if res, err := s.o.TimeoutSweep(s.ctx); err != nil || res.HtlcTimelockExpired != 0 {
		t.Fatalf("sweep before the timelock: %+v %v", res, err)
	}
	_, err = s.o.OnchainFulfillHTLC(s.ctx, v.HtlcID, orchestrator.HtlcOnchainFulfillment{Preimage: pre, ExternalRef: "0xREL", Confirmations: 6}, "002")
	wantCode(t, err, "WATCHER_UNAUTHORIZED")
	wrong, _ := secret(98)
	_, err = s.observe(v, ws["WATCH-A"], "0xREL", wrong, 6)
	wantCode(t, err, "ONCHAIN_PROOF_MISMATCH")
	_, err = s.observe(v, ws["WATCH-A"], "0xREL", pre, 6)
	if de := wantCode(t, err, "ONCHAIN_QUORUM_PENDING"); de.Details["have"] != 1 || de.Details["need"] != 2 {
		t.Fatalf("details %v", de.Details)
	}
	_, err = s.observe(v, a2, "0xREL", pre, 6) // the same operator's report again: not recorded twice, still one
	wantCode(t, err, "ONCHAIN_QUORUM_PENDING")
	_, err = s.observe(v, ws["WATCH-B"], "0xREL", pre, 1)
	wantCode(t, err, "ONCHAIN_INSUFFICIENT_CONFIRMATIONS") // PUBLIC: 2; the quorum vouches for min(6, 1)
	s.wantState(v.TxID, "HTLC_ONCHAIN_PENDING", "")
	if s.hUsed() != 6_000 || s.hold(v.TxID) != "HELD" {
		t.Fatalf("while pending: h_used %d hold %s", s.hUsed(), s.hold(v.TxID))
	}
	got, err = s.observe(v, ws["WATCH-B"], "0xREL", pre, 3)
	if err != nil || got.Owner != lane.OwnerZC || got.TxState != "HTLC_FULFILL_REQUESTED" {
		t.Fatalf("fulfilment %+v %v", got, err)
	}
	// a late observation answers the same
	if again, err := s.observe(v, ws["WATCH-A"], "0xREL", pre, 7); err != nil || !again.Replayed {
		t.Fatalf("late observation %+v %v", again, err)
	}
	s.run()
	s.wantChain(v.TxID, evInit, evClassified, evLocked, evOnchain,
		string(finality.HtlcClaimRejected)+":HTLC_ONCHAIN_PENDING>HTLC_ONCHAIN_PENDING",
		evObserved, evQuorumWait, evQuorumWait, evObserved, evObserved, evOnchainRel,
		evDecided, evPayer, evPayee, evSettled)
	if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = 'HtlcFulfillRequested'
		AND json_extract(payload_json, '$.confirmations') = 3 AND json_extract(payload_json, '$.watchers') = '["WATCH-A","WATCH-B"]'`, v.TxID); n != 1 {
		t.Fatal("the release does not record the quorum and its depth")
	}
	for ev, want := range map[finality.EventType]string{finality.HtlcOnchainPending: "ZC>CHAIN:default", finality.HtlcFulfillRequested: "CHAIN:default>ZC"} {
		if n := s.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = ?
			AND json_extract(payload_json, '$.owner_from') || '>' || json_extract(payload_json, '$.owner_to') = ?`, v.TxID, string(ev), want); n != 1 {
			t.Errorf("%s does not record the owner move %s", ev, want)
		}
	}
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -6_000}, move{"002", "h:b", 6_000})
	if s.hUsed() != 0 {
		t.Fatalf("h_used %d", s.hUsed())
	}
	if s.hold(v.TxID) != "CONSUMED" {
		t.Fatalf("hold %s", s.hold(v.TxID))
	}
	s.wantNowhere(pre)
}

// TestHTLCCrossChainSingleWatcherRelay: a PRIVATE chain's quorum is one
// watcher; the party bank's unsigned relay is that watcher (the
// single-watcher form) and releases with one confirmation.
func TestHTLCCrossChainSingleWatcherRelay(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	tl := start.Add(time.Hour)
	v, pre := s.lockOne("x9", 29, 900, tl, func(r *orchestrator.HtlcCreate) {
		crossChain(tl)(r)
		r.CrossChain.OnchainChainClass = "PRIVATE"
	})
	if v.OnchainMinWatchers != 1 || v.OnchainMinConfirmations != 1 || v.OnchainFinalityClass != "DETERMINISTIC" {
		t.Fatalf("view %+v", v)
	}
	if _, err := s.o.CrossChainLockHTLC(s.ctx, v.HtlcID, orchestrator.HtlcCrossChainLock{OnchainLockRef: "0xL9"}, "001"); err != nil {
		t.Fatal(err)
	}
	got, err := s.o.OnchainFulfillHTLC(s.ctx, v.HtlcID, orchestrator.HtlcOnchainFulfillment{Preimage: pre, ExternalRef: "0xR9", Confirmations: 1}, "002")
	if err != nil || got.TxState != "HTLC_FULFILL_REQUESTED" {
		t.Fatalf("%+v %v", got, err)
	}
	s.run()
	s.wantChain(v.TxID, evInit, evClassified, evLocked, evOnchain, evObserved, evOnchainRel, evDecided, evPayer, evPayee, evSettled)
	s.checkInvariants(before, s.snapshot(), move{"001", "h:a", -900}, move{"002", "h:b", 900})
	// a PUBLIC chain may not be declared with a weaker quorum
	_, hl := secret(30)
	_, err = s.o.CreateHTLC(s.ctx, orchestrator.HtlcCreate{Amount: v.Amount, Payer: orchestrator.Party{BankID: "001", AccountHash: "h:a"},
		Payee: orchestrator.Party{BankID: "002", AccountHash: "h:b"}, HashAlg: orchestrator.HashAlgSHA256, Hashlock: hl,
		Timelock: tl.Format(time.RFC3339), CrossChain: &orchestrator.CrossChain{Source: "CHAIN-X", OnchainTimelock: tl.Add(-time.Minute).Format(time.RFC3339),
			OnchainChainClass: "PUBLIC", OnchainMinWatchers: 1}}, "weak", "001")
	wantCode(t, err, "INVALID_REQUEST")
}

// TestHTLCWatcherEquivocationFailsClosed (004 WATCHER_EQUIVOCATION): a
// watcher reporting another release than the one reported before
// equivocates: WatcherEquivocationDetected is recorded, one
// WATCHER_EQUIVOCATION Case opens, and no observation releases the HTLC
// after that — not even a quorum; the outer timelock reclaims the lease and
// refunds (H and the hold released, nothing moved). A second equivocation
// joins the same Case.
func TestHTLCWatcherEquivocationFailsClosed(t *testing.T) {
	s := newHTLCStack(t, nil)
	ws := s.watchers("WATCH-A", "WATCH-B", "WATCH-C")
	before := s.snapshot()
	tl := start.Add(time.Hour)
	v, pre := s.lockOne("xe", 25, 2_500, tl, crossChain(tl))
	if _, err := s.o.CrossChainLockHTLC(s.ctx, v.HtlcID, orchestrator.HtlcCrossChainLock{OnchainLockRef: "0xLE"}, "001"); err != nil {
		t.Fatal(err)
	}
	_, err := s.observe(v, ws["WATCH-A"], "0xREL-1", pre, 5)
	wantCode(t, err, "ONCHAIN_QUORUM_PENDING")
	_, err = s.observe(v, ws["WATCH-A"], "0xREL-2", pre, 5) // the same watcher, another release
	de := wantCode(t, err, "WATCHER_EQUIVOCATION")
	caseID, _ := de.Details["case_id"].(string)
	if caseID == "" {
		t.Fatalf("no case in %v", de.Details)
	}
	// fail closed: a quorum that agrees with the first report does not release
	_, err = s.observe(v, ws["WATCH-B"], "0xREL-1", pre, 5)
	wantCode(t, err, "WATCHER_EQUIVOCATION")
	s.wantState(v.TxID, "HTLC_ONCHAIN_PENDING", "")
	if n := s.count(`SELECT COUNT(*) FROM Cases WHERE reason_code = 'WATCHER_EQUIVOCATION' AND related_txid = ? AND state = 'OPEN' AND case_id = ?`, v.TxID, caseID); n != 1 {
		t.Fatalf("cases %d", n)
	}
	s.clk.Set(tl)
	res, err := s.o.TimeoutSweep(s.ctx)
	if err != nil || res.HtlcTimelockExpired != 1 || res.HtlcLeaseReclaimed != 1 {
		t.Fatalf("sweep %+v %v", res, err)
	}
	s.run()
	s.wantState(v.TxID, "CANCELLED", "TIMELOCK_EXPIRED")
	s.wantChain(v.TxID, evInit, evClassified, evLocked, evOnchain, evObserved, evQuorumWait, evObserved,
		string(finality.WatcherEquivocationDetected)+":HTLC_ONCHAIN_PENDING>HTLC_ONCHAIN_PENDING",
		string(finality.OwnershipReclaimed)+":HTLC_ONCHAIN_PENDING>HTLC_ONCHAIN_PENDING",
		string(finality.DecidedCancel)+":HTLC_ONCHAIN_PENDING>DECIDED_CANCEL", evCanceled)
	if s.hUsed() != 0 || s.openH(v.TxID) != 0 || s.hold(v.TxID) != "RELEASED" {
		t.Fatalf("after the refund: h_used %d open %d hold %s", s.hUsed(), s.openH(v.TxID), s.hold(v.TxID))
	}
	s.checkInvariants(before, s.snapshot())

	// Two watchers disagreeing about the release of another HTLC: its own Case.
	s.clk.Set(tl.Add(time.Minute))
	tl2 := tl.Add(2 * time.Hour)
	w, pre2 := s.lockOne("xe2", 26, 700, tl2, crossChain(tl2))
	if _, err := s.o.CrossChainLockHTLC(s.ctx, w.HtlcID, orchestrator.HtlcCrossChainLock{OnchainLockRef: "0xLE2"}, "001"); err != nil {
		t.Fatal(err)
	}
	_, err = s.observe(w, ws["WATCH-B"], "0xR-B", pre2, 5)
	wantCode(t, err, "ONCHAIN_QUORUM_PENDING")
	_, err = s.observe(w, ws["WATCH-C"], "0xR-C", pre2, 5)
	wantCode(t, err, "WATCHER_EQUIVOCATION")
	if n := s.count(`SELECT COUNT(*) FROM Cases WHERE reason_code = 'WATCHER_EQUIVOCATION'`); n != 2 {
		t.Fatalf("one Case per HTLC: %d", n)
	}
}

// TestHTLCWatcherQuorumVersusTimelockRace: the second watcher's
// observation (completing the quorum) races the sweep at the outer
// timelock, for n HTLCs at once. Each ends one way: released by the
// chain and settled (the reclaim's owner guard missed), or reclaimed and
// refunded (the observation answers EXPIRED) — with balances, H and the
// hold agreeing.
func TestHTLCWatcherQuorumVersusTimelockRace(t *testing.T) {
	s := newHTLCStack(t, nil)
	ws := s.watchers("WATCH-A", "WATCH-B")
	before := s.snapshot()
	tl := start.Add(30 * time.Minute)
	const n = 8
	vs := make([]orchestrator.HtlcView, n)
	pres := make([]string, n)
	for i := range vs {
		vs[i], pres[i] = s.lockOne(fmt.Sprintf("xr-%d", i), 200+i, int64(500+i), tl, crossChain(tl))
		if _, err := s.o.CrossChainLockHTLC(s.ctx, vs[i].HtlcID, orchestrator.HtlcCrossChainLock{OnchainLockRef: fmt.Sprintf("0xL%d", i)}, "001"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.observe(vs[i], ws["WATCH-A"], "0xREL", pres[i], 4); !domainerr.Has(err, "ONCHAIN_QUORUM_PENDING") {
			t.Fatal(err)
		}
	}
	errs := s.raceTheSweep(n, tl, func(i int) error {
		_, err := s.observe(vs[i], ws["WATCH-B"], "0xREL", pres[i], 4)
		return err
	})
	var moves []move
	released := 0
	for i, v := range vs {
		view := s.view(v.TxID)
		chain := strings.Join(s.chain(v.TxID), " ")
		fulfil, reclaim := strings.Count(chain, "HtlcFulfillRequested"), strings.Count(chain, "OwnershipReclaimed")
		switch {
		case errs[i] == nil:
			if view.State != "SETTLED" || fulfil != 1 || reclaim != 0 || s.hold(v.TxID) != "CONSUMED" {
				t.Errorf("%d: released but state %s hold %s chain %s", i, view.State, s.hold(v.TxID), chain)
			}
			released++
			moves = append(moves, move{"001", "h:a", -int64(500 + i)}, move{"002", "h:b", int64(500 + i)})
		case domainerr.Has(errs[i], "EXPIRED"):
			if view.State != "CANCELLED" || view.ReasonCode != "TIMELOCK_EXPIRED" || fulfil != 0 || reclaim != 1 || s.hold(v.TxID) != "RELEASED" {
				t.Errorf("%d: EXPIRED but state %s/%s hold %s chain %s", i, view.State, view.ReasonCode, s.hold(v.TxID), chain)
			}
		default:
			t.Errorf("%d: observation error %v", i, errs[i])
		}
		if s.openH(v.TxID) != 0 {
			t.Errorf("%d: H still reserved", i)
		}
	}
	if s.hUsed() != 0 {
		t.Fatalf("h_used %d", s.hUsed())
	}
	s.checkInvariants(before, s.snapshot(), moves...)
	t.Logf("%d of %d released before the reclaim", released, n)
}

// TestHTLCCrossChainLeaseReclaim (000 §5.2, outer-timelock lease
// reclaim): at the outer timelock the sweep reclaims the row from
// CHAIN:default (OwnershipReclaimed) and cancels it as ZC in one commit;
// H and the payer bank's hold are released, nothing moves, and a late
// watcher release is refused with EXPIRED.
func TestHTLCCrossChainLeaseReclaim(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	tl := start.Add(time.Hour)
	v, pre := s.lockOne("x2", 22, 2_200, tl, crossChain(tl))
	if _, err := s.o.CrossChainLockHTLC(s.ctx, v.HtlcID, orchestrator.HtlcCrossChainLock{OnchainLockRef: "0xLOCK2"}, "001"); err != nil {
		t.Fatal(err)
	}
	s.clk.Set(tl)
	res, err := s.o.TimeoutSweep(s.ctx)
	if err != nil || res.HtlcTimelockExpired != 1 || res.HtlcLeaseReclaimed != 1 {
		t.Fatalf("sweep at the outer timelock: %+v %v", res, err)
	}
	vw := s.wantState(v.TxID, "DECIDED_CANCEL", "TIMELOCK_EXPIRED")
	if vw.Owner != lane.OwnerZC {
		t.Fatalf("owner %s", vw.Owner)
	}
	s.run()
	s.wantState(v.TxID, "CANCELLED", "TIMELOCK_EXPIRED")
	s.wantChain(v.TxID, evInit, evClassified, evLocked,
		string(finality.HtlcOnchainPending)+":HTLC_LOCKED>HTLC_ONCHAIN_PENDING",
		string(finality.OwnershipReclaimed)+":HTLC_ONCHAIN_PENDING>HTLC_ONCHAIN_PENDING",
		string(finality.DecidedCancel)+":HTLC_ONCHAIN_PENDING>DECIDED_CANCEL",
		evCanceled)
	_, err = s.o.OnchainFulfillHTLC(s.ctx, v.HtlcID, orchestrator.HtlcOnchainFulfillment{Preimage: pre, ExternalRef: "0xLATE", Confirmations: 9}, "002")
	wantCode(t, err, "EXPIRED")
	if s.hUsed() != 0 || s.openH(v.TxID) != 0 || s.hold(v.TxID) != "RELEASED" {
		t.Fatalf("after reclaim: h_used %d open %d hold %s", s.hUsed(), s.openH(v.TxID), s.hold(v.TxID))
	}
	s.checkInvariants(before, s.snapshot())
	if strings.Contains(strings.Join(s.chain(v.TxID), " "), "HtlcFulfillRequested") {
		t.Fatal("a fulfilment was recorded after the reclaim")
	}
	// Create-time validation of the cross-chain part.
	_, hl := secret(23)
	bad := func(mod func(*orchestrator.CrossChain), code string) {
		t.Helper()
		req := orchestrator.HtlcCreate{}
		crossChain(tl)(&req)
		mod(req.CrossChain)
		_, err := s.o.CreateHTLC(s.ctx, orchestrator.HtlcCreate{Amount: v.Amount, Payer: orchestrator.Party{BankID: "001", AccountHash: "h:a"},
			Payee: orchestrator.Party{BankID: "002", AccountHash: "h:b"}, HashAlg: orchestrator.HashAlgSHA256, Hashlock: hl,
			Timelock: tl.Add(time.Hour).Format(time.RFC3339), CrossChain: req.CrossChain}, "bad-"+code, "001")
		wantCode(t, err, code)
	}
	bad(func(c *orchestrator.CrossChain) { c.OnchainTimelock = tl.Add(2 * time.Hour).Format(time.RFC3339) }, "ONCHAIN_TIMELOCK_INVALID")
	bad(func(c *orchestrator.CrossChain) { c.OnchainChainClass = "" }, "ONCHAIN_CHAIN_CLASS_REQUIRED")
	// A plain HTLC is not cross-chain.
	p, _ := s.lockOne("x3", 24, 100, s.clk.Now().Add(time.Hour), nil)
	_, err = s.o.CrossChainLockHTLC(s.ctx, p.HtlcID, orchestrator.HtlcCrossChainLock{OnchainLockRef: "0x"}, "001")
	wantCode(t, err, "NOT_CROSS_CHAIN")
}

// TestHTLCConcurrentWatcherObservations: both watchers of a PUBLIC chain
// report at once, for n HTLCs. Observations of one HTLC serialise on the
// row's version: each HTLC is released exactly once (one
// HtlcFulfillRequested, two OnchainProofObserved), one report answers the
// release and the other ONCHAIN_QUORUM_PENDING or the same view, and
// every HTLC settles.
func TestHTLCConcurrentWatcherObservations(t *testing.T) {
	s := newHTLCStack(t, nil)
	ws := s.watchers("WATCH-A", "WATCH-B")
	before := s.snapshot()
	tl := start.Add(time.Hour)
	const n = 6
	vs := make([]orchestrator.HtlcView, n)
	pres := make([]string, n)
	for i := range vs {
		vs[i], pres[i] = s.lockOne(fmt.Sprintf("xc-%d", i), 500+i, int64(200+i), tl, crossChain(tl))
		if _, err := s.o.CrossChainLockHTLC(s.ctx, vs[i].HtlcID, orchestrator.HtlcCrossChainLock{OnchainLockRef: fmt.Sprintf("0xC%d", i)}, "001"); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([][2]error, n)
	var wg sync.WaitGroup
	for i := range vs {
		for k, op := range []string{"WATCH-A", "WATCH-B"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i][k] = s.observe(vs[i], ws[op], "0xREL", pres[i], 3)
			}()
		}
	}
	wg.Wait()
	s.run()
	var moves []move
	for i, v := range vs {
		ok := 0
		for _, err := range errs[i] {
			switch {
			case err == nil:
				ok++
			case !domainerr.Has(err, "ONCHAIN_QUORUM_PENDING"):
				t.Errorf("%d: %v", i, err)
			}
		}
		if ok == 0 {
			t.Errorf("%d: no report released the HTLC: %v", i, errs[i])
		}
		s.wantState(v.TxID, "SETTLED", "")
		chain := strings.Join(s.chain(v.TxID), " ")
		if strings.Count(chain, "HtlcFulfillRequested") != 1 || strings.Count(chain, "OnchainProofObserved") != 2 {
			t.Errorf("%d: chain %s", i, chain)
		}
		moves = append(moves, move{"001", "h:a", -int64(200 + i)}, move{"002", "h:b", int64(200 + i)})
	}
	s.checkInvariants(before, s.snapshot(), moves...)
}
