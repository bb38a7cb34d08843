package batchwindow

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/lsm"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// 2026-12-02 09:00 JST: the first default BULK window.
var nine = time.Date(2026, 12, 2, 9, 0, 0, 0, clock.JST)

const day = "2026-12-02"

// queueAcceptor is the orchestrator's side of the port in these tests: it
// records the hand-over in a table of its own inside the window's
// transaction, as the orchestrator's work queue does.
type queueAcceptor struct{ fail string }

func (a queueAcceptor) AcceptBatchInTx(ctx context.Context, tx *store.Tx, txid string) error {
	if txid == a.fail {
		return errors.New("queue unavailable")
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO TestHandOver (txid) VALUES (?)`, txid)
	return err
}

type env struct {
	db    *store.DB
	led   *ledger.Ledger
	clk   *clock.Manual
	lanes *lane.Lanes
	win   *Window
	seq   int
}

func newEnv(t testing.TB, cfg Config, hLimits map[string]int64) *env {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewManual(nine.Add(-3 * time.Hour))
	led, err := ledger.Open(ctx, filepath.Join(t.TempDir(), ledger.FileName), clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	db := led.DB()
	if err := db.Write(ctx, func(tx *store.Tx) error {
		if _, err := tx.ExecContext(ctx, store.Schema); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `CREATE TABLE TestHandOver (seq INTEGER PRIMARY KEY AUTOINCREMENT, txid TEXT UNIQUE)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := lsm.EnsureSchema(ctx, db); err != nil {
		t.Fatal(err)
	}
	flog := finality.New(clk)
	cfg.FinalityLog, cfg.Gate, cfg.Clock = flog, sysmode.Gate{}, clk
	if cfg.Acceptor == nil {
		cfg.Acceptor = queueAcceptor{}
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, led: led, clk: clk, lanes: lane.New(db, flog, sysmode.Gate{}, clk, nil), win: w}
	for b, h := range hLimits {
		e.exec(t, `INSERT INTO Participants (bank_id, bank_name, ingress_base_url, h_limit, registered_at)
			VALUES (?, ?, ?, ?, '2026-01-01T00:00:00Z')`, b, "Bank "+b, "/bank/"+b, h)
	}
	return e
}

func (e *env) exec(t testing.TB, q string, args ...any) {
	t.Helper()
	if err := e.db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), q, args...)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// submit creates a BULK (or DEFERRED) transfer in RECEIVED at the clock's
// current time, as the orchestrator's Submit leaves it.
func (e *env) submit(t testing.TB, laneName, payer string, amount int64, expires string) string {
	t.Helper()
	e.seq++
	id := fmt.Sprintf("TX-%04d", e.seq)
	if _, err := e.lanes.InsertTxWithLog(context.Background(), lane.NewTx{TxID: id, Lane: laneName, AmountValue: amount,
		PayerBankID: payer, PayerAccountHash: "a", PayeeBankID: "009", PayeeAccountHash: "b",
		IdempotencyKey: "K-" + id, ExpiresAt: expires}); err != nil {
		t.Fatal(err)
	}
	return id
}

func (e *env) run(t testing.TB, laneName, windowID string, closeAt time.Time) (Report, error) {
	t.Helper()
	var rep Report
	err := e.db.Write(context.Background(), func(tx *store.Tx) error {
		var err error
		rep, err = e.win.RunInTx(context.Background(), tx, laneName, day, windowID, closeAt)
		return err
	})
	return rep, err
}

func (e *env) strings(t testing.TB, q string, args ...any) []string {
	t.Helper()
	var out []string
	err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return err
			}
			out = append(out, s)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) hUsed(t testing.TB, bank string) int64 {
	t.Helper()
	var u hlimit.Usage
	if err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		var err error
		u, err = hlimit.UsageOf(context.Background(), tx, bank, "JPY")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return u.Used
}

