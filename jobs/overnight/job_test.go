package overnight_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/coresim"

	"github.com/zcgw/zcgw/jobs/overnight"
	"github.com/zcgw/zcgw/jobs/overnight/corepickup"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// TestRegisteredJobBodies runs the two registered bodies as the scheduler
// would: receive before the core answered fails (the run is retried), and
// after the batch it ingests.
func TestRegisteredJobBodies(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), true)
	reg := scheduler.NewRegistry()
	if err := overnight.Register(reg, []*overnight.Exchange{e.exchange(t)}); err != nil {
		t.Fatal(err)
	}
	step := func(job string) scheduler.StepFunc {
		j, ok := reg.Lookup(job)
		if !ok || len(j.Steps) != 1 {
			t.Fatalf("job %s not registered", job)
		}
		return j.Steps[0].Run
	}
	sc := scheduler.StepContext{Job: overnight.SendJob, BusinessDate: date, Clock: e.clk}
	sum, err := step(overnight.SendJob)(ctx, sc)
	if err != nil || sum != "delivered 1 files, 6 postings" {
		t.Fatalf("send: %q %v", sum, err)
	}
	if _, err := step(overnight.ReceiveJob)(ctx, sc); err == nil || !strings.Contains(err.Error(), "not answered") {
		t.Fatalf("receive before the batch: %v", err)
	}
	if _, err := corepickup.PickUp(ctx, e.core, e.clk, e.inbound(), e.results(), nil); err != nil {
		t.Fatal(err)
	}
	sum, err = step(overnight.ReceiveJob)(ctx, sc)
	if err != nil || sum != "ingested 1 result files: 4 posted, 2 blocked" {
		t.Fatalf("receive: %q %v", sum, err)
	}
	e.assertExactlyOnce(t)
}

// TestCorePicksUpOnlyInItsBatchWindow: a delivered file waits in the
// inbound folder until the core's batch window opens.
func TestCorePicksUpOnlyInItsBatchWindow(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), true)
	if _, _, err := e.exchange(t).Send(ctx, date); err != nil {
		t.Fatal(err)
	}
	win, err := coresim.ParseWindows("01:00-04:00")
	if err != nil {
		t.Fatal(err)
	}
	core, err := coresim.Open(ctx, coresim.Config{Bank: "001", DBPath: filepath.Join(e.dir, "core-001.db"), Clock: e.clk, Batch: win})
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close()
	if ran, err := corepickup.PickUp(ctx, core, e.clk, e.inbound(), e.results(), nil); err != nil || ran != 0 {
		t.Fatalf("23:30 JST: ran %d %v", ran, err)
	}
	if _, ok, err := e.exchange(t).Receive(ctx); err != nil || ok {
		t.Fatalf("receive before the window: %v %v", ok, err)
	}
	e.clk.Set(night.Add(3 * time.Hour)) // 02:30 JST
	if ran, err := corepickup.PickUp(ctx, core, e.clk, e.inbound(), e.results(), nil); err != nil || ran != 1 {
		t.Fatalf("02:30 JST: ran %d %v", ran, err)
	}
	if _, ok, err := e.exchange(t).Receive(ctx); err != nil || !ok {
		t.Fatalf("receive after the window: %v %v", ok, err)
	}
	e.assertExactlyOnce(t)
}

// TestCorePickupRunAnswersDeliveredFiles: the simulated core's loop
// (corepickup.Run, started by a node for each batch-window bank) picks up
// a delivered file on its own, so Receive finds the answer and ingests it
// exactly once; Run returns ctx's error when stopped.
func TestCorePickupRunAnswersDeliveredFiles(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), true)
	x := e.exchange(t)
	if _, _, err := x.Send(ctx, date); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- corepickup.Run(runCtx, corepickup.RunConfig{Core: e.core, Clock: e.clk, Inbound: e.inbound(), Results: e.results(), Every: 5 * time.Millisecond})
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, ok, err := x.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no result file after 10s of corepickup.Run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	e.assertExactlyOnce(t)
}
