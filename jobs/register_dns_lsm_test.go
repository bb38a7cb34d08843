package jobs

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// The wiring registers the five bodies under catalogue names the Runner
// accepts.
func TestRegisterDNSAndWindows(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 2, 9, 0, 0, 0, clock.JST))
	led, err := ledger.Open(ctx, filepath.Join(t.TempDir(), ledger.FileName), clk)
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	if err := led.DB().Write(ctx, func(tx *store.Tx) error { _, err := tx.ExecContext(ctx, store.Schema); return err }); err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(orchestrator.Config{DB: led.DB(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	reg := scheduler.NewRegistry()
	if _, _, err := RegisterDNSAndWindows(ctx, reg, DNSAndWindowDeps{DB: led.DB(), Gate: sysmode.Gate{}, Clock: clk, Acceptor: o}); err != nil {
		t.Fatal(err)
	}
	want := []string{"bulk-window", "deferred-window", "dns-intraday-cutoff", "dns-kick", "dns-settle"}
	if got := reg.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("registered %v", got)
	}
	r, err := scheduler.NewRunner(scheduler.Options{Ledger: led, Registry: reg, Config: scheduler.DefaultConfig(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx, scheduler.Request{Job: "dns-kick", BusinessDate: "2026-12-02"})
	if err != nil || res.Steps[0].Summary != "DNS-JPY-20261202-01 kicked: 0 transactions, 0 banks" {
		t.Fatalf("dns-kick = %+v %v", res.Steps, err)
	}
	res, err = r.Run(ctx, scheduler.Request{Job: "deferred-window", BusinessDate: "2026-12-02"})
	if err != nil || res.Steps[0].Summary != "DEFERRED-20261202: 0 candidates, 0 accepted, 0 deferred (OPTIMIZED)" {
		t.Fatalf("deferred-window = %+v %v", res.Steps, err)
	}
}
