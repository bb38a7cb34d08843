package dns

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand"
	"reflect"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

func TestCycleID(t *testing.T) {
	for _, tc := range []struct {
		ccy, date string
		seq       int
		want      string
		code      string
	}{
		{"JPY", "2026-12-02", 1, "DNS-JPY-20261202-01", ""},
		{"USD", "2026-01-31", 12, "DNS-USD-20260131-12", ""},
		{"jpy", "2026-12-02", 1, "", "INVALID_CURRENCY"},
		{"JPY", "2026-13-02", 1, "", "INVALID_REQUEST"},
		{"JPY", "2026-12-02", 0, "", "INVALID_REQUEST"},
		{"JPY", "2026-12-02", 100, "", "INVALID_REQUEST"},
	} {
		got, err := CycleID(tc.ccy, tc.date, tc.seq)
		if domainerr.Code(err) != tc.code || got != tc.want {
			t.Errorf("CycleID(%s,%s,%d) = %q, %v; want %q %s", tc.ccy, tc.date, tc.seq, got, err, tc.want, tc.code)
			continue
		}
		if tc.code != "" {
			continue
		}
		ccy, date, seq, err := ParseCycleID(got)
		if err != nil || ccy != tc.ccy || date != tc.date || seq != tc.seq {
			t.Errorf("ParseCycleID(%s) = %s %s %d %v", got, ccy, date, seq, err)
		}
	}
	for _, bad := range []string{"", "DNS-2026-12-02", "DNS-JPY-20261302-01", "DNS-JPY-20261202-00", "DNS-JPY-20261202-1"} {
		if _, _, _, err := ParseCycleID(bad); domainerr.Code(err) != "INVALID_REQUEST" {
			t.Errorf("ParseCycleID(%q) = %v, want INVALID_REQUEST", bad, err)
		}
	}
}

