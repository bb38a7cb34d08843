package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
)

func crossChain(tl time.Time) func(*orchestrator.HtlcCreate) {
	return func(r *orchestrator.HtlcCreate) {
		r.CrossChain = &orchestrator.CrossChain{Source: "CHAIN-X", OnchainTimelock: tl.Add(-20 * time.Minute).Format(time.RFC3339),
			OnchainChainClass: "PUBLIC", OnchainCryptoSuite: "secp256k1"}
	}
}

// TestHTLCCrossChainHandoff (000 §5.2 handoff #4, enter and exit): the
// on-chain lock hands the row to CHAIN:default (the sweep and a preimage
// claim cannot move it); the watcher's release — a matching preimage
// with enough confirmations — moves it to HTLC_FULFILL_REQUESTED as the
// chain and hands it back to ZC in the same CAS; it settles.
func TestHTLCCrossChainHandoff(t *testing.T) {
	s := newHTLCStack(t, nil)
	before := s.snapshot()
	tl := start.Add(time.Hour)
	v, pre := s.lockOne("x1", 21, 6_000, tl, crossChain(tl))
	if v.OnchainFinalityClass != "PROBABILISTIC" || v.OnchainQuantumRisk != "VULNERABLE" {
		t.Fatalf("classification %+v", v)
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
	wrong, _ := secret(98)
	_, err = s.o.OnchainFulfillHTLC(s.ctx, v.HtlcID, orchestrator.HtlcOnchainFulfillment{Preimage: wrong, ExternalRef: "0xREL", Confirmations: 6}, "002")
	wantCode(t, err, "ONCHAIN_PROOF_MISMATCH")
	_, err = s.o.OnchainFulfillHTLC(s.ctx, v.HtlcID, orchestrator.HtlcOnchainFulfillment{Preimage: pre, ExternalRef: "0xREL", Confirmations: 1}, "002")
	wantCode(t, err, "ONCHAIN_INSUFFICIENT_CONFIRMATIONS") // PUBLIC: 2 confirmations
	got, err = s.o.OnchainFulfillHTLC(s.ctx, v.HtlcID, orchestrator.HtlcOnchainFulfillment{Preimage: pre, ExternalRef: "0xREL", Confirmations: 2}, "002")
	if err != nil || got.Owner != lane.OwnerZC || got.TxState != "HTLC_FULFILL_REQUESTED" {
		t.Fatalf("fulfilment %+v %v", got, err)
	}
	s.run()
	s.wantChain(v.TxID, evInit, evLocked,
		string(finality.HtlcOnchainPending)+":HTLC_LOCKED>HTLC_ONCHAIN_PENDING",
		string(finality.HtlcClaimRejected)+":HTLC_ONCHAIN_PENDING>HTLC_ONCHAIN_PENDING",
		string(finality.HtlcFulfillRequested)+":HTLC_ONCHAIN_PENDING>HTLC_FULFILL_REQUESTED",
		evDecided, evPayer, evPayee, evSettled)
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
	s.wantNowhere(pre)
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
	s.wantChain(v.TxID, evInit, evLocked,
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