// A window reserves H for the chosen candidates (acceptance), hands them
// over, leaves the others RECEIVED for the next window and records the run;
// the next window takes the deferred ones once H is free.
func TestWindowAcceptsWithinHAndDefersTheRest(t *testing.T) {
	e := newEnv(t, Config{}, map[string]int64{"001": 10000, "002": 5000})
	urgent := e.submit(t, LaneBulk, "001", 6000, clock.Stamp(nine.Add(time.Hour)))
	small := e.submit(t, LaneBulk, "001", 3000, "")
	big := e.submit(t, LaneBulk, "001", 5000, "")
	other := e.submit(t, LaneBulk, "002", 5000, "")
	deferredLane := e.submit(t, LaneDeferred, "001", 100, "")
	e.clk.Set(nine.Add(time.Minute))
	late := e.submit(t, LaneBulk, "002", 10, "") // after the close

	rep, err := e.run(t, LaneBulk, "BULK-20261202-0900", nine)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Accepted, []string{urgent, small, other}) || len(rep.HRefused) != 0 ||
		!reflect.DeepEqual(rep.Deferred, []string{big}) {
		t.Fatalf("report = %+v", rep)
	}
	if got := e.strings(t, `SELECT txid FROM TestHandOver ORDER BY seq`); !reflect.DeepEqual(got, rep.Accepted) {
		t.Fatalf("handed over %v", got)
	}
	if got := e.strings(t, `SELECT reservation_id || ':' || bank_id || ':' || amount FROM HReservations ORDER BY reservation_id`); !reflect.DeepEqual(got,
		[]string{"H-" + urgent + ":001:6000", "H-" + small + ":001:3000", "H-" + other + ":002:5000"}) {
		t.Fatalf("reservations = %v", got)
	}
	if e.hUsed(t, "001") != 9000 || e.hUsed(t, "002") != 5000 {
		t.Fatalf("h_used 001=%d 002=%d", e.hUsed(t, "001"), e.hUsed(t, "002"))
	}
	// Deferred, never rejected: every transfer is still RECEIVED with ZC.
	if got := e.strings(t, `SELECT DISTINCT state || '/' || owner FROM Transactions`); !reflect.DeepEqual(got, []string{"RECEIVED/ZC"}) {
		t.Fatalf("states = %v", got)
	}
	row := e.strings(t, `SELECT run_id || '|' || business_date || '|' || window_id || '|' || mode || '|' || is_fallback || '|' ||
		candidate_count || '|' || selected_count || '|' || deferred_count FROM LsmRuns`)
	if !reflect.DeepEqual(row, []string{"LSM-BULK-20261202-0900|2026-12-02|BULK-20261202-0900|OPTIMIZED|0|4|3|1"}) {
		t.Fatalf("LsmRuns = %v", row)
	}
	r := rep.Run
	if r.InputSnapshotID == "" || len(r.ConstraintsDigest) != 64 || len(r.ExecutionSetHash) != 64 || len(r.TraceDigest) != 64 ||
		r.Metrics.Urgent != 1 || r.Metrics.UrgentSelected != 1 || r.Metrics.Accepted != 3 || r.Metrics.Degraded {
		t.Fatalf("run = %+v", r)
	}
	if r.ExecutionSetHash != lsm.ExecutionSetHash(rep.Accepted) || r.Metrics.AcceptedSetHash != r.ExecutionSetHash {
		t.Fatal("execution set hash is not the hash of the accepted set")
	}
	if ev := e.strings(t, `SELECT event_type FROM FinalityLog WHERE gtid = 'BULK-20261202-0900'`); !reflect.DeepEqual(ev, []string{"LsmRunCommitted"}) {
		t.Fatalf("window chain = %v", ev)
	}
	if rep, err := lsm.Reproduce(context.Background(), e.db, r.RunID); err != nil || rep.Result.ExecutionSetHash != r.ExecutionSetHash {
		t.Fatalf("reproduce = %v", err)
	}
	// The same window again: refused, nothing written.
	if _, err := e.run(t, LaneBulk, "BULK-20261202-0900", nine); domainerr.Code(err) != "ALREADY_PROCESSED" {
		t.Fatalf("second run = %v", err)
	}

	// 11:00: more H for 002 (settlements elsewhere freed it): 'late' is a
	// candidate now and fits; 'big' (001 has 1000 left) is deferred again;
	// the accepted ones are no longer candidates.
	e.exec(t, `UPDATE Participants SET h_limit = h_limit + 10 WHERE bank_id = '002'`)
	rep2, err := e.run(t, LaneBulk, "BULK-20261202-1100", nine.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep2.Accepted, []string{late}) || !reflect.DeepEqual(rep2.Deferred, []string{big}) || rep2.Run.CandidateCount != 2 {
		t.Fatalf("second window = %+v", rep2)
	}
	e.exec(t, `UPDATE Participants SET h_limit = h_limit + 4000 WHERE bank_id = '001'`)
	rep3, err := e.run(t, LaneBulk, "BULK-20261202-1300", nine.Add(4*time.Hour))
	if err != nil || !reflect.DeepEqual(rep3.Accepted, []string{big}) || rep3.Run.CandidateCount != 1 {
		t.Fatalf("third window = %+v %v", rep3, err)
	}
	if e.hUsed(t, "001") != 14000 {
		t.Fatalf("h_used 001 = %d", e.hUsed(t, "001"))
	}
	// The DEFERRED lane has its own window (with H for it).
	e.exec(t, `UPDATE Participants SET h_limit = h_limit + 100 WHERE bank_id = '001'`)
	rep4, err := e.run(t, LaneDeferred, "DEFERRED-20261202", nine.Add(9*time.Hour))
	if err != nil || !reflect.DeepEqual(rep4.Accepted, []string{deferredLane}) {
		t.Fatalf("deferred window = %+v %v", rep4, err)
	}
}

