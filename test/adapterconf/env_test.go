package adapterconf

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"github.com/zcgw/zcgw/formats/coremsg"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/adapter/mq/rabbit"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// start is 10:00 JST: inside the core's online day, outside the adapter's
// configured batch window (23:00-01:00 JST).
var start = time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)

// batchWindow is the adapter's configured batch window (JST).
var batchWindow = adapter.Window{From: 23 * 60, To: 60}

type options struct {
	realTime bool
	timeout  time.Duration // corelink request/reply bound
	onDisk   bool          // databases on disk instead of tmpfs (benchmarks)
	rabbit   bool          // RabbitMQ at 127.0.0.1:5672 instead of the embedded transport
	log      *slog.Logger  // the adapter's, outbox's, corelink's and core's logger (nil: none)
}

// defaultOptions: a generous reply timeout, so a loaded machine does not
// turn a healthy reply into a timeout; the cases about timeouts set a
// short one.
func defaultOptions() options { return options{realTime: true, timeout: time.Second} }

// env is one bank: its adapter (own database), its simulated core (own
// database) serving its MQ request queue, the corelink client, and the
// coordinator database where Cases are opened.
type env struct {
	t     testing.TB
	ctx   context.Context
	clk   *clock.Manual
	dir   string
	bank  string
	tr    mq.Transport
	rq    string // the core's request queue
	reply string // the adapter's reply queue
	bq    string // the request queue's backout queue
	zc    *store.DB
	core  *coresim.Core
	link  *corelink.Link
	a     *adapter.Adapter
	stop  context.CancelFunc
	done  chan error
	accts []string // account hashes, in creation order
	opts  options

	mu      sync.Mutex
	coreAcc map[string]string // account hash -> core account
}

// scratchDir puts the suite's databases on tmpfs when there is one: the
// suite measures behaviour, not disk latency.
func scratchDir(t testing.TB) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "adapterconf-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

func newEnv(t testing.TB, o options) *env { return newBank(t, o, "001", nil) }

// newBank sets up one bank. With a peer, the bank shares the peer's MQ
// transport (one queue manager), coordinator database and clock: two
// banks of one settlement.
func newBank(t testing.TB, o options, bank string, peer *env) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, ctx: ctx, bank: bank, coreAcc: map[string]string{}, opts: o}
	var err error
	if peer != nil {
		e.clk, e.dir, e.tr, e.zc = peer.clk, peer.dir, peer.tr, peer.zc
	} else {
		e.clk, e.dir = clock.NewManual(start), scratchDir(t)
		if o.onDisk {
			e.dir = t.TempDir()
		}
		e.tr = embedded.New(filepath.Join(e.dir, "mq.db"), embedded.Options{PollInterval: 5 * time.Millisecond})
		if o.rabbit {
			e.tr = rabbit.New(rabbit.DefaultURL, rabbit.Options{PollInterval: 5 * time.Millisecond})
		} else {
			// Create the queue file before two connections race to create
			// it (a concurrent first open can fail with "database is locked").
			conn, err := e.tr.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conn.Close()
		}
		if e.zc, err = store.Open(ctx, filepath.Join(e.dir, "zc.db"), store.Schema); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.zc.Close() })
	}
	// Queue names unique per env, so envs sharing a broker never meet.
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	q := coremsg.QueuesFor(bank)
	e.rq, e.reply, e.bq = q.Request, q.Reply, q.Backout
	if o.rabbit {
		x := "." + hex.EncodeToString(suffix[:])
		e.rq, e.reply, e.bq = e.rq+x, e.reply+x, e.bq+x
		t.Cleanup(e.deleteQueues)
	}
	if e.core, err = coresim.Open(ctx, coresim.Config{Bank: e.bank, DBPath: filepath.Join(e.dir, "core-"+bank+".db"), Clock: e.clk, Logger: o.log}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.core.Close() })
	e.startCore()
	if e.link, err = corelink.Open(ctx, corelink.Config{Bank: e.bank, Transport: e.tr, Timeout: o.timeout, Clock: e.clk,
		Online: e.core.Online, RequestQueue: e.rq, ReplyQueue: e.reply, BackoutQueue: e.bq, Logger: o.log}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.link.Close() })
	e.a, err = adapter.Open(ctx, adapter.Config{
		BankID: e.bank, DBPath: filepath.Join(e.dir, "adapter-"+bank+".db"),
		Core: e.link, Inquiry: adapter.CoreLinkInquiry{Link: e.link},
		Cases:    adapter.CoordinatorCases{DB: e.zc, Cases: cases.New(e.clk, nil, 0)},
		RealTime: o.realTime, BatchWindows: []adapter.Window{batchWindow},
		InquiryTimeout: o.timeout, Clock: e.clk, Logger: o.log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.a.Close() })
	if _, err := e.a.InitializeBank(ctx, bankapi.InitializeBankRequest{RequestIDValue: "init"}); err != nil {
		t.Fatal(err)
	}
	return e
}

