package filedrop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/formats/zengin"
)

// envCrashChild names the data folder when the test binary runs as the
// child process of TestCrashAtEachStepOfABulkFile.
const envCrashChild = "FILEDROP_CRASH_CHILD"

// crashRecords is the file of the crash test: 25 records to bank 0002,
// applied in chunks of 4 (7 commits).
const crashRecords, crashChunk = 25, 4

// A crash at each step of a bulk file submission, in a real process killed
// by SIGKILL at a named failpoint (coordinator/failpoint), resumes to
// exactly the same transfers and the same result file as a run without a
// crash: the claim, the validated drop, inside a chunk's transaction
// before its checkpoint, before and after a group commit, between chunks,
// after the last chunk, after ACCEPTED and after the result file. The
// child process takes the dropped file, applies it, settles or cancels
// every transfer (by amount, so the same in every run) and writes the
// result file; a second child, unarmed, finishes what the first left.
func TestCrashAtEachStepOfABulkFile(t *testing.T) {
	if os.Getenv(envCrashChild) != "" {
		t.Skip("the child runs TestCrashChild")
	}
	data := zenginFile(t, zengin.KindTransfer, "0001", recs(crashRecords))
	fresh := func() string {
		dir := t.TempDir()
		in := filepath.Join(dir, "banks", "001", "inbound")
		must(t, os.MkdirAll(in, 0o755))
		must(t, os.WriteFile(filepath.Join(in, "PAY.txt"), data, 0o644))
		must(t, os.WriteFile(filepath.Join(in, "PAY.txt.done"), nil, 0o644))
		return dir
	}
	want := fresh()
	if out, err := runCrashChild(want, ""); err != nil {
		t.Fatalf("run without a crash: %v\n%s", err, out)
	}
	ref := crashSnapshot(t, want)
	if len(ref.transfers) != crashRecords || len(ref.result) != (crashRecords+3)*122 {
		t.Fatalf("reference run: %d transfers, result of %d bytes", len(ref.transfers), len(ref.result))
	}
	for _, point := range []string{
		FailAfterClaim + "=kill#1",
		FailAfterValidated + "=kill#1",
		orchestrator.FailBulkBeforeThen + "=kill#1",
		orchestrator.FailBulkBeforeThen + "=kill#4",
		"store.before-group-commit=kill#4",
		"store.after-group-commit=kill#5",
		"store.after-group-commit=kill#9",
		FailAfterChunk + "=kill#1",
		FailAfterChunk + "=kill#6",
		FailAfterApplied + "=kill#1",
		FailAfterAccepted + "=kill#1",
		FailAfterResultFile + "=kill#1",
	} {
		t.Run(point, func(t *testing.T) {
			dir := fresh()
			out, err := runCrashChild(dir, point)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL ||
				!strings.Contains(string(out), "failpoint: kill at "+strings.SplitN(point, "=", 2)[0]) {
				t.Fatalf("armed run was not killed at its point: %v\n%s", err, out)
			}
			if out, err := runCrashChild(dir, ""); err != nil {
				t.Fatalf("restart: %v\n%s", err, out)
			}
			got := crashSnapshot(t, dir)
			if !slices.Equal(got.transfers, ref.transfers) {
				t.Fatalf("transfers after the crash differ:\n got %q\nwant %q", got.transfers, ref.transfers)
			}
			if !bytes.Equal(got.result, ref.result) {
				t.Fatalf("result file after the crash differs:\n%s\nwant\n%s", got.result, ref.result)
			}
			if got.drops != ref.drops {
				t.Fatalf("drops after the crash: %s, want %s", got.drops, ref.drops)
			}
		})
	}
}

func runCrashChild(dir, points string) ([]byte, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashChild+"="+dir, failpoint.EnvPoints+"="+points)
	return cmd.CombinedOutput()
}

// snapshot is what a user of the file drop relies on after the run.
type snapshot struct {
	transfers []string // txid amount payee state, by txid
	result    []byte   // the one result file
	drops     string   // status, records, refused, applied_through of every drop
}

