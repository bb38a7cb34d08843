package overnight_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/overnight"
	"github.com/zcgw/zcgw/jobs/overnight/corepickup"
	"github.com/zcgw/zcgw/outbox"
)

// 2026-12-01 23:30 JST: the night of business date 2026-12-01.
var night = time.Date(2026, 12, 1, 14, 30, 0, 0, time.UTC)

const date = "2026-12-01"

// CrashPoints are every step boundary of one exchange, in order.
var crashPoints = []string{"cut:committed", "deliver:tmp-written", "deliver:renamed", "deliver:recorded",
	"core:ran", "ingest:committed", "cases:opened"}

type env struct {
	dir   string
	clk   *clock.Manual
	db    *store.DB // the adapter's database (holds the exchange's tables)
	zc    *store.DB // the coordinator's database (Cases)
	core  *coresim.Core
	crash func(string) error
}

func (e *env) inbound() string { return filepath.Join(e.dir, "core-inbound") }
func (e *env) results() string { return filepath.Join(e.dir, "core-results") }

// openEnv opens (creating when seed is true) the databases under dir.
func openEnv(t testing.TB, dir string, seed bool) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{dir: dir, clk: clock.NewManual(night)}
	var err error
	if e.db, err = store.Open(ctx, filepath.Join(dir, "adapter-001.db"), outbox.Schema+overnight.Schema); err != nil {
		t.Fatal(err)
	}
	if e.zc, err = store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db")); err != nil {
		t.Fatal(err)
	}
	if e.core, err = coresim.Open(ctx, coresim.Config{Bank: "001", DBPath: filepath.Join(dir, "core-001.db"), Clock: e.clk}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close(); e.zc.Close(); e.core.Close() })
	if seed {
		for i, bal := range []int64{100000, 50000, 0} {
			if err := e.core.OpenAccount(ctx, fmt.Sprintf("100-1-%07d", i+1), "YAMADA", bal); err != nil {
				t.Fatal(err)
			}
		}
		ob := e.outbox(t)
		postings := []struct {
			kind    outbox.Kind
			account string
			amount  int64
		}{
			{outbox.Credit, "100-1-0000001", 1000},
			{outbox.Debit, "100-1-0000001", 30000},
			{outbox.Debit, "100-1-0000002", 60000}, // more than the balance: refused (NSF)
			{outbox.Credit, "100-1-0000003", 2500},
			{outbox.Credit, "100-1-0000009", 700}, // no such account
			{outbox.Debit, "100-1-0000002", 10000},
		}
		if err := e.db.Write(ctx, func(tx *store.Tx) error {
			for i, p := range postings {
				if _, err := ob.Enqueue(ctx, tx, outbox.Posting{Ref: fmt.Sprintf("ONREF%03d", i+1), TxID: fmt.Sprintf("TX-%03d", i+1),
					Bank: "001", Account: p.account, Kind: p.kind, Amount: p.amount, Route: outbox.RouteFILE}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// outbox is the adapter's posting outbox as a fresh process would open it.
func (e *env) outbox(t testing.TB) *outbox.Outbox {
	t.Helper()
	ob, err := outbox.New(outbox.Config{DB: e.db, Cases: adapter.CoordinatorCases{DB: e.zc, Cases: cases.New(e.clk, nil, 0)},
		Clock: e.clk, Actor: "BANK_001"})
	if err != nil {
		t.Fatal(err)
	}
	return ob
}

func (e *env) exchange(t testing.TB) *overnight.Exchange {
	t.Helper()
	cfg := overnight.Config{Bank: "001", DB: e.db, Outbox: e.outbox(t), Inbound: e.inbound(), Results: e.results(), Clock: e.clk}
	if e.crash != nil {
		cfg = overnight.WithCrash(cfg, e.crash)
	}
	x, err := overnight.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// cycle is one night: send, the core's batch pickup, receive.
func (e *env) cycle(t testing.TB) error {
	ctx := context.Background()
	x := e.exchange(t)
	if _, _, err := x.Send(ctx, date); err != nil {
		return err
	}
	if _, err := corepickup.PickUp(ctx, e.core, e.clk, e.inbound(), e.results(), e.crash); err != nil {
		return err
	}
	_, _, err := x.Receive(ctx)
	return err
}

func count(t testing.TB, db *store.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), q, args...).Scan(&n)
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// assertExactlyOnce checks the night's outcome: every posting answered once,
// every applied one journalled once at the core, balances, one Case per
// refusal, one result file recorded.
func (e *env) assertExactlyOnce(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []struct {
		db   *store.DB
		q    string
		want int
	}{
		{e.db, `SELECT COUNT(*) FROM AdapterOutbox WHERE status = 'APPLIED' AND route = 'FILE' AND sends = 1`, 4},
		{e.db, `SELECT COUNT(*) FROM AdapterOutbox WHERE status = 'BLOCKED' AND case_id IS NOT NULL`, 2},
		{e.db, `SELECT COUNT(*) FROM AdapterOutbox WHERE status NOT IN ('APPLIED','BLOCKED')`, 0},
		{e.db, `SELECT COUNT(*) FROM AdapterOutbox WHERE ref = 'ONREF003' AND reason_code = 'INSUFFICIENT_FUNDS'`, 1},
		{e.db, `SELECT COUNT(*) FROM AdapterOutbox WHERE ref = 'ONREF005' AND reason_code = 'ACCOUNT_NOT_FOUND'`, 1},
		{e.db, `SELECT COUNT(*) FROM OvernightFiles`, 1},
		{e.db, `SELECT COUNT(*) FROM OvernightFiles WHERE state = 'ANSWERED' AND sha256 IS NOT NULL`, 1},
		{e.db, `SELECT COUNT(*) FROM OvernightResultFiles`, 1},
		{e.core.DB(), `SELECT COUNT(*) FROM CoreJournal WHERE source = 'BATCH'`, 4},
		{e.core.DB(), `SELECT COUNT(*) FROM (SELECT ref FROM CoreJournal GROUP BY ref HAVING COUNT(*) > 1)`, 0},
		{e.core.DB(), `SELECT COUNT(*) FROM CoreBatchRuns`, 1},
		{e.zc, `SELECT COUNT(*) FROM Cases WHERE detection_path = 'OVERNIGHT_RESULT'`, 2},
	} {
		if got := count(t, c.db, c.q); got != c.want {
			t.Errorf("%s = %d, want %d", c.q, got, c.want)
		}
	}
	for acct, want := range map[string]int64{"100-1-0000001": 71000, "100-1-0000002": 40000, "100-1-0000003": 2500} {
		b, err := e.core.Balance(ctx, acct)
		if err != nil || b.Balance != want {
			t.Errorf("core balance %s = %d (%v), want %d", acct, b.Balance, err, want)
		}
	}
	left, _ := filepath.Glob(filepath.Join(e.inbound(), ".*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestOvernightExchange(t *testing.T) {
	e := openEnv(t, t.TempDir(), true)
	if err := e.cycle(t); err != nil {
		t.Fatal(err)
	}
	e.assertExactlyOnce(t)
	// Another night with nothing queued: nothing happens.
	if err := e.cycle(t); err != nil {
		t.Fatal(err)
	}
	e.assertExactlyOnce(t)
	ps, err := e.outbox(t).List(context.Background(), outbox.Filter{Status: outbox.Applied})
	if err != nil || len(ps) != 4 || ps[0].CoreRef == "" || ps[0].FileSeq != 1 || ps[0].FileID != "001/2026-12-01/1" {
		t.Fatalf("applied %+v %v", ps, err)
	}
}

// TestOvernightCrashAtEveryStep aborts the night at each step boundary (as
// a crash would: nothing after the point runs) and restarts it.
func TestOvernightCrashAtEveryStep(t *testing.T) {
	for _, point := range crashPoints {
		t.Run(point, func(t *testing.T) {
			e := openEnv(t, t.TempDir(), true)
			crashed := false
			e.crash = func(p string) error {
				if p == point && !crashed {
					crashed = true
					return errors.New("crash at " + p)
				}
				return nil
			}
			if err := e.cycle(t); err == nil || !crashed {
				t.Fatalf("no crash at %s: %v", point, err)
			}
			// Restart: a fresh exchange on the same files and databases.
			if err := e.cycle(t); err != nil {
				t.Fatalf("restart: %v", err)
			}
			if err := e.cycle(t); err != nil { // and once more: nothing changes
				t.Fatalf("second restart: %v", err)
			}
			e.assertExactlyOnce(t)
		})
	}
}

// TestOvernightKilledAtEveryStep runs the night in a child process that
// SIGKILLs itself at each step boundary, then finishes it in this process.
func TestOvernightKilledAtEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, point := range crashPoints {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			seed := openEnv(t, dir, true)
			seed.db.Close()
			seed.zc.Close()
			seed.core.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestOvernightChildProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), "ZCGW_OVERNIGHT_CHILD_DIR="+dir, "ZCGW_OVERNIGHT_CHILD_POINT="+point)
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) {
				t.Fatalf("child was not killed: %v\n%s", err, out)
			}
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child ended with %v, want SIGKILL\n%s", err, out)
			}
			e := openEnv(t, dir, false)
			if err := e.cycle(t); err != nil {
				t.Fatalf("restart after kill: %v", err)
			}
			if err := e.cycle(t); err != nil {
				t.Fatalf("second restart: %v", err)
			}
			e.assertExactlyOnce(t)
		})
	}
}

