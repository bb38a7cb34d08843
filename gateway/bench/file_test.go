package bench

import (
	"context"
	"slices"
	"testing"
)

// A dropped file's records all become transfers, settle after the BULK
// window, get a result file, and every invariant of the online bench
// holds over them.
func TestRunFileSettlesEveryRecordAndHoldsTheInvariants(t *testing.T) {
	rep, err := RunFile(context.Background(), FileOptions{Records: 12, Banks: 3, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Settled != 12 || rep.Cancelled != 0 || rep.Records != 12 || rep.FileBytes != (1+12+2)*122 {
		t.Fatalf("report %+v", rep)
	}
	if !(rep.AcceptedSeconds > 0 && rep.AcceptedSeconds <= rep.SettledSeconds && rep.SettledSeconds <= rep.ResultSeconds) {
		t.Fatalf("instants: accepted %.2f settled %.2f result %.2f", rep.AcceptedSeconds, rep.SettledSeconds, rep.ResultSeconds)
	}
	if len(rep.Invariants) != 5 || rep.ChainsVerified < 12 {
		t.Fatalf("invariants %v, %d chains", rep.Invariants, rep.ChainsVerified)
	}
}

// An AcceptedOnly run stops at the drop ACCEPTED: every record one BULK
// transfer in RECEIVED, every chain verifying, nothing settled.
func TestRunFileAcceptedOnly(t *testing.T) {
	rep, err := RunFile(context.Background(), FileOptions{Records: 20, Banks: 3, DataDir: t.TempDir(), AcceptedOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Settled != 0 || rep.AcceptedSeconds <= 0 || rep.SettledSeconds != 0 || rep.PeakRSSMB <= 0 {
		t.Fatalf("report %+v", rep)
	}
	if !slices.Equal(rep.Invariants, []string{InvAccepted, InvChains}) || rep.ChainsVerified != 20 {
		t.Fatalf("invariants %v, %d chains", rep.Invariants, rep.ChainsVerified)
	}
}

// A file of more than 999,999 records is written in groups: the second
// group's first data record follows the first's trailer and its own
// header.
func TestRecordNoCountsEveryGroupsHeaderAndTrailer(t *testing.T) {
	for _, c := range []struct{ i, want int }{{0, 2}, {999_998, 1_000_000}, {999_999, 1_000_003}, {1_999_997, 2_000_001}, {1_999_998, 2_000_004}} {
		if got := recordNo(c.i); got != c.want {
			t.Errorf("recordNo(%d) = %d, want %d", c.i, got, c.want)
		}
	}
}
