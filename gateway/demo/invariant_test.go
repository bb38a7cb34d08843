package demo

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// An invariant failure names its invariant, survives wrapping, and is the
// catalog's INVARIANT_VIOLATION underneath.
func TestInvariantError(t *testing.T) {
	for _, c := range []struct {
		inv, detail string
	}{
		{InvZeroSumBank, "bank 001: customers moved -100 but its settlement position (ZC + BOJ) moved 0"},
		{InvDriftCase, "the out-of-band change of 5000 at 002/KOBAYASHI was found as a drift of 0"},
	} {
		err := fmt.Errorf("demo: %w", violated(c.inv, "%s", c.detail))
		var inv *InvariantError
		if !errors.As(err, &inv) || inv.Invariant != c.inv || inv.Detail != c.detail {
			t.Fatalf("errors.As(%v) = %+v", err, inv)
		}
		if want := "demo: demo: invariant " + c.inv + " failed: " + c.detail; err.Error() != want {
			t.Errorf("Error() = %q, want %q", err.Error(), want)
		}
		if domainerr.Code(err) != "INVARIANT_VIOLATION" {
			t.Errorf("code %q, want INVARIANT_VIOLATION", domainerr.Code(err))
		}
	}
}

func TestYen(t *testing.T) {
	for in, want := range map[int64]string{0: "¥0", 999: "¥999", 1000: "¥1,000", -120000: "¥-120,000", 60_000_000: "¥60,000,000"} {
		if got := yen(in); got != want {
			t.Errorf("yen(%d) = %s, want %s", in, got, want)
		}
	}
}
