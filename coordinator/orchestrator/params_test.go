package orchestrator

import (
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/params"
)

// A PR-EXEC-TIMEOUT set in the parameter ledger takes over from the
// orchestrator's configured default at the next sweep, without a new
// Orchestrator: with 60s configured and 90s set, a transfer waiting 61s is
// left alone and one waiting 91s is suspended, its payload naming 90s.
func TestTimeoutSweepReadsPRExecTimeoutAtUseTime(t *testing.T) {
	down := domainerr.New("BANK_ERROR", "unreachable", nil)
	f := newFixture(t, func(c *Config) {
		c.Timeouts = Timeouts{Exec: time.Minute, AdapterDownAfter: 100}
		c.Backoff = Backoff{Base: time.Hour, Max: time.Hour}
	})
	l := params.NewLedger(f.db, f.o.flog, f.clk, nil, f.o.Lease())
	if _, err := l.Set(f.ctx, params.Change{Name: params.ExecTimeout, Old: 60, New: 90, EvidenceRef: "CAB-5", Reason: "slow cores", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	f.b.failWith(bankapi.ExecuteDebit, down, false)
	a := f.submit(pi(LaneExpress, 1000), "exec-timeout")
	f.run()
	if v := f.view(a.TxID); v.State != "DECIDED_TO_SETTLE" {
		t.Fatalf("%+v", v)
	}
	f.clk.Advance(61 * time.Second)
	if res, err := f.o.TimeoutSweep(f.ctx); err != nil || res.ExecTimeouts != 0 {
		t.Fatalf("suspended at the configured 60s despite the ledger's 90s: %+v %v", res, err)
	}
	f.clk.Advance(30 * time.Second)
	if res, err := f.o.TimeoutSweep(f.ctx); err != nil || res.ExecTimeouts != 1 {
		t.Fatalf("not suspended after the ledger's 90s: %+v %v", res, err)
	}
	if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND CAST(json_extract(payload_json, '$.timeout_sec') AS INTEGER) = 90`, a.TxID); n != 1 {
		t.Fatalf("suspension entries naming 90s: %d", n)
	}
}