// startCore runs the core's MQ serving loop on its own connection (as its
// own process would), under a supervisor that reconnects when the broker
// drops the connection (RabbitMQ closes it, for example, on a get from a
// quorum queue whose replica is not running yet: "noproc").
func (e *env) startCore() {
	ctx, cancel := context.WithCancel(e.ctx)
	e.stop, e.done = cancel, make(chan error, 1)
	go func() {
		for {
			conn, err := e.tr.Connect(ctx)
			if err == nil {
				err = e.core.Serve(ctx, conn, coresim.ServeConfig{Poll: 5 * time.Millisecond, RequestQueue: e.rq, BackoutQueue: e.bq})
				conn.Close()
			}
			if ctx.Err() != nil {
				e.done <- nil
				return
			}
			if err != nil && !errors.Is(err, mq.ErrConnectionBroken) {
				e.done <- err
				return
			}
			time.Sleep(20 * time.Millisecond) // the supervisor restarts the listener
		}
	}()
	e.t.Cleanup(e.stopCore)
}

func (e *env) stopCore() {
	if e.stop != nil {
		e.stop()
		if err := <-e.done; err != nil {
			e.t.Errorf("core serve loop: %v", err)
		}
		e.stop = nil
	}
}

// account opens an account at the core and registers it with the adapter
// (opening balance read from the core over MQ).
func (e *env) account(hash, name string, balance int64) string {
	e.t.Helper()
	e.mu.Lock()
	n := len(e.coreAcc) + 1
	core := coreacct.Format("100", 1, fmt.Sprintf("%07d", n))
	e.coreAcc[hash] = core
	e.accts = append(e.accts, hash)
	e.mu.Unlock()
	if err := e.core.OpenAccount(e.ctx, core, name, balance); err != nil {
		e.t.Fatal(err)
	}
	// The opening balance is read from the core over MQ; with the short
	// timeouts of some cases a loaded machine may need another try.
	var err error
	for try := 0; try < 5; try++ {
		if err = e.a.OpenAccountFromCore(e.ctx, adapter.Account{Hash: hash, CoreAccount: core, HolderName: name}); !domainerr.Has(err, "BANK_ERROR") {
			break
		}
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return core
}

func (e *env) coreBalance(hash string) int64 {
	e.t.Helper()
	b, err := e.core.Balance(e.ctx, e.coreAcc[hash])
	if err != nil || !b.Found {
		e.t.Fatalf("core balance of %s: %+v %v", hash, b, err)
	}
	return b.Balance
}

func (e *env) shadow(hash string) adapter.Shadow {
	e.t.Helper()
	s, err := e.a.Shadow(e.ctx, hash)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) drain() outbox.DrainResult {
	e.t.Helper()
	r, err := e.a.Outbox().Drain(e.ctx, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) resolve() outbox.DrainResult {
	e.t.Helper()
	r, err := e.a.Outbox().ResolveInDoubt(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// settle runs the outbox's recovery paths until no posting is PENDING,
// CLAIMED or IN_DOUBT (with the core online and healthy).
func (e *env) settle() {
	e.t.Helper()
	// Bounded by wall time, not by attempts: with the short test timeouts a
	// loaded machine turns replies into timeouts, which only delays this.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		e.resolve()
		e.drain()
		c := e.counts()
		if c[outbox.Pending]+c[outbox.Claimed]+c[outbox.InDoubt] == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.t.Fatalf("outbox did not settle: %v", e.counts())
}

func (e *env) counts() map[outbox.Status]int {
	e.t.Helper()
	c, err := e.a.Outbox().Counts(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) rows(f outbox.Filter) []outbox.Entry {
	e.t.Helper()
	rs, err := e.a.Outbox().List(e.ctx, f)
	if err != nil {
		e.t.Fatal(err)
	}
	return rs
}

// journal returns the core's journal lines carrying ref.
func (e *env) journal(ref string) []coresim.JournalLine {
	e.t.Helper()
	all, err := e.core.Journal(e.ctx, "")
	if err != nil {
		e.t.Fatal(err)
	}
	var out []coresim.JournalLine
	for _, l := range all {
		if l.Ref == ref {
			out = append(out, l)
		}
	}
	return out
}

// checkConsistent is run after every case: each settled posting is on the
// core's journal exactly once if APPLIED and not at all if BLOCKED or
// WRITTEN_OFF, no reference is journalled twice, and — when nothing is in
// flight — the shadow's core balance equals the core's balance for every
// account.
func (e *env) checkConsistent() {
	e.t.Helper()
	all, err := e.core.Journal(e.ctx, "")
	if err != nil {
		e.t.Fatal(err)
	}
	lines := map[string]int{}
	for _, l := range all {
		lines[l.Ref]++
		if l.Source == coresim.SourceMQ && l.TxID == "" {
			e.t.Errorf("journal line %d (%s) has no txid", l.JournalID, l.Ref)
		}
	}
	inFlight := false
	for _, r := range e.rows(outbox.Filter{Limit: 100000}) {
		n := lines[r.Posting.Ref]
		switch r.Status {
		case outbox.Applied:
			if n != 1 {
				e.t.Errorf("posting %s (%s %d, txid %s) APPLIED but journalled %d times", r.Posting.Ref, r.Posting.Kind, r.Posting.Amount, r.Posting.TxID, n)
			}
		case outbox.Blocked, outbox.WrittenOff, outbox.Pending:
			if n != 0 {
				e.t.Errorf("posting %s is %s but journalled %d times", r.Posting.Ref, r.Status, n)
			}
		default:
			inFlight = true
			if n > 1 {
				e.t.Errorf("posting %s journalled %d times", r.Posting.Ref, n)
			}
		}
	}
	if inFlight {
		return
	}
	for _, h := range e.accts {
		if s, c := e.shadow(h), e.coreBalance(h); s.CoreBalance != c {
			e.t.Errorf("account %s: shadow core balance %d, core %d", h, s.CoreBalance, c)
		}
	}
}

// driftZero reconciles every account over MQ and fails unless all match.
func (e *env) driftZero() {
	e.t.Helper()
	rs, err := e.a.ReconcileAll(e.ctx)
	for try := 0; err == nil && try < 5 && anyUnavailable(rs); try++ {
		rs, err = e.a.ReconcileAll(e.ctx) // an inquiry timed out on a loaded machine
	}
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range rs {
		if r.Status != adapter.ReconMatched || r.Drift != 0 {
			e.t.Errorf("reconciliation of %s: %+v", r.AccountHash, r)
		}
	}
}

func anyUnavailable(rs []adapter.ReconResult) bool {
	for _, r := range rs {
		if r.Status == adapter.ReconUnavailable {
			return true
		}
	}
	return false
}

// caseRow reads a Case from the coordinator database.
func (e *env) caseRow(id string) cases.Case {
	e.t.Helper()
	var k cases.Case
	if err := e.zc.Read(e.ctx, func(tx *store.Tx) error {
		var err error
		k, err = cases.Get(e.ctx, tx, id)
		return err
	}); err != nil {
		e.t.Fatalf("case %q: %v", id, err)
	}
	return k
}

// putRaw puts bytes on the core's request queue with another connection,
// as a misbehaving sender would.
func (e *env) putRaw(body []byte) {
	e.t.Helper()
	conn, err := e.tr.Connect(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close()
	s, err := conn.Session(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(e.ctx, e.rq, &mq.Message{Body: body}); err != nil {
		e.t.Fatal(err)
	}
	if err := s.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// getBackout takes one message off the core's backout queue, waiting up to d.
func (e *env) getBackout(d time.Duration) (*mq.Message, error) {
	conn, err := e.tr.Connect(e.ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	s, err := conn.Session(e.ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(e.ctx, d)
	defer cancel()
	m, err := s.Get(ctx, e.bq, mq.Any)
	if err != nil {
		return nil, err
	}
	return m, s.Commit(e.ctx)
}

func jpy(v int64) bankapi.Amount { return bankapi.Amount{Value: v, Currency: "JPY"} }

func credit(req, tx, acct string, v int64) bankapi.ExecuteCreditRequest {
	return bankapi.ExecuteCreditRequest{RequestIDValue: req, TxID: tx, Amount: jpy(v), DecisionProofRef: "DP-" + tx, PayeeAccountHash: acct}
}

func debitHV(req, tx, acct string, v int64) bankapi.ExecuteDebitRequest {
	return bankapi.ExecuteDebitRequest{RequestIDValue: req, TxID: tx, Amount: jpy(v), DecisionProofRef: "DP-" + tx, Lane: "HIGH_VALUE", PayerAccountHash: acct}
}

func debitReserved(req, tx, ref string, v int64) bankapi.ExecuteDebitRequest {
	return bankapi.ExecuteDebitRequest{RequestIDValue: req, TxID: tx, Amount: jpy(v), DecisionProofRef: "DP-" + tx, Lane: "EXPRESS",
		HReservation: &bankapi.HReservation{ReservationID: ref, Mode: "RESERVED"}}
}

// deleteQueues removes the env's queues from the broker.
func (e *env) deleteQueues() {
	conn, err := e.tr.Connect(e.ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	for _, q := range []string{e.rq, e.reply, e.bq} {
		_ = conn.DeleteQueue(e.ctx, q)
	}
}

// adoptDrifts reconciles, and resolves every drift found by adopting the
// core balance (what a person does after checking a deliberate
// out-of-band change), so the shadow must equal the core afterwards.
func (e *env) adoptDrifts() {
	e.t.Helper()
	if _, err := e.a.ReconcileAll(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	ds, err := e.a.Drifts(e.ctx, "OPEN")
	if err != nil {
		e.t.Fatal(err)
	}
	if len(ds) == 0 {
		e.t.Fatal("expected a drift to adopt")
	}
	for _, d := range ds {
		if d.CaseID == "" {
			e.t.Errorf("drift %s has no case", d.DriftID)
		}
		if err := e.a.ResolveDrift(e.ctx, d.DriftID, "out-of-band change confirmed by the branch", true); err != nil {
			e.t.Fatal(err)
		}
	}
	e.driftZero()
}

// dyingCore is the Core of a drainer process that crashes right after it
// claimed a posting: optionally after handing it to the core (the core
// applied it), always before recording any outcome.
type dyingCore struct {
	outbox.Core
	apply bool
}

type drainerCrashed struct{ ref string }

func (d dyingCore) Apply(ctx context.Context, p outbox.Posting) (outbox.ApplyResult, error) {
	if d.apply {
		_, _ = d.Core.Apply(ctx, p)
	}
	panic(drainerCrashed{p.Ref})
}

// crashDrainer runs one drain step of a second drainer (same database, the
// real outbox claim) that crashes after its claim, leaving the row
// CLAIMED. It returns the ref it claimed ("" when nothing was claimable).
func (e *env) crashDrainer(applyFirst bool) (ref string) {
	e.t.Helper()
	ob, err := outbox.New(outbox.Config{DB: e.a.DB(), Core: dyingCore{Core: e.link, apply: applyFirst}, Clock: e.clk, Actor: "DYING_DRAINER"})
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() {
		if p := recover(); p != nil {
			c, ok := p.(drainerCrashed)
			if !ok {
				panic(p)
			}
			ref = c.ref
		}
	}()
	if _, err := ob.Drain(e.ctx, 1); err != nil {
		e.t.Fatal(err)
	}
	return ""
}