// A failing hand-over rolls the whole window back: no reservation, no run.
func TestWindowIsAllOrNothing(t *testing.T) {
	e := newEnv(t, Config{}, map[string]int64{"001": 10000})
	e.submit(t, LaneBulk, "001", 100, "")
	bad := e.submit(t, LaneBulk, "001", 200, "")
	e.win.cfg.Acceptor = queueAcceptor{fail: bad}
	if _, err := e.run(t, LaneBulk, "BULK-20261202-0900", nine); err == nil {
		t.Fatal("window succeeded")
	}
	for _, q := range []string{`SELECT COUNT(*) FROM HReservations`, `SELECT COUNT(*) FROM LsmRuns`, `SELECT COUNT(*) FROM TestHandOver`} {
		if got := e.strings(t, q); got[0] != "0" {
			t.Fatalf("%s = %s after a failed window", q, got[0])
		}
	}
	if e.hUsed(t, "001") != 0 {
		t.Fatal("h_used moved")
	}
}

// The optimizer's failure falls back to the configured mode, recorded as
// degraded with LsmRunFallback, and the fallback run reproduces too.
func TestWindowFallbackRecorded(t *testing.T) {
	for _, mode := range []lsm.Mode{lsm.FIFO, lsm.Priority, lsm.Throttle} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t, Config{LSM: lsm.Options{MaxOptimize: 1, Fallback: mode}, ThrottlePerPayer: 1},
				map[string]int64{"001": 1000})
			a := e.submit(t, LaneBulk, "001", 600, "")
			b := e.submit(t, LaneBulk, "001", 300, clock.Stamp(nine.Add(time.Minute)))
			rep, err := e.run(t, LaneBulk, "BULK-20261202-0900", nine)
			if err != nil {
				t.Fatal(err)
			}
			want := map[lsm.Mode][]string{lsm.FIFO: {a, b}, lsm.Priority: {b, a}, lsm.Throttle: {a}}[mode]
			if !reflect.DeepEqual(rep.Accepted, want) {
				t.Fatalf("accepted %v, want %v", rep.Accepted, want)
			}
			row := e.strings(t, `SELECT mode || '|' || is_fallback || '|' || json_extract(objective_metrics, '$.degraded') ||
				'|' || (json_extract(objective_metrics, '$.fallback_reason') <> '') FROM LsmRuns`)
			if !reflect.DeepEqual(row, []string{string(mode) + "|1|1|1"}) {
				t.Fatalf("LsmRuns = %v", row)
			}
			if ev := e.strings(t, `SELECT event_type FROM FinalityLog WHERE gtid = 'BULK-20261202-0900'`); !reflect.DeepEqual(ev, []string{"LsmRunFallback"}) {
				t.Fatalf("events = %v", ev)
			}
			if _, err := lsm.Reproduce(context.Background(), e.db, rep.Run.RunID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Audit: a recorded run is reproduced from its snapshot, and any edit of
// the snapshot or of the recorded digests is detected.
func TestReproduceDetectsTampering(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*env, Report) {
		e := newEnv(t, Config{}, map[string]int64{"001": 1000, "002": 700})
		for i := 0; i < 6; i++ {
			e.submit(t, LaneBulk, fmt.Sprintf("00%d", 1+i%2), int64(150*(i+1)), "")
		}
		rep, err := e.run(t, LaneBulk, "BULK-20261202-0900", nine)
		if err != nil {
			t.Fatal(err)
		}
		return e, rep
	}
	e, rep := setup(t)
	got, err := lsm.Reproduce(ctx, e.db, rep.Run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Result.Selected, rep.Accepted) || got.Result.TraceDigest != rep.Run.TraceDigest {
		t.Fatalf("reproduced %v, accepted %v", got.Result.Selected, rep.Accepted)
	}
	for _, tc := range []struct{ name, sql, field string }{
		{"snapshot", `UPDATE LsmSnapshots SET candidates_json = replace(candidates_json, '"amount":150', '"amount":15')`, "input_snapshot_id"},
		{"constraints", `UPDATE LsmSnapshots SET constraints_json = replace(constraints_json, '"001/JPY":1000', '"001/JPY":9000')`, "constraints_digest"},
		{"set", `UPDATE LsmRuns SET execution_set_hash = 'x'`, "execution_set_hash"},
		{"trace", `UPDATE LsmRuns SET trace_digest = 'x'`, "trace_digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, rep := setup(t)
			e.exec(t, tc.sql)
			_, err := lsm.Reproduce(ctx, e.db, rep.Run.RunID)
			var de *domainerr.Error
			if !errors.As(err, &de) || de.Code != "CHAIN_TAMPERED" || de.Details["field"] != tc.field {
				t.Errorf("reproduce after tampering %s = %v", tc.name, err)
			}
		})
	}
}

