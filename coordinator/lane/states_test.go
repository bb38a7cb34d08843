package lane

import "testing"

func TestTransitionTablesAreClosedAndComplete(t *testing.T) {
	all := []TxState{Received, Prechecked, PrecheckedSuspended, HReserved, HtlcLocked, HtlcOnchainPending,
		HtlcFulfillRequested, DecidedToSettle, DecidedCancel, PayerExecConfirmed, PayeeExecConfirmed,
		Suspended, FailedExecution, Cancelled, Settled}
	if len(AllowedTransitions) != len(all) {
		t.Fatalf("ALLOWED_TRANSITIONS has %d states, spec 001 §13.6 lists %d", len(AllowedTransitions), len(all))
	}
	for _, s := range all {
		if !s.Known() {
			t.Errorf("state %s missing from ALLOWED_TRANSITIONS", s)
		}
		for _, to := range AllowedTransitions[s] {
			if !to.Known() {
				t.Errorf("%s -> %s targets an undeclared state", s, to)
			}
		}
	}
	for s, want := range map[TxState]bool{Settled: true, Cancelled: true, FailedExecution: true, Received: false, DecidedCancel: false} {
		if s.Terminal() != want {
			t.Errorf("%s.Terminal() = %v, want %v", s, !want, want)
		}
	}
	// Every state is reachable from an entry state and can reach a terminal one.
	reach := map[TxState]bool{}
	var walk func(TxState)
	walk = func(s TxState) {
		if reach[s] {
			return
		}
		reach[s] = true
		for _, n := range AllowedTransitions[s] {
			walk(n)
		}
	}
	for s := range EntryStates {
		walk(s)
	}
	for _, s := range all {
		if !reach[s] {
			t.Errorf("%s is unreachable from the entry states", s)
		}
	}
	// Spec-fixed edges and non-edges.
	for _, e := range []struct {
		from, to TxState
		want     bool
	}{
		{Received, HtlcLocked, true}, {HtlcLocked, HtlcOnchainPending, true}, {HtlcOnchainPending, HtlcFulfillRequested, true},
		{HtlcFulfillRequested, DecidedCancel, false}, // no cancel after a claim (001 §15.3)
		{PayerExecConfirmed, Suspended, true}, {Suspended, FailedExecution, true}, {DecidedCancel, Cancelled, true},
		{Prechecked, PrecheckedSuspended, true}, {DecidedToSettle, DecidedCancel, false}, {Settled, Cancelled, false},
	} {
		if CanTransition(e.from, e.to) != e.want {
			t.Errorf("CanTransition(%s, %s) = %v, want %v", e.from, e.to, !e.want, e.want)
		}
	}
	if EntryStates[HtlcLocked] {
		t.Error("HTLC_LOCKED must not be an entry state (001 §15.3)")
	}
}

func TestGtidTableIsClosed(t *testing.T) {
	for s, nexts := range AllowedGtidTransitions {
		for _, n := range nexts {
			if _, ok := AllowedGtidTransitions[n]; !ok {
				t.Errorf("%s -> %s targets an undeclared GtidState", s, n)
			}
		}
	}
	if CanTransitionGtid(GtReceived, GtSettled) {
		t.Error("GT_RECEIVED -> GT_SETTLED skips the decision (000 §4)")
	}
	for _, e := range [][2]GtidState{{GtReceived, GtPrechecked}, {GtPrechecked, GtDecidedToSettle}, {GtDecidedToSettle, GtSettled}, {GtDecidedToSettle, GtSuspended}} {
		if !CanTransitionGtid(e[0], e[1]) {
			t.Errorf("spec edge %s -> %s missing", e[0], e[1])
		}
	}
	if !GtidEntryStates[GtReceived] || !GtidEntryStates[GtSettled] || len(GtidEntryStates) != 2 {
		t.Errorf("GTID entry states %v", GtidEntryStates)
	}
}

func TestValidOwner(t *testing.T) {
	for o, want := range map[string]bool{"ZC": true, "CYCLE:DNS-1": true, "VENUE:BOJ": true, "CHAIN:default": true,
		"": false, "zc": false, "CYCLE:": false, "BANK:001": false} {
		if ValidOwner(o) != want {
			t.Errorf("ValidOwner(%q) = %v", o, !want)
		}
	}
	if CycleOwner("DNS-1") != "CYCLE:DNS-1" {
		t.Error("CycleOwner")
	}
}