func crashSnapshot(t *testing.T, dir string) snapshot {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	must(t, err)
	defer db.Close()
	var s snapshot
	must(t, db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT txid, amount_value, payee_account_hash, state, idempotency_key FROM Transactions ORDER BY txid`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var txid, payee, state, key string
			var amount int64
			if err := rows.Scan(&txid, &amount, &payee, &state, &key); err != nil {
				return err
			}
			s.transfers = append(s.transfers, fmt.Sprintf("%s %d %s %s %s", txid, amount, payee, state, key))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		var drops []string
		rows2, err := tx.QueryContext(ctx, `SELECT status, record_count, refused_count, applied_through FROM FileDrops ORDER BY drop_id`)
		if err != nil {
			return err
		}
		defer rows2.Close()
		for rows2.Next() {
			var status string
			var n, refused, through int
			if err := rows2.Scan(&status, &n, &refused, &through); err != nil {
				return err
			}
			drops = append(drops, fmt.Sprintf("%s/%d/%d/%d", status, n, refused, through))
		}
		s.drops = strings.Join(drops, ",")
		return rows2.Err()
	}))
	out := filepath.Join(dir, "banks", "001", "outbound")
	names, err := listFiles(out)
	must(t, err)
	if len(names) != 1 {
		t.Fatalf("outbound holds %v, want one result file", names)
	}
	s.result, err = os.ReadFile(filepath.Join(out, names[0]))
	must(t, err)
	return s
}

// TestCrashChild is the child process of TestCrashAtEachStepOfABulkFile
// (it skips unless FILEDROP_CRASH_CHILD names its data folder): it polls
// the bank's folders until the drop is applied, decides every transfer
// still undecided, and polls until the result file is written.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(envCrashChild)
	if dir == "" {
		t.Skip("runs only as the child of TestCrashAtEachStepOfABulkFile")
	}
	ctx := context.Background()
	clk := clock.NewManual(t0)
	db, err := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	must(t, err)
	defer db.Close()
	orch, err := orchestrator.New(orchestrator.Config{DB: db, Clock: clk})
	must(t, err)
	for _, id := range []string{"001", "002"} {
		if _, err := orch.Participants().Get(ctx, id); err == nil {
			continue
		}
		_, err := orch.Participants().Create(ctx, participants.Participant{BankID: id, BankName: "Bank " + id,
			HLimit: 1_000_000_000_000, IsActive: true})
		must(t, err)
	}
	p, err := New(Config{DB: db, Coordinator: orch, Participants: orch.Participants(), Root: dir,
		Banks: []Bank{{ID: "001"}}, Clock: clk, StableFor: time.Second, Chunk: crashChunk})
	must(t, err)
	l := lane.New(db, finality.New(clk), sysmode.Gate{}, clk, nil)
	for range 5 {
		if _, err := p.PollOnce(ctx); err != nil {
			t.Fatal(err)
		}
		ds, err := p.Drops(ctx, "001", StatusResulted)
		must(t, err)
		if len(ds) == 1 {
			return
		}
		must(t, decideAll(ctx, db, l))
	}
	t.Fatal("no result file after 5 passes")
}

// decideAll moves every transfer still on its way to a decision: amounts
// of a multiple of 3,000 yen are cancelled INSUFFICIENT_FUNDS, the others
// settled, each from the state it is in (a killed run may have left one
// half way).
func decideAll(ctx context.Context, db *store.DB, l *lane.Lanes) error {
	type tr struct {
		txid   string
		amount int64
		state  lane.TxState
	}
	var todo []tr
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT txid, amount_value, state FROM Transactions WHERE state NOT IN ('SETTLED', 'CANCELLED') ORDER BY txid`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r tr
			var state string
			if err := rows.Scan(&r.txid, &r.amount, &state); err != nil {
				return err
			}
			r.state = lane.TxState(state)
			todo = append(todo, r)
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	for _, r := range todo {
		if r.amount%3000 == 0 && r.state == lane.Received {
			if _, err := l.CancelInFlightTx(ctx, lane.Cancel{TxID: r.txid, ReasonCode: "INSUFFICIENT_FUNDS", SkipReleaseH: true}); err != nil {
				return err
			}
			continue
		}
		for _, step := range []lane.Transition{
			{TxID: r.txid, From: lane.Received, To: lane.Prechecked, EventType: finality.PreCheckPassed},
			{TxID: r.txid, From: lane.Prechecked, To: lane.DecidedToSettle, EventType: finality.DecidedToSettle,
				SetColumns: map[string]any{"decision_proof_ref": "DP-" + r.txid}},
			{TxID: r.txid, From: lane.DecidedToSettle, To: lane.PayerExecConfirmed, EventType: finality.PayerExecConfirmed},
			{TxID: r.txid, From: lane.PayerExecConfirmed, To: lane.PayeeExecConfirmed, EventType: finality.PayeeExecConfirmed},
			{TxID: r.txid, From: lane.PayeeExecConfirmed, To: lane.Settled, EventType: finality.Settled},
		} {
			if step.From != r.state {
				continue
			}
			if _, err := l.TransitionWithLog(ctx, step); err != nil {
				return err
			}
			r.state = step.To
		}
	}
	return nil
}