func TestWindowIDAndClose(t *testing.T) {
	for _, tc := range []struct{ lane, key, want string }{
		{LaneBulk, "09:00", "BULK-20261202-0900"},
		{LaneBulk, "09:00/rerun-1", "BULK-20261202-0900-rerun-1"},
		{LaneDeferred, "daily", "DEFERRED-20261202"},
		{LaneDeferred, "daily/rerun-2", "DEFERRED-20261202-daily-rerun-2"},
	} {
		if got := WindowID(tc.lane, day, tc.key); got != tc.want {
			t.Errorf("WindowID(%s, %s) = %s, want %s", tc.lane, tc.key, got, tc.want)
		}
	}
	c, err := CloseInstant(day, "13:00/rerun-1", nine)
	if err != nil || !c.Equal(nine.Add(4*time.Hour)) {
		t.Fatalf("slot close = %v %v", c, err)
	}
	c, _ = CloseInstant(day, "daily", nine)
	if !c.Equal(nine) {
		t.Fatalf("daily close today = %v", c)
	}
	c, _ = CloseInstant("2026-12-01", "daily", nine)
	if !c.Equal(time.Date(2026, 12, 1, 23, 59, 59, 999999999, clock.JST)) {
		t.Fatalf("caught-up close = %v", c)
	}
}

// Through the scheduler: one window per slot, refused when it already ran.
func TestJobsThroughScheduler(t *testing.T) {
	e := newEnv(t, Config{}, map[string]int64{"001": 10000})
	a := e.submit(t, LaneBulk, "001", 4000, "")
	e.clk.Set(nine.Add(2 * time.Minute))
	reg := scheduler.NewRegistry()
	for _, j := range e.win.Jobs() {
		if err := reg.Register(j); err != nil {
			t.Fatal(err)
		}
	}
	r, err := scheduler.NewRunner(scheduler.Options{Ledger: e.led, Registry: reg, Config: scheduler.DefaultConfig(), Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), scheduler.Request{Job: JobBulk, BusinessDate: day, Slot: "09:00"})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Steps[0].Summary; s != "BULK-20261202-0900: 1 candidates, 1 accepted, 0 deferred (OPTIMIZED)" {
		t.Fatalf("summary %q", s)
	}
	if _, err := r.Run(context.Background(), scheduler.Request{Job: JobBulk, BusinessDate: day, Slot: "09:00"}); !errors.Is(err, ledger.ErrAlreadyCompleted) {
		t.Fatalf("second run = %v", err)
	}
	if got := e.strings(t, `SELECT txid FROM TestHandOver`); !reflect.DeepEqual(got, []string{a}) {
		t.Fatalf("handed over %v", got)
	}
}