// TestOvernightChildProcess is the child of TestOvernightKilledAtEveryStep.
func TestOvernightChildProcess(t *testing.T) {
	dir := os.Getenv("ZCGW_OVERNIGHT_CHILD_DIR")
	if dir == "" {
		t.Skip("only runs as the child of TestOvernightKilledAtEveryStep")
	}
	point := os.Getenv("ZCGW_OVERNIGHT_CHILD_POINT")
	e := openEnv(t, dir, false)
	e.crash = func(p string) error {
		if p == point {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
		return nil
	}
	_ = e.cycle(t)
	t.Fatalf("reached the end without being killed at %s", point)
}

func TestIngestRefusesChangedOrMismatchedResults(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), true)
	x := e.exchange(t)
	f, ok, err := x.Send(ctx, date)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := corepickup.PickUp(ctx, e.core, e.clk, e.inbound(), e.results(), nil); err != nil {
		t.Fatal(err)
	}
	resultPath := filepath.Join(e.results(), f.ResultName())
	good, err := os.ReadFile(resultPath)
	if err != nil {
		t.Fatal(err)
	}
	// A detail answered for another account (hash total recomputed would
	// still not echo the posting): change the account number of detail 1
	// and fix nothing else -> the format check already fails.
	bad := append([]byte(nil), good...)
	i := strings.Index(string(bad), "\r\nD") + 2 + 115 // detail 1, 口座番号 starts at byte 116
	bad[i] = '9'
	if err := os.WriteFile(resultPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := x.Ingest(ctx, f); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("tampered result: %v", err)
	}
	if n := count(t, e.db, `SELECT COUNT(*) FROM AdapterOutbox WHERE status = 'IN_FILE'`); n != 6 {
		t.Fatalf("%d postings still in file after a refused result, want 6 (nothing applied)", n)
	}
	// Two details' references swapped: the format and trailer are still
	// valid, but the details no longer echo their postings.
	swapped := append([]byte(nil), good...)
	d1 := strings.Index(string(swapped), "\r\nD") + 2
	d2 := d1 + 202
	ref1 := append([]byte(nil), swapped[d1+47:d1+79]...)
	copy(swapped[d1+47:d1+79], swapped[d2+47:d2+79])
	copy(swapped[d2+47:d2+79], ref1)
	if err := os.WriteFile(resultPath, swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := x.Ingest(ctx, f); domainerr.Code(err) != "INVALID_REQUEST" || !strings.Contains(err.Error(), "does not echo") {
		t.Fatalf("swapped refs: %v", err)
	}
	if n := count(t, e.db, `SELECT COUNT(*) FROM AdapterOutbox WHERE status = 'IN_FILE'`); n != 6 {
		t.Fatalf("%d postings still in file after a refused result, want 6", n)
	}
	// The genuine file is ingested once; a copy under another name changes nothing.
	if err := os.WriteFile(resultPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	in, ok, err := x.Ingest(ctx, f)
	if err != nil || !ok || in.Posted != 4 || in.Rejected != 2 || in.AlreadyIngested {
		t.Fatalf("ingest %+v %v %v", in, ok, err)
	}
	in, ok, err = x.Ingest(ctx, f)
	if err != nil || !in.AlreadyIngested {
		t.Fatalf("second ingest %+v %v", in, err)
	}
	if err := os.WriteFile(resultPath+".copy", good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(resultPath+".copy", filepath.Join(e.results(), "COPY-"+f.ResultName())); err != nil {
		t.Fatal(err)
	}
	renamed := f
	renamed.Name = "COPY-" + f.Name
	if in, _, err = x.Ingest(ctx, renamed); err != nil || !in.AlreadyIngested {
		t.Fatalf("same content under another name %+v %v", in, err)
	}
	// Same name, different content: refused.
	other := append([]byte(nil), good...)
	copy(other[28:42], "20261201235959") // header 作成日時
	if err := os.WriteFile(resultPath, other, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := x.Ingest(ctx, f); domainerr.Code(err) != "IDEMPOTENCY_KEY_CONFLICT" {
		t.Fatalf("changed content under the same name: %v", err)
	}
	if _, err := x.OpenMissingCases(ctx); err != nil {
		t.Fatal(err)
	}
	e.assertExactlyOnce(t)
}

// TestFileRouteRefusesWhatTheFileCannotCarry: a FILE posting must fit the
// file's fields (account BBB-T-NNNNNNN, ref 32, txid 36); nothing is queued.
func TestFileRouteRefusesWhatTheFileCannotCarry(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), true)
	ob := e.outbox(t)
	cases := []struct {
		p    outbox.Posting
		code string
	}{
		{outbox.Posting{Ref: "ONREF001", TxID: "T", Bank: "001", Account: "100-1-0000001", Kind: outbox.Credit, Amount: 1}, "IDEMPOTENCY_KEY_CONFLICT"},
		{outbox.Posting{Ref: "N2", TxID: "T", Bank: "001", Account: "1001-0000001", Kind: outbox.Credit, Amount: 1}, "INVALID_REQUEST"},
		{outbox.Posting{Ref: "N3", TxID: "T", Bank: "001", Account: "100-1-0000001", Kind: outbox.Credit, Amount: 0}, "INVALID_AMOUNT"},
		{outbox.Posting{Ref: strings.Repeat("R", 33), TxID: "T", Bank: "001", Account: "100-1-0000001", Kind: outbox.Credit, Amount: 1}, "INVALID_REQUEST"},
		{outbox.Posting{Ref: "N5", TxID: strings.Repeat("T", 37), Bank: "001", Account: "100-1-0000001", Kind: outbox.Credit, Amount: 1}, "INVALID_REQUEST"},
	}
	for _, c := range cases {
		c.p.Route = outbox.RouteFILE
		err := e.db.Write(ctx, func(tx *store.Tx) error {
			_, err := ob.Enqueue(ctx, tx, c.p)
			return err
		})
		if domainerr.Code(err) != c.code {
			t.Errorf("%+v: %v, want %s", c.p, err, c.code)
		}
	}
	if n := count(t, e.db, `SELECT COUNT(*) FROM AdapterOutbox`); n != 6 {
		t.Fatalf("%d rows queued, want the 6 seeded", n)
	}
}
