package corelink_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/formats/coremsg"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

const bank = "001"

type world struct {
	dir   string
	tr    mq.Transport
	core  *coresim.Core
	link  *corelink.Link
	db    *store.DB
	ob    *outbox.Outbox
	cases *caseBook
	stop  func()
}

type caseBook struct {
	mu     sync.Mutex
	byKey  map[string]int
	reason map[string]string
}

func (c *caseBook) OpenCase(ctx context.Context, req outbox.CaseRequest) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byKey[req.DedupKey]++
	c.reason[req.DedupKey] = req.ReasonCode
	return fmt.Sprintf("CASE-%d", len(c.byKey)), nil
}

// newWorld starts a simulated core serving its queue on an embedded MQ
// file, a link to it and an outbox draining through the link.
func newWorld(t testing.TB, timeout time.Duration) *world {
	t.Helper()
	dir := t.TempDir()
	return newWorldOn(t, dir, embedded.New(filepath.Join(dir, "mq.db"), embedded.Options{PollInterval: 5 * time.Millisecond}), timeout, "")
}

// newWorldOn is newWorld on any transport; suffix makes the queue names
// unique on a shared broker.
func newWorldOn(t testing.TB, dir string, tr mq.Transport, timeout time.Duration, suffix string) *world {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &world{dir: dir, tr: tr, cases: &caseBook{byKey: map[string]int{}, reason: map[string]string{}}}
	q := coremsg.QueuesFor(bank)
	rq, pq, bq := q.Request, q.Reply, q.Backout
	rq, pq, bq = rq+suffix, pq+suffix, bq+suffix
	var err error
	w.core, err = coresim.Open(ctx, coresim.Config{Bank: bank, DBPath: filepath.Join(w.dir, "core.db")})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := w.tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := w.core.Serve(ctx, conn, coresim.ServeConfig{Poll: 20 * time.Millisecond, RequestQueue: rq, BackoutQueue: bq}); err != nil {
			t.Error(err)
		}
	}()
	w.link, err = corelink.Open(ctx, corelink.Config{Bank: bank, Transport: w.tr, Timeout: timeout,
		RequestQueue: rq, ReplyQueue: pq, BackoutQueue: bq})
	if err != nil {
		t.Fatal(err)
	}
	w.db, err = store.Open(ctx, filepath.Join(w.dir, "adapter.db"), outbox.Schema)
	if err != nil {
		t.Fatal(err)
	}
	w.ob, _ = outbox.New(outbox.Config{DB: w.db, Core: w.link, Cases: w.cases, Actor: "BANK_" + bank})
	w.stop = func() {
		cancel()
		wg.Wait()
		w.link.Close()
		if suffix != "" {
			for _, q := range []string{rq, pq, bq} {
				_ = conn.DeleteQueue(context.Background(), q)
			}
		}
		conn.Close()
		w.core.Close()
		w.db.Close()
	}
	t.Cleanup(w.stop)
	return w
}

func (w *world) open(t testing.TB, acct, name string, bal int64) {
	t.Helper()
	if err := w.core.OpenAccount(context.Background(), acct, name, bal); err != nil {
		t.Fatal(err)
	}
}

