package bench

import (
	"context"
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
