package filedrop

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/formats/zengin"
)

var t0 = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC) // 10:00 JST

// fixture is a coordinator database with the real orchestrator, banks
// 001 (the dropping bank, Zengin code 0001) and 002 (0002), and a
// Processor serving bank 001's folders.
type fixture struct {
	t    testing.TB
	ctx  context.Context
	dir  string
	clk  *clock.Manual
	db   *store.DB
	orch *orchestrator.Orchestrator
	p    *Processor
	cfg  Config
}

func newFixture(t testing.TB, mod func(*Config)) *fixture {
	t.Helper()
	dir := t.TempDir()
	return newFixtureAt(t, dir, filepath.Join(dir, "zc.db"), mod)
}

// newFixtureAt is newFixture with the folders under dir and the
// coordinator database at location (a SQLite file or a PostgreSQL
// location of storetest).
func newFixtureAt(t testing.TB, dir, location string, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), dir: dir, clk: clock.NewManual(t0)}
	var err error
	if f.db, err = store.OpenCoordinator(f.ctx, location); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.db.Close() })
	if f.orch, err = orchestrator.New(orchestrator.Config{DB: f.db, Clock: f.clk}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"001", "002"} {
		if _, err := f.orch.Participants().Create(f.ctx, participants.Participant{BankID: id, BankName: "Bank " + id,
			HLimit: 1_000_000_000_000, IsActive: true}); err != nil {
			t.Fatal(err)
		}
	}
	f.cfg = Config{DB: f.db, Coordinator: f.orch, Participants: f.orch.Participants(), Root: f.dir,
		Banks: []Bank{{ID: "001"}}, Clock: f.clk, StableFor: 10 * time.Second, Chunk: 4}
	if mod != nil {
		mod(&f.cfg)
	}
	f.p = f.newProcessor()
	return f
}

// newProcessor returns a fresh Processor on the same database and
// folders, as after a restart.
func (f *fixture) newProcessor() *Processor {
	f.t.Helper()
	p, err := New(f.cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) folders() Folders { b, _ := f.p.Bank("001"); return b.Folders() }

// drop writes a complete file and its done-marker into the inbound folder.
func (f *fixture) drop(name string, data []byte) {
	f.t.Helper()
	in := f.folders().Inbound
	if err := os.WriteFile(filepath.Join(in, name), data, 0o644); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, name+".done"), nil, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) poll() Pass {
	f.t.Helper()
	pass, err := f.p.PollOnce(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return pass
}

func (f *fixture) count(q string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.db.Read(f.ctx, func(tx *store.Tx) error { return tx.QueryRowContext(f.ctx, q, args...).Scan(&n) }); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) drops() []Drop {
	f.t.Helper()
	var out []Drop
	for _, s := range []string{StatusApplying, StatusAccepted, StatusResulted, StatusRejected, StatusDuplicate} {
		ds, err := f.p.Drops(f.ctx, "001", s)
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, ds...)
	}
	return out
}

func (f *fixture) files(dir string) []string {
	f.t.Helper()
	names, err := listFiles(dir)
	if err != nil {
		f.t.Fatal(err)
	}
	return names
}

// decide plays the batch window and the settlement for one transfer
// through the lane primitives (the only writers of Transactions.state):
// RECEIVED -> PRECHECKED -> DECIDED_TO_SETTLE -> PAYER_EXEC_CONFIRMED ->
// PAYEE_EXEC_CONFIRMED -> SETTLED, or RECEIVED -> DECIDED_CANCEL with a
// reason.
func (f *fixture) decide(txid string, settle bool, reason string) {
	f.t.Helper()
	if settle {
		f.advance(txid, lane.Settled)
		return
	}
	l := lane.New(f.db, finality.New(f.clk), sysmode.Gate{}, f.clk, nil)
	if _, err := l.CancelInFlightTx(f.ctx, lane.Cancel{TxID: txid, ReasonCode: reason, SkipReleaseH: true}); err != nil {
		f.t.Fatal(err)
	}
}