func (w *world) enqueue(t testing.TB, ps ...outbox.Posting) []int64 {
	t.Helper()
	var ids []int64
	err := w.db.Write(context.Background(), func(tx *store.Tx) error {
		for _, p := range ps {
			id, err := w.ob.Enqueue(context.Background(), tx, p)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (w *world) timesApplied(t testing.TB, ref string) int {
	t.Helper()
	lk, err := w.core.Lookup(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return lk.Count
}

func (w *world) balance(t testing.TB, acct string) int64 {
	t.Helper()
	b, err := w.core.Balance(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	return b.Balance
}

func (w *world) status(t testing.TB, id int64) outbox.Entry {
	t.Helper()
	e, err := w.ob.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

const acctA, acctB = "001-1-0000001", "001-1-0000002"

func posting(ref, acct string, kind outbox.Kind, amt int64) outbox.Posting {
	return outbox.Posting{Ref: ref, TxID: "TX-" + ref, Bank: bank, Account: acct, Kind: kind, Amount: amt}
}

func TestLinkOperationsOverMQ(t *testing.T) {
	w := newWorld(t, 3*time.Second)
	ctx := context.Background()
	w.open(t, acctA, "ヤマダ タロウ", 1000)
	w.core.ListOnWatchlist(ctx, "ｱｸﾔｸ ｼﾞﾛｳ")

	res, err := w.link.Apply(ctx, posting("P1", acctA, outbox.Credit, 250))
	if err != nil || res.BalanceAfter != 1250 || res.CoreRef == "" {
		t.Fatalf("apply: %+v %v", res, err)
	}
	// The baseline: the core is not idempotent. The same posting sent
	// again (a new message) is applied again.
	if res, err := w.link.Apply(ctx, posting("P0", acctA, outbox.Credit, 1)); err != nil || res.BalanceAfter != 1251 {
		t.Fatalf("apply P0: %+v %v", res, err)
	}
	if res, err := w.link.Apply(ctx, posting("P0", acctA, outbox.Credit, 1)); err != nil || res.BalanceAfter != 1252 {
		t.Fatalf("apply P0 again: %+v %v", res, err)
	}
	if n := w.timesApplied(t, "P0"); n != 2 {
		t.Fatalf("P0 journalled %d times, want 2", n)
	}
	w.core.AdjustBalanceOutOfBand(ctx, acctA, -2) // back to 1250 for the checks below
	_, err = w.link.Apply(ctx, posting("P2", acctA, outbox.Debit, 5000))
	var refused *outbox.RefusedError
	if !errors.As(err, &refused) || refused.ReasonCode != "INSUFFICIENT_FUNDS" {
		t.Fatalf("overdraft: %v", err)
	}
	_, err = w.link.Apply(ctx, posting("P3", "001-1-0000999", outbox.Credit, 1))
	if !errors.As(err, &refused) || refused.ReasonCode != "ACCOUNT_NOT_FOUND" {
		t.Fatalf("unknown account: %v", err)
	}
	lookups := []struct {
		ref   string
		state outbox.LookupState
	}{{"P1", outbox.LookupApplied}, {"P2", outbox.LookupRefused}, {"NOPE", outbox.LookupUnknown}}
	for _, l := range lookups {
		got, err := w.link.Lookup(ctx, l.ref)
		if err != nil || got.State != l.state {
			t.Fatalf("lookup %s: %+v %v", l.ref, got, err)
		}
	}
	if h, err := w.link.Hold(ctx, "TX-H", "H1", acctA, 200); err != nil || !h.Accepted || h.Held != 200 || h.Available != 1050 {
		t.Fatalf("hold: %+v %v", h, err)
	}
	bal, err := w.link.Balance(ctx, acctA)
	if err != nil || bal.Status != "N" || bal.Ledger != 1250 || bal.Held != 200 || bal.Available != 1050 {
		t.Fatalf("balance: %+v %v", bal, err)
	}
	if h, err := w.link.Release(ctx, "TX-H", "H1", acctA, 200); err != nil || !h.Accepted || h.Available != 1250 {
		t.Fatalf("release: %+v %v", h, err)
	}
	if b, _ := w.link.Balance(ctx, "001-1-0000999"); b.Status != "X" {
		t.Fatalf("unknown balance: %+v", b)
	}
	names := []struct{ name, want string }{{"ﾔﾏﾀﾞ ﾀﾛｳ", "M"}, {"ヤマダ　タロウ", "M"}, {"ﾔﾏﾀﾞ ｼﾞﾛｳ", "U"}}
	for _, n := range names {
		if got, err := w.link.NameCheck(ctx, acctA, n.name); err != nil || got != n.want {
			t.Fatalf("name check %q: %q %v", n.name, got, err)
		}
	}
	verifies := []struct {
		name   string
		result string
		score  float64
	}{{"ﾔﾏﾀﾞ ﾀﾛｳ", "M", 1.0}, {"ﾔﾏﾀﾞ ﾀﾛ", "U", 0.8}, {"ｽｽﾞｷ ﾊﾅｺ", "U", 0.0}}
	for _, v := range verifies {
		got, err := w.link.Verify(ctx, "V-1", acctA, v.name)
		if err != nil || got.Result != v.result || got.Score != v.score {
			t.Fatalf("verify %q: %+v %v", v.name, got, err)
		}
	}
	if got, _ := w.link.Verify(ctx, "V-2", "001-1-0000999", "ﾔﾏﾀﾞ ﾀﾛｳ"); got.Result != "N" {
		t.Fatalf("verify unknown: %+v", got)
	}
	sc, err := w.link.Screen(ctx, corelink.ScreenRequest{TxID: "TX-S", Account: acctA, Name: "ﾔﾏﾀﾞ ﾀﾛｳ", Amount: 10,
		CounterpartyBank: "0005", CounterpartyName: "ｱｸﾔｸ ｼﾞﾛｳ"})
	if err != nil || sc.Result != "H" || sc.CaseRef == "" {
		t.Fatalf("screen: %+v %v", sc, err)
	}
	if sc, _ := w.link.Screen(ctx, corelink.ScreenRequest{Account: acctA, Name: "ﾔﾏﾀﾞ ﾀﾛｳ", Amount: 10}); sc.Result != "C" {
		t.Fatalf("screen clear: %+v", sc)
	}
	ok, _, err := w.link.Notify(ctx, corelink.Notification{Kind: "CR", TxID: "TX-N", Account: acctA, Amount: 99,
		PayerBank: "0005", PayerName: "ｽｽﾞｷ ﾊﾅｺ"})
	if err != nil || !ok {
		t.Fatalf("notify: %v %v", ok, err)
	}
	ns, _ := w.core.Notifications(ctx)
	if len(ns) != 1 || ns[0].TxID != "TX-N" || ns[0].Amount != 99 || ns[0].Account != acctA {
		t.Fatalf("notifications: %+v", ns)
	}
	// The txid travels on every journal line.
	lines, _ := w.core.Journal(ctx, acctA)
	if l := lines[1]; l.Ref != "P1" || l.TxID != "TX-P1" || l.Source != coresim.SourceMQ || l.Delta != 250 {
		t.Fatalf("journal: %+v", l)
	}
}

func TestLinkErrorsAreTyped(t *testing.T) {
	w := newWorld(t, 300*time.Millisecond)
	ctx := context.Background()
	w.open(t, acctA, "ﾔﾏﾀﾞ ﾀﾛｳ", 100)
	// Outside its online window the link does not even send.
	offline, err := corelink.Open(ctx, corelink.Config{Bank: bank, Transport: w.tr, Timeout: time.Second,
		Online: func(time.Time) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	defer offline.Close()
	_, err = offline.Apply(ctx, posting("P1", acctA, outbox.Credit, 1))
	var notSent *outbox.NotSentError
	if !errors.As(err, &notSent) {
		t.Fatalf("offline window: %v", err)
	}
	// A core that is down takes nothing and answers nothing: in doubt.
	w.core.SetOffline(true)
	_, err = w.link.Apply(ctx, posting("P2", acctA, outbox.Credit, 1))
	var inDoubt *outbox.InDoubtError
	if !errors.As(err, &inDoubt) {
		t.Fatalf("down core: %v", err)
	}
	if _, err := w.link.Balance(ctx, acctA); domainerr.Code(err) != "BANK_TIMEOUT" {
		t.Fatalf("balance from a down core: %v", err)
	}
	w.core.SetOffline(false)
	// The posting request expired on the queue unprocessed, so the core
	// provably never applied it.
	if lk, err := w.link.Lookup(ctx, "P2"); err != nil || lk.State != outbox.LookupUnknown {
		t.Fatalf("lookup after outage: %+v %v", lk, err)
	}
	if w.balance(t, acctA) != 100 {
		t.Fatal("balance changed")
	}
	// A posting that cannot be encoded is refused without sending.
	_, err = w.link.Apply(ctx, posting("REF-LONGER-THAN-THIRTY-TWO-BYTES-XXXXXXXX", acctA, outbox.Credit, 1))
	var refused *outbox.RefusedError
	if !errors.As(err, &refused) || refused.ReasonCode != "INVALID_REQUEST" {
		t.Fatalf("unencodable posting: %v", err)
	}
	if _, err := w.link.Balance(ctx, "bad"); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("bad account: %v", err)
	}
}

// TestOutboxThroughMQDrainsEachPostingOnce races drainers over the
// embedded transport against the non-idempotent simulated core.
func TestOutboxThroughMQDrainsEachPostingOnce(t *testing.T) {
	w := newWorld(t, 3*time.Second)
	w.open(t, acctA, "ﾔﾏﾀﾞ ﾀﾛｳ", 0)
	w.open(t, acctB, "ｽｽﾞｷ ﾊﾅｺ", 0)
	var ps []outbox.Posting
	for i := 0; i < 30; i++ {
		ps = append(ps, posting(fmt.Sprintf("A%03d", i), acctA, outbox.Credit, 10),
			posting(fmt.Sprintf("B%03d", i), acctB, outbox.Credit, 1))
	}
	// Debits that only succeed if the credits before them landed first.
	ps = append(ps, posting("A-DEBIT", acctA, outbox.Debit, 300), posting("B-DEBIT", acctB, outbox.Debit, 30))
	w.enqueue(t, ps...)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				res, err := w.ob.Drain(context.Background(), 10)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Claimed == 0 {
					c, _ := w.ob.Counts(context.Background())
					if c[outbox.Pending]+c[outbox.Claimed] == 0 {
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	for _, p := range ps {
		if n := w.timesApplied(t, p.Ref); n != 1 {
			t.Fatalf("%s applied %d times", p.Ref, n)
		}
	}
	if a, b := w.balance(t, acctA), w.balance(t, acctB); a != 0 || b != 0 {
		t.Fatalf("balances A=%d B=%d, want 0 (per-account order kept)", a, b)
	}
	c, _ := w.ob.Counts(context.Background())
	if c[outbox.Applied] != len(ps) {
		t.Fatalf("counts: %v", c)
	}
}

// The faults of a physically separate core, each ending with the posting
// applied exactly once.
func TestOutboxSurvivesCoreFaults(t *testing.T) {
	cases := []struct {
		name    string
		faults  coresim.Faults
		timeout time.Duration
		// the states the posting may be in right after the first drain;
		// on a loaded machine a redelivery can outlast the timeout.
		wantStatus []outbox.Status
	}{
		{"reply lost", coresim.Faults{DropNextReply: 1}, time.Second, []outbox.Status{outbox.InDoubt}},
		{"reply late", coresim.Faults{DelayNextReply: 1, ReplyDelay: 900 * time.Millisecond}, 300 * time.Millisecond,
			[]outbox.Status{outbox.InDoubt}},
		{"crash after apply before reply", coresim.Faults{CrashAfterApplyBeforeReply: 1}, 2 * time.Second,
			[]outbox.Status{outbox.Applied, outbox.InDoubt}},
		{"broker redelivery", coresim.Faults{DeliverTwice: 1}, 2 * time.Second, []outbox.Status{outbox.Applied, outbox.InDoubt}},
	}
	for _, backend := range []string{"embedded", "rabbit"} {
		for _, tc := range cases {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				var w *world
				if backend == "rabbit" {
					w = newWorldOn(t, t.TempDir(), rabbitOrSkipT(t), tc.timeout, fmt.Sprintf(".T%d", time.Now().UnixNano()))
				} else {
					w = newWorld(t, tc.timeout)
				}
				faultCase(t, w, tc.faults, tc.wantStatus)
			})
		}
	}
}

func faultCase(t *testing.T, w *world, faults coresim.Faults, wantStatus []outbox.Status) {
	w.open(t, acctA, "ﾔﾏﾀﾞ ﾀﾛｳ", 1000)
	ids := w.enqueue(t, posting("F1", acctA, outbox.Debit, 100), posting("F2", acctA, outbox.Debit, 1))
	w.core.InjectFaultsForTest(faults)
	if _, err := w.ob.Drain(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if e := w.status(t, ids[0]); !slices.Contains(wantStatus, e.Status) {
		t.Fatalf("after drain: %+v, want one of %v", e, wantStatus)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := w.ob.ResolveInDoubt(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := w.ob.Drain(context.Background(), 10); err != nil {
			t.Fatal(err)
		}
		c, _ := w.ob.Counts(context.Background())
		if c[outbox.Applied] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: %v", c)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := w.timesApplied(t, "F1"); n != 1 {
		t.Fatalf("F1 applied %d times", n)
	}
	if e := w.status(t, ids[0]); e.Sends != 1 {
		t.Fatalf("F1 sent %d times, want once: %+v", e.Sends, e)
	}
	if w.balance(t, acctA) != 899 {
		t.Fatalf("balance %d", w.balance(t, acctA))
	}
}

// A request the core never took (it was down; the request expired) is
// resent only after the inquiry proves the core has no trace of it.
func TestOutboxResendsOnlyWhatTheCoreNeverSaw(t *testing.T) {
	w := newWorld(t, time.Second)
	w.open(t, acctA, "ﾔﾏﾀﾞ ﾀﾛｳ", 0)
	ids := w.enqueue(t, posting("L1", acctA, outbox.Credit, 70))
	w.core.SetOffline(true)
	res, err := w.ob.Drain(context.Background(), 10)
	if err != nil || res.InDoubt != 1 {
		t.Fatalf("drain: %+v %v", res, err)
	}
	// While the core is still down the inquiry goes unanswered: nothing is resent.
	res, err = w.ob.ResolveInDoubt(context.Background())
	if err != nil || res.InDoubt != 1 || res.Resent != 0 {
		t.Fatalf("resolve while down: %+v %v", res, err)
	}
	w.core.SetOffline(false)
	res, err = w.ob.ResolveInDoubt(context.Background())
	if err != nil || res.Resent != 1 || res.Applied != 1 {
		t.Fatalf("resolve: %+v %v", res, err)
	}
	if e := w.status(t, ids[0]); e.Status != outbox.Applied || e.Sends != 2 || e.Lookups != 2 {
		t.Fatalf("row: %+v", e)
	}
	if w.timesApplied(t, "L1") != 1 || w.balance(t, acctA) != 70 {
		t.Fatal("not applied exactly once")
	}
}

func TestOverdraftAtDrainBlocksWithOneCase(t *testing.T) {
	w := newWorld(t, 3*time.Second)
	w.open(t, acctA, "ﾔﾏﾀﾞ ﾀﾛｳ", 100)
	ids := w.enqueue(t, posting("O1", acctA, outbox.Debit, 500))
	for i := 0; i < 3; i++ {
		if _, err := w.ob.Drain(context.Background(), 10); err != nil {
			t.Fatal(err)
		}
	}
	e := w.status(t, ids[0])
	if e.Status != outbox.Blocked || e.CaseID == "" || e.ReasonCode != "INSUFFICIENT_FUNDS" || e.Sends != 1 {
		t.Fatalf("row: %+v", e)
	}
	if w.cases.byKey[outbox.DedupKey("O1")] != 1 || w.cases.reason[outbox.DedupKey("O1")] != "INSUFFICIENT_FUNDS" {
		t.Fatalf("cases: %+v", w.cases.byKey)
	}
	if w.balance(t, acctA) != 100 {
		t.Fatal("core went below its balance")
	}
}

func TestPoisonRequestGoesToBackoutQueue(t *testing.T) {
	w := newWorld(t, 3*time.Second)
	ctx := context.Background()
	conn, err := w.tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s, _ := conn.Session(ctx)
	defer s.Close()
	rq, bq := coremsg.QueuesFor(bank).Request, coremsg.QueuesFor(bank).Backout
	if _, err := mq.SendRequest(ctx, s, rq, "CORE.001.REPLY", &mq.Message{Body: []byte("NOT A CORE MESSAGE")}); err != nil {
		t.Fatal(err)
	}
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := s.Get(gctx, bq, mq.Any)
	if err != nil {
		t.Fatal(err)
	}
	s.Commit(ctx)
	if string(m.Body) != "NOT A CORE MESSAGE" || m.Properties[mq.PropBackoutSource] != rq || m.Properties[mq.PropBackoutCount] != "3" {
		t.Fatalf("backout message: %q %v", m.Body, m.Properties)
	}
	// The core goes on serving after the poison message.
	w.open(t, acctA, "ﾔﾏﾀﾞ ﾀﾛｳ", 5)
	if b, err := w.link.Balance(ctx, acctA); err != nil || b.Ledger != 5 {
		t.Fatalf("balance after poison: %+v %v", b, err)
	}
}