// A kick snapshots exactly the settled, netted transactions, hands them to
// the cycle and writes net positions summing to zero; settle moves the
// money on the BOJ accounts and hands them back; re-runs change nothing.
func TestKickAndSettle(t *testing.T) {
	e := newEnv(t, 3)
	ctx := context.Background()
	a := e.settledTx(t, "EXPRESS", "001", "002", 5000, lane.Settled)
	b := e.settledTx(t, "STANDARD", "002", "003", 3000, lane.Settled)
	c := e.settledTx(t, "BULK", "003", "001", 1000, lane.Settled)
	hv := e.settledTx(t, "HIGH_VALUE", "001", "003", 700000, lane.Settled)     // gross at the RTGS venue: never netted
	open := e.settledTx(t, "EXPRESS", "001", "002", 900, lane.DecidedToSettle) // still driven by the orchestrator
	if _, err := e.svc.Fund(ctx, "001", "JPY", 10000); err != nil {
		t.Fatal(err)
	}
	// Settled, but the orchestrator still owes the banks its notifications:
	// left for a later cycle (the orchestrator works ZC-owned rows only).
	unnotified := e.settledTx(t, "EXPRESS", "002", "001", 800, lane.Settled)
	e.exec(t, `INSERT INTO OrchestratorTransfers (txid, issuer_bank_id, request_json, credit_notified_at, created_at, updated_at)
		VALUES (?, '002', '{}', 'x', 'x', 'x')`, unnotified)
	e.exec(t, `INSERT INTO OrchestratorTransfers (txid, issuer_bank_id, request_json, credit_notified_at, debit_settled_at, created_at, updated_at)
		VALUES (?, '001', '{}', 'x', 'x', 'x', 'x')`, a)

	k, err := kickDay(ctx, e.svc, day)
	if err != nil {
		t.Fatal(err)
	}
	id := "DNS-JPY-20261202-01"
	if !k.Applied || k.Cycle.CycleID != id || k.Cycle.State != StateKicked || k.TxCount != 3 {
		t.Fatalf("kick = %+v", k)
	}
	want := []Position{
		{BankID: "001", GrossSend: 5000, GrossReceive: 1000, Net: -4000},
		{BankID: "002", GrossSend: 3000, GrossReceive: 5000, Net: 2000},
		{BankID: "003", GrossSend: 1000, GrossReceive: 3000, Net: 2000},
	}
	got, err := e.svc.Positions(ctx, id)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("positions = %+v %v, want %+v", got, err, want)
	}
	if k.Cycle.NetPositions["001"] != -4000 || k.Cycle.NetPositions["002"] != 2000 || len(k.Cycle.NetPositions) != 3 {
		t.Fatalf("DnsCycles.net_positions = %v", k.Cycle.NetPositions)
	}
	for _, txid := range []string{a, b, c} {
		if o, cyc := e.owner(t, txid); o != "CYCLE:"+id || cyc != id {
			t.Fatalf("%s owner %s cycle %s after kick", txid, o, cyc)
		}
	}
	for _, txid := range []string{hv, open, unnotified} {
		if o, cyc := e.owner(t, txid); o != "ZC" || cyc != "" {
			t.Fatalf("%s must not be snapshotted: owner %s cycle %s", txid, o, cyc)
		}
	}
	before := e.dump(t)
	if k2, err := e.svc.Kick(ctx, id); err != nil || k2.Applied || len(k2.Positions) != 3 {
		t.Fatalf("second kick = %+v %v", k2, err)
	}
	if after := e.dump(t); after != before {
		t.Fatalf("second kick changed rows:\n%s\nvs\n%s", before, after)
	}

	s, err := e.svc.Settle(ctx, id)
	if err != nil || !s.Applied || s.Held || s.Cycle.State != StateSettled || s.Released != 3 {
		t.Fatalf("settle = %+v %v", s, err)
	}
	for b, want := range map[string]int64{"001": 6000, "002": 2000, "003": 2000} {
		if got := e.boj(t, b); got != want {
			t.Errorf("BOJ %s = %d, want %d", b, got, want)
		}
	}
	for _, txid := range []string{a, b, c} {
		if o, cyc := e.owner(t, txid); o != "ZC" || cyc != id {
			t.Fatalf("%s owner %s cycle %s after settle", txid, o, cyc)
		}
	}
	// The open ZC positions are settled: only the transfer left for a later
	// cycle is still open.
	for b, want := range map[string]int64{"001": 800, "002": -800, "003": 0} {
		if got := e.zcOpen(t, b); got != want {
			t.Errorf("ZC position %s = %d after settle, want %d", b, got, want)
		}
	}
	if n := e.count(t, `SELECT COUNT(*) FROM DnsNetPositions WHERE cycle_id = ? AND is_settled = 1`, id); n != 3 {
		t.Fatalf("settled positions = %d", n)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM DnsSettlementPostings WHERE cycle_id = ?`, id); n != 3 {
		t.Fatalf("postings = %d", n)
	}
	before = e.dump(t)
	for i := 0; i < 2; i++ {
		if r, err := e.svc.Settle(ctx, id); err != nil || r.Applied {
			t.Fatalf("re-settle = %+v %v", r, err)
		}
		if r, err := e.svc.Kick(ctx, id); err != nil || r.Applied {
			t.Fatalf("re-kick = %+v %v", r, err)
		}
	}
	if after := e.dump(t); after != before {
		t.Fatalf("re-runs changed rows:\n%s\nvs\n%s", before, after)
	}
	if got := e.events(t, id); !reflect.DeepEqual(got, []string{"DnsKicked", "DnsSettled"}) {
		t.Fatalf("cycle chain = %v", got)
	}
	if rep, err := finality.VerifyChain(ctx, e.db, id); err != nil || !rep.OK() || rep.Entries != 2 {
		t.Fatalf("cycle chain verify = %+v %v", rep, err)
	}
	// The next kick of the day does nothing: the day's cycle is kicked.
	if k3, err := kickDay(ctx, e.svc, day); err != nil || k3.Applied || k3.Cycle.CycleID != id {
		t.Fatalf("second day kick = %+v %v", k3, err)
	}
}

// kickDay runs the daily JPY kick in its own transaction.
func kickDay(ctx context.Context, s *Service, date string) (r KickResult, err error) {
	err = s.db.Write(ctx, func(tx *store.Tx) error {
		r, err = s.KickDayInTx(ctx, tx, date, "JPY")
		return err
	})
	return r, err
}

func TestSettleOpenCycleRefused(t *testing.T) {
	e := newEnv(t, 2)
	ctx := context.Background()
	c, err := e.svc.OpenCycle(ctx, day, "JPY")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Settle(ctx, c.CycleID); domainerr.Code(err) != "INVALID_STATE" {
		t.Fatalf("settle of OPEN = %v", err)
	}
	if _, err := e.svc.Resume(ctx, c.CycleID); domainerr.Code(err) != "INVALID_STATE" {
		t.Fatalf("resume of OPEN = %v", err)
	}
	if _, err := e.svc.Kick(ctx, "DNS-JPY-20261202-09"); domainerr.Code(err) != "NOT_FOUND" {
		t.Fatalf("kick of unknown = %v", err)
	}
}

// A net debtor short of funds holds the cycle (nothing moves, the rows stay
// with the cycle); resume settles once the gap is covered.
func TestHoldAndResume(t *testing.T) {
	e := newEnv(t, 3)
	ctx := context.Background()
	e.settledTx(t, "EXPRESS", "001", "002", 5000, lane.Settled)
	e.settledTx(t, "EXPRESS", "003", "002", 2000, lane.Settled)
	x := e.settledTx(t, "EXPRESS", "002", "001", 1000, lane.Settled)
	// nets: 001 -4000, 002 +6000, 003 -2000
	e.svc.Fund(ctx, "001", "JPY", 1000)
	e.svc.Fund(ctx, "003", "JPY", 5000)
	k, err := kickDay(ctx, e.svc, day)
	if err != nil {
		t.Fatal(err)
	}
	id := k.Cycle.CycleID
	s, err := e.svc.Settle(ctx, id)
	if err != nil || !s.Applied || !s.Held {
		t.Fatalf("settle = %+v %v", s, err)
	}
	wantSF := []Shortfall{{BankID: "001", Required: 4000, Available: 1000, Gap: 3000}}
	if !reflect.DeepEqual(s.Shortfalls, wantSF) {
		t.Fatalf("shortfalls = %+v", s.Shortfalls)
	}
	c := s.Cycle
	if c.State != StateHoldActive || c.IgsMode != IgsRingfenced || c.PublicMessageID != "DNS_HOLD_2026-12-02" ||
		!reflect.DeepEqual(c.HoldCausing, []string{"001"}) {
		t.Fatalf("held cycle = %+v", c)
	}
	var hr holdReason
	if err := json.Unmarshal([]byte(c.HoldReason), &hr); err != nil || hr.Reason != "BOJ_INSUFFICIENT_FUNDS" || !reflect.DeepEqual(hr.Shortfalls, wantSF) {
		t.Fatalf("hold_reason = %s (%v)", c.HoldReason, err)
	}
	if e.boj(t, "001") != 1000 || e.boj(t, "002") != 0 || e.boj(t, "003") != 5000 || e.zcOpen(t, "002") != 6000 {
		t.Fatal("a held cycle moved money")
	}
	if o, _ := e.owner(t, x); o != "CYCLE:"+id {
		t.Fatalf("held cycle released its rows: owner %s", o)
	}

	before := e.dump(t)
	if r, err := e.svc.Settle(ctx, id); err != nil || r.Applied || !r.Held {
		t.Fatalf("settle of held = %+v %v", r, err)
	}
	if r, err := e.svc.Resume(ctx, id); err != nil || r.Applied || !r.Held || r.Shortfalls[0].Gap != 3000 {
		t.Fatalf("resume while short = %+v %v", r, err)
	}
	if after := e.dump(t); after != before {
		t.Fatal("settle/resume of a still-short cycle changed rows")
	}

	e.svc.Fund(ctx, "001", "JPY", 2999)
	if r, err := e.svc.Resume(ctx, id); err != nil || r.Applied || r.Shortfalls[0].Gap != 1 {
		t.Fatalf("resume 1 yen short = %+v %v", r, err)
	}
	e.svc.Fund(ctx, "001", "JPY", 1)
	r, err := e.svc.Resume(ctx, id)
	if err != nil || !r.Applied || r.Held || r.Cycle.State != StateSettled || r.Released != 3 {
		t.Fatalf("resume = %+v %v", r, err)
	}
	c = r.Cycle
	if c.IgsMode != IgsNormal || c.PublicMessageID != "" || c.HoldReason != "" || c.HoldCausing != nil {
		t.Fatalf("settled cycle keeps hold fields: %+v", c)
	}
	for b, want := range map[string]int64{"001": 0, "002": 6000, "003": 3000} {
		if got := e.boj(t, b); got != want {
			t.Errorf("BOJ %s = %d, want %d", b, got, want)
		}
	}
	if o, _ := e.owner(t, x); o != "ZC" {
		t.Fatalf("owner after resume %s", o)
	}
	if got := e.events(t, id); !reflect.DeepEqual(got, []string{"DnsKicked", "DnsHoldActivated", "DnsResumed", "DnsSettled"}) {
		t.Fatalf("cycle chain = %v", got)
	}
	before = e.dump(t)
	if r, err := e.svc.Resume(ctx, id); err != nil || r.Applied {
		t.Fatalf("second resume = %+v %v", r, err)
	}
	if e.dump(t) != before {
		t.Fatal("second resume changed rows")
	}
}

// The intraday cutoff settles the open cycle and opens the next; later
// settlements go to the next cycle only.
func TestIntradayCutoff(t *testing.T) {
	e := newEnv(t, 2)
	ctx := context.Background()
	e.svc.Fund(ctx, "001", "JPY", 100000)
	e.svc.Fund(ctx, "002", "JPY", 100000)
	a := e.settledTx(t, "EXPRESS", "001", "002", 4000, lane.Settled)
	r1, err := e.svc.IntradayCutoff(ctx, day, "JPY")
	if err != nil {
		t.Fatal(err)
	}
	if r1.Closed.CycleID != "DNS-JPY-20261202-01" || r1.Closed.State != StateSettled || r1.Next.CycleID != "DNS-JPY-20261202-02" ||
		r1.Next.State != StateOpen || r1.Next.IntradaySeq != 2 || r1.Kick.TxCount != 1 {
		t.Fatalf("first cutoff = %+v", r1)
	}
	b := e.settledTx(t, "EXPRESS", "002", "001", 1500, lane.Settled)
	c := e.settledTx(t, "EXPRESS", "002", "001", 500, lane.Settled)
	r2, err := e.svc.IntradayCutoff(ctx, day, "JPY")
	if err != nil {
		t.Fatal(err)
	}
	if r2.Closed.CycleID != "DNS-JPY-20261202-02" || r2.Closed.State != StateSettled || r2.Next.CycleID != "DNS-JPY-20261202-03" || r2.Kick.TxCount != 2 {
		t.Fatalf("second cutoff = %+v", r2)
	}
	for txid, want := range map[string]string{a: "DNS-JPY-20261202-01", b: "DNS-JPY-20261202-02", c: "DNS-JPY-20261202-02"} {
		if o, cyc := e.owner(t, txid); cyc != want || o != "ZC" {
			t.Errorf("%s in %s owner %s, want %s", txid, cyc, o, want)
		}
	}
	if e.boj(t, "001") != 100000-4000+2000 || e.boj(t, "002") != 100000+4000-2000 {
		t.Fatalf("BOJ after two cutoffs: 001=%d 002=%d", e.boj(t, "001"), e.boj(t, "002"))
	}
	if got := e.events(t, "DNS-JPY-20261202-01"); !reflect.DeepEqual(got, []string{"DnsKicked", "DnsSettled", "DnsIntradayCutoff"}) {
		t.Fatalf("chain = %v", got)
	}
	cycles, err := e.svc.CyclesOf(ctx, day, "JPY")
	if err != nil || len(cycles) != 3 || cycles[2].State != StateOpen {
		t.Fatalf("cycles = %+v %v", cycles, err)
	}
	// The day's kick now takes the cycle the cutoff opened.
	k, err := kickDay(ctx, e.svc, day)
	if err != nil || !k.Applied || k.Cycle.CycleID != "DNS-JPY-20261202-03" || k.TxCount != 0 {
		t.Fatalf("day kick after cutoffs = %+v %v", k, err)
	}
}

// A cutoff whose debtor is short leaves the closed cycle held and still
// opens the next one.
func TestIntradayCutoffHeld(t *testing.T) {
	e := newEnv(t, 2)
	ctx := context.Background()
	e.settledTx(t, "EXPRESS", "001", "002", 4000, lane.Settled)
	r, err := e.svc.IntradayCutoff(ctx, day, "JPY")
	if err != nil {
		t.Fatal(err)
	}
	if r.Closed.State != StateHoldActive || !r.Settle.Held || r.Next.State != StateOpen {
		t.Fatalf("cutoff = %+v", r)
	}
}

// Net positions sum to zero in every cycle, equal receipts minus payments
// per bank, and settlement moves exactly them: a randomized property test.
func TestNetPositionsZeroSumProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(20261202))
	for iter := 0; iter < 12; iter++ {
		nb := 2 + rng.Intn(6)
		e := newEnv(t, nb)
		ctx := context.Background()
		wantNet := map[string]int64{}
		for i := 0; i < rng.Intn(40); i++ {
			p, q := 1+rng.Intn(nb), 1+rng.Intn(nb)
			amt := int64(1 + rng.Intn(5_000_000))
			lanes := []string{"EXPRESS", "STANDARD", "BULK", "DEFERRED", "HIGH_VALUE"}
			ln := lanes[rng.Intn(len(lanes))]
			e.settledTx(t, ln, bank(p), bank(q), amt, lane.Settled)
			if ln != "HIGH_VALUE" {
				wantNet[bank(p)] -= amt
				wantNet[bank(q)] += amt
			}
		}
		for i := 1; i <= nb; i++ {
			e.svc.Fund(ctx, bank(i), "JPY", 1_000_000_000)
		}
		k, err := kickDay(ctx, e.svc, day)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, p := range k.Positions {
			sum += p.Net
			if p.Net != wantNet[p.BankID] || p.GrossReceive-p.GrossSend != p.Net {
				t.Fatalf("iter %d: bank %s net %d, want %d", iter, p.BankID, p.Net, wantNet[p.BankID])
			}
		}
		if sum != 0 {
			t.Fatalf("iter %d: positions sum to %d", iter, sum)
		}
		if n := e.count(t, `SELECT COALESCE(SUM(net_position), 0) FROM DnsNetPositions WHERE cycle_id = ?`, k.Cycle.CycleID); n != 0 {
			t.Fatalf("iter %d: DnsNetPositions sum %d", iter, n)
		}
		if _, err := e.svc.Settle(ctx, k.Cycle.CycleID); err != nil {
			t.Fatal(err)
		}
		var total int64
		for i := 1; i <= nb; i++ {
			bal := e.boj(t, bank(i))
			total += bal
			if bal != 1_000_000_000+wantNet[bank(i)] {
				t.Fatalf("iter %d: BOJ %s = %d, want %d", iter, bank(i), bal, 1_000_000_000+wantNet[bank(i)])
			}
		}
		if total != int64(nb)*1_000_000_000 {
			t.Fatalf("iter %d: BOJ total changed to %d", iter, total)
		}
		for i := 1; i <= nb; i++ {
			if z := e.zcOpen(t, bank(i)); z != 0 {
				t.Fatalf("iter %d: ZC position %s = %d after settle", iter, bank(i), z)
			}
		}
	}
}

// Two (or more) racing kicks of one cycle: exactly one snapshot.
func TestConcurrentKickOneSnapshot(t *testing.T) {
	e := newEnv(t, 3)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		e.settledTx(t, "EXPRESS", bank(1+i%3), bank(1+(i+1)%3), int64(100+i), lane.Settled)
	}
	c, err := e.svc.OpenCycle(ctx, day, "JPY")
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	applied := make(chan KickResult, n)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.svc.Kick(ctx, c.CycleID)
			if err != nil {
				errs <- err
				return
			}
			if r.Applied {
				applied <- r
			}
		}()
	}
	wg.Wait()
	close(applied)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(applied) != 1 {
		t.Fatalf("%d kicks applied, want 1", len(applied))
	}
	if r := <-applied; r.TxCount != 20 {
		t.Fatalf("snapshot took %d rows", r.TxCount)
	}
	if got := e.events(t, c.CycleID); !reflect.DeepEqual(got, []string{"DnsKicked"}) {
		t.Fatalf("chain = %v", got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM DnsNetPositions WHERE cycle_id = ?`, c.CycleID); n != 3 {
		t.Fatalf("%d position rows", n)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM Transactions WHERE owner = ?`, "CYCLE:"+c.CycleID); n != 20 {
		t.Fatalf("%d rows owned by the cycle", n)
	}
}

// The job bodies run through the scheduler: once per business date, the
// effects committed with the step.
func TestJobsThroughScheduler(t *testing.T) {
	e := newEnv(t, 2)
	ctx := context.Background()
	e.svc.Fund(ctx, "001", "JPY", 50000)
	e.settledTx(t, "EXPRESS", "001", "002", 7000, lane.Settled)
	reg := scheduler.NewRegistry()
	for _, j := range e.svc.Jobs() {
		if err := reg.Register(j); err != nil {
			t.Fatal(err)
		}
	}
	r, err := scheduler.NewRunner(scheduler.Options{Ledger: e.led, Registry: reg, Config: scheduler.DefaultConfig(), Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, scheduler.Request{Job: JobKick, BusinessDate: day}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, scheduler.Request{Job: JobKick, BusinessDate: day}); !errors.Is(err, ledger.ErrAlreadyCompleted) {
		t.Fatalf("second run = %v", err)
	}
	res, err := r.Run(ctx, scheduler.Request{Job: JobSettle, BusinessDate: day})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps[0].Summary != "DNS-JPY-20261202-01 SETTLED" {
		t.Fatalf("settle summary %q", res.Steps[0].Summary)
	}
	if e.boj(t, "001") != 43000 || e.boj(t, "002") != 7000 {
		t.Fatalf("BOJ 001=%d 002=%d", e.boj(t, "001"), e.boj(t, "002"))
	}
	res, err = r.Run(ctx, scheduler.Request{Job: JobIntradayCutoff, BusinessDate: day, Slot: "12:00"})
	if err != nil || res.Steps[0].Summary != "DNS-JPY-20261202-02 SETTLED (0 transactions), opened DNS-JPY-20261202-03" {
		t.Fatalf("cutoff = %+v %v", res.Steps, err)
	}
}

// Racing settles (and resumes) of one kicked cycle: the money moves once.
func TestConcurrentSettleOnePosting(t *testing.T) {
	e := newEnv(t, 2)
	ctx := context.Background()
	e.settledTx(t, "EXPRESS", "001", "002", 5000, lane.Settled)
	e.svc.Fund(ctx, "001", "JPY", 5000)
	k, err := kickDay(ctx, e.svc, day)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var r SettleResult
			var err error
			if i%2 == 0 {
				r, err = e.svc.Settle(ctx, k.Cycle.CycleID)
			} else {
				r, err = e.svc.Resume(ctx, k.Cycle.CycleID)
				if domainerr.Code(err) == "INVALID_STATE" { // resume before the settle: not held
					err = nil
				}
			}
			if err != nil {
				t.Error(err)
				return
			}
			if r.Applied {
				mu.Lock()
				applied++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if applied != 1 {
		t.Fatalf("%d settles applied, want 1", applied)
	}
	if e.boj(t, "001") != 0 || e.boj(t, "002") != 5000 {
		t.Fatalf("BOJ 001=%d 002=%d", e.boj(t, "001"), e.boj(t, "002"))
	}
	if got := e.events(t, k.Cycle.CycleID); !reflect.DeepEqual(got, []string{"DnsKicked", "DnsSettled"}) {
		t.Fatalf("chain = %v", got)
	}
}
