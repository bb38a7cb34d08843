package signing

import (
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/params"
)

// A verifier with Params reads PR-SIGNATURE-SKEW at each check: a request
// signed 2 minutes ago passes under the default 5 minutes and is refused
// with TIMESTAMP_SKEW once an operator set 1 minute, on the same verifier.
func TestVerifierReadsPRSignatureSkewAtUseTime(t *testing.T) {
	f := newFixture(t)
	f.v.Params = params.Reader{DB: f.db}
	if _, err := f.v.CheckHeaders(f.ctx, f.sign(t, "KEY-ZC-1", f.priv, t0.Add(-2*time.Minute))); err != nil {
		t.Fatalf("2 minutes old under the default skew: %v", err)
	}
	l := params.NewLedger(f.db, finality.New(f.clk), f.clk, nil, 0)
	if _, err := l.Set(f.ctx, params.Change{Name: params.SignatureClockSkew, Old: 300, New: 60, EvidenceRef: "SEC-7", Reason: "tighter", By: "sec"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.v.CheckHeaders(f.ctx, f.sign(t, "KEY-ZC-1", f.priv, t0.Add(-2*time.Minute))); domainerr.Code(err) != "TIMESTAMP_SKEW" {
		t.Fatalf("2 minutes old under a 1-minute skew: %v", err)
	}
	h := SignQuery("KEY-ZC-1", f.priv, t0.Add(-90*time.Second), "GET", "/api/transactions/TX-1", "001", "P01")
	if err := f.v.VerifyQuery(f.ctx, h, "GET", "/api/transactions/TX-1", "001", "P01"); domainerr.Code(err) != "TIMESTAMP_SKEW" {
		t.Fatalf("query 90s old under a 1-minute skew: %v", err)
	}
}