// advance moves a transfer along the settle path until it reaches to.
func (f *fixture) advance(txid string, to lane.TxState) {
	f.t.Helper()
	l := lane.New(f.db, finality.New(f.clk), sysmode.Gate{}, f.clk, nil)
	for _, tr := range []lane.Transition{
		{TxID: txid, From: lane.Received, To: lane.Prechecked, EventType: finality.PreCheckPassed},
		{TxID: txid, From: lane.Prechecked, To: lane.DecidedToSettle, EventType: finality.DecidedToSettle,
			SetColumns: map[string]any{"decision_proof_ref": "DP-" + txid}},
		{TxID: txid, From: lane.DecidedToSettle, To: lane.PayerExecConfirmed, EventType: finality.PayerExecConfirmed},
		{TxID: txid, From: lane.PayerExecConfirmed, To: lane.PayeeExecConfirmed, EventType: finality.PayeeExecConfirmed},
		{TxID: txid, From: lane.PayeeExecConfirmed, To: lane.Settled, EventType: finality.Settled},
	} {
		if _, err := l.TransitionWithLog(f.ctx, tr); err != nil {
			f.t.Fatal(err)
		}
		if tr.To == to {
			return
		}
	}
}

// rec is one data record of a test file.
type rec struct {
	bank   string // 被仕向銀行番号
	acct   string
	amount int64
	name   string
}

// zenginFile builds a canonical 総合振込 (or other kind) file from bank
// 0001 (branch 001, 普通 1234567) with the given records.
func zenginFile(t testing.TB, kind zengin.Kind, bank string, recs []rec) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zengin.NewWriter(&buf)
	h := &zengin.Header{Kind: kind, ClientCode: "1234567890", ClientName: "ｶ)ｻﾝﾌﾟﾙ", Date: zengin.Date{Month: 12, Day: 3},
		BankCode: bank, BankName: "ｾﾞﾛｲﾁ", BranchCode: "001", BranchName: "ﾎﾝﾃﾝ", AccountType: 1, AccountNumber: "1234567"}
	must(t, w.WriteHeader(h))
	for _, r := range recs {
		acc := zengin.Account{BankCode: r.bank, BankName: "ｾﾞﾛﾆ", BranchCode: "002", BranchName: "ｼﾃﾝ", AccountType: 1,
			AccountNumber: r.acct, Name: r.name}
		if kind == zengin.KindTransfer {
			must(t, w.WriteData(&zengin.TransferData{Account: acc, Amount: r.amount}))
		} else {
			must(t, w.WriteData(&zengin.PayrollData{Account: acc, Amount: r.amount}))
		}
	}
	must(t, w.WriteTrailer())
	must(t, w.WriteEnd())
	must(t, w.Flush())
	return buf.Bytes()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// recs returns n records to bank 0002 with amounts 1000, 2000, ...
func recs(n int) []rec {
	out := make([]rec, n)
	for i := range out {
		out[i] = rec{bank: "0002", acct: "76543" + string(rune('0'+i/10%10)) + string(rune('0'+i%10)), amount: int64(1000 * (i + 1)), name: "ﾔﾏﾀﾞ ﾀﾛｳ"}
	}
	return out
}

// crashingCoordinator passes SubmitBulk through to the real coordinator
// and, from the after-th call on, "crashes": the call it crashes on is
// committed by the coordinator but its answer is lost (the process died
// between commit and acknowledgement), and every later call fails.
type crashingCoordinator struct {
	Coordinator
	after int64
	calls atomic.Int64
}

var errCrash = errors.New("simulated crash")

func (c *crashingCoordinator) SubmitBulk(ctx context.Context, issuer string, items []orchestrator.BulkItem, then orchestrator.BulkThen) ([]orchestrator.BulkOutcome, error) {
	n := c.calls.Add(1)
	if n > c.after {
		return nil, errCrash
	}
	out, err := c.Coordinator.SubmitBulk(ctx, issuer, items, then)
	if n == c.after {
		return nil, errCrash
	}
	return out, err
}
