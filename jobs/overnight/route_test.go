package overnight_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/jobs/overnight"
	"github.com/zcgw/zcgw/jobs/overnight/corepickup"
	"github.com/zcgw/zcgw/outbox"
)

// mqCore is the MQ path to the simulated core as the outbox sees it
// (postings journalled with source MQ). It counts every call, so a test
// can prove what never reached the core over MQ.
type mqCore struct {
	core *coresim.Core
	mu   sync.Mutex
	refs []string // every Apply and Lookup, by reference
}

func (m *mqCore) Apply(ctx context.Context, p outbox.Posting) (outbox.ApplyResult, error) {
	m.mu.Lock()
	m.refs = append(m.refs, "apply:"+p.Ref)
	m.mu.Unlock()
	out, err := m.core.Post(ctx, coresim.PostIn{Ref: p.Ref, TxID: p.TxID, Account: p.Account, Kind: string(p.Kind),
		Amount: p.Amount, ReversalOf: p.ReversalOf})
	if err != nil {
		return outbox.ApplyResult{}, &outbox.InDoubtError{Cause: err}
	}
	if !out.Applied {
		return outbox.ApplyResult{}, &outbox.RefusedError{ReasonCode: out.ReasonCode, Message: "refused"}
	}
	return outbox.ApplyResult{BalanceAfter: out.BalanceAfter}, nil
}

func (m *mqCore) Lookup(ctx context.Context, ref string) (outbox.LookupResult, error) {
	m.mu.Lock()
	m.refs = append(m.refs, "lookup:"+ref)
	m.mu.Unlock()
	out, err := m.core.Lookup(ctx, ref)
	if err != nil {
		return outbox.LookupResult{}, err
	}
	return outbox.LookupResult{State: outbox.LookupState(out.State), ReasonCode: out.ReasonCode}, nil
}

func (m *mqCore) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.refs...)
}

// batchBank is a batch-window bank: its adapter (RealTime false) and its
// overnight exchange over the adapter's own database and outbox.
type batchBank struct {
	*env
	a  *adapter.Adapter
	mq *mqCore
	x  *overnight.Exchange
}

func newBatchBank(t *testing.T, balances map[string]int64) *batchBank {
	t.Helper()
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), false)
	b := &batchBank{env: e, mq: &mqCore{core: e.core}}
	var err error
	b.a, err = adapter.Open(ctx, adapter.Config{BankID: "001", DBPath: filepath.Join(e.dir, "adapter-batch.db"), Core: b.mq,
		Cases: adapter.CoordinatorCases{DB: e.zc, Cases: cases.New(e.clk, nil, 0)}, RealTime: false, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.a.Close() })
	if _, err := b.a.InitializeBank(ctx, bankapi.InitializeBankRequest{RequestIDValue: "init-001"}); err != nil {
		t.Fatal(err)
	}
	for acct, bal := range balances {
		if err := e.core.OpenAccount(ctx, acct, "YAMADA", bal); err != nil {
			t.Fatal(err)
		}
		if err := b.a.OpenAccount(ctx, adapter.Account{Hash: "h:" + acct, CoreAccount: acct, HolderName: "YAMADA",
			Status: adapter.AccountActive}, bal); err != nil {
			t.Fatal(err)
		}
	}
	b.x, err = overnight.Open(ctx, overnight.Config{Bank: "001", DB: b.a.DB(), Outbox: b.a.Outbox(),
		Inbound: e.inbound(), Results: e.results(), Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jpy(v int64) bankapi.Amount { return bankapi.Amount{Value: v, Currency: "JPY"} }

func (b *batchBank) debit(t *testing.T, txid, acct, lane string, v int64) {
	t.Helper()
	r, err := b.a.ExecuteDebit(context.Background(), bankapi.ExecuteDebitRequest{RequestIDValue: "d-" + txid, TxID: txid,
		Amount: jpy(v), DecisionProofRef: "DP-" + txid, Lane: lane, PayerAccountHash: "h:" + acct})
	if err != nil || r.Result != bankapi.ResultOK {
		t.Fatalf("execute-debit %s: %+v %v", txid, r, err)
	}
}

func (b *batchBank) credit(t *testing.T, txid, acct, lane string, v int64) {
	t.Helper()
	r, err := b.a.ExecuteCredit(context.Background(), bankapi.ExecuteCreditRequest{RequestIDValue: "c-" + txid, TxID: txid,
		Amount: jpy(v), DecisionProofRef: "DP-" + txid, Lane: lane, PayeeAccountHash: "h:" + acct})
	if err != nil || r.Result != bankapi.ResultOK {
		t.Fatalf("execute-credit %s: %+v %v", txid, r, err)
	}
}

// mqSweep is everything the outbox does over MQ: drain, stale-claim
// recovery, in-doubt resolution.
func (b *batchBank) mqSweep(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ob := b.a.Outbox()
	if _, err := ob.Drain(ctx, 100); err != nil {
		t.Fatal(err)
	}
	b.clk.Advance(time.Minute)
	if _, err := ob.RecoverStaleClaims(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := ob.ResolveInDoubt(ctx); err != nil {
		t.Fatal(err)
	}
}

func (b *batchBank) night(t *testing.T) overnight.Ingested {
	t.Helper()
	ctx := context.Background()
	if _, _, err := b.x.Send(ctx, date); err != nil {
		t.Fatal(err)
	}
	if _, err := corepickup.PickUp(ctx, b.core, b.clk, b.inbound(), b.results(), nil); err != nil {
		t.Fatal(err)
	}
	in, _, err := b.x.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func (b *batchBank) route(t *testing.T, txid string) outbox.Entry {
	t.Helper()
	es, err := b.a.Outbox().List(context.Background(), outbox.Filter{TxID: txid})
	if err != nil || len(es) != 1 {
		t.Fatalf("outbox rows of %s: %+v %v", txid, es, err)
	}
	return es[0]
}

// sameBalance checks the shadow's core balance against the core's.
func (b *batchBank) sameBalance(t *testing.T, acct string, want int64) {
	t.Helper()
	s, err := b.a.Shadow(context.Background(), "h:"+acct)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.core.Balance(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	if s.CoreBalance != want || c.Balance != want {
		t.Fatalf("%s: shadow core balance %d, core %d, want %d", acct, s.CoreBalance, c.Balance, want)
	}
}

const (
	acctA = "100-1-0000001"
	acctB = "100-1-0000002"
)

// TestBatchBankBulkGoesByFileNotMQ: a batch-window bank's BULK debit and
// DEFERRED credit go into the overnight file, never over MQ; a later
// EXPRESS debit of the same account waits for the file; after the batch
// run and the result file the core journal has each posting once and the
// shadow balance equals the core balance.
func TestBatchBankBulkGoesByFileNotMQ(t *testing.T) {
	b := newBatchBank(t, map[string]int64{acctA: 100_000, acctB: 5_000})
	b.debit(t, "TX-BULK", acctA, "BULK", 30_000)
	b.credit(t, "TX-DEFR", acctB, "DEFERRED", 2_000)
	b.debit(t, "TX-EXPR", acctA, "EXPRESS", 1_000)
	if r := b.route(t, "TX-BULK").Posting.Route; r != outbox.RouteFILE {
		t.Fatalf("BULK debit route %s", r)
	}
	if r := b.route(t, "TX-DEFR").Posting.Route; r != outbox.RouteFILE {
		t.Fatalf("DEFERRED credit route %s", r)
	}
	if r := b.route(t, "TX-EXPR").Posting.Route; r != outbox.RouteMQ {
		t.Fatalf("EXPRESS debit route %s", r)
	}
	b.mqSweep(t)
	if c := b.mq.calls(); len(c) != 0 {
		t.Fatalf("the MQ core was called before the file: %v", c)
	}
	if n := count(t, b.core.DB(), `SELECT COUNT(*) FROM CoreJournal WHERE source <> 'OPENING'`); n != 0 {
		t.Fatalf("%d journal lines before the night", n)
	}
	s, _ := b.a.Shadow(context.Background(), "h:"+acctA)
	if s.CoreBalance != 100_000 || s.PendingDebits != 31_000 || s.Available != 69_000 {
		t.Fatalf("shadow before the night %+v", s)
	}
	f, ok, err := b.x.Send(context.Background(), date)
	if err != nil || !ok || f.Records != 2 {
		t.Fatalf("send %+v %v %v", f, ok, err)
	}
	b.mqSweep(t) // the file is out: still nothing over MQ
	if c := b.mq.calls(); len(c) != 0 {
		t.Fatalf("the MQ core was called while the file was out: %v", c)
	}
	if s, _ := b.a.Shadow(context.Background(), "h:"+acctA); s.Available != 69_000 || s.Unsettled != 1 {
		t.Fatalf("shadow with the file out %+v", s)
	}
	if in := b.night(t); in.Posted != 2 || in.Rejected != 0 {
		t.Fatalf("night %+v", in)
	}
	for _, txid := range []string{"TX-BULK", "TX-DEFR"} {
		e := b.route(t, txid)
		if e.Status != outbox.Applied || e.Sends != 1 {
			t.Fatalf("%s after the night %+v", txid, e)
		}
		if n := count(t, b.core.DB(), `SELECT COUNT(*) FROM CoreJournal WHERE ref = ? AND source = 'BATCH'`, e.Posting.Ref); n != 1 {
			t.Fatalf("%s journalled %d times by the batch", txid, n)
		}
	}
	b.sameBalance(t, acctA, 70_000)
	b.sameBalance(t, acctB, 7_000)
	// Now the EXPRESS debit may go over MQ, once.
	b.mqSweep(t)
	if c := b.mq.calls(); len(c) != 1 || c[0] != "apply:"+b.route(t, "TX-EXPR").Posting.Ref {
		t.Fatalf("MQ calls after the night %v", c)
	}
	b.sameBalance(t, acctA, 69_000)
	b.night(t) // nothing queued: nothing changes
	if n := count(t, b.core.DB(), `SELECT COUNT(*) FROM CoreJournal WHERE source <> 'OPENING'`); n != 3 {
		t.Fatalf("%d journal lines, want 3", n)
	}
	if n := count(t, b.core.DB(), `SELECT COUNT(*) FROM (SELECT ref FROM CoreJournal WHERE ref <> '' GROUP BY ref HAVING COUNT(*) > 1)`); n != 0 {
		t.Fatalf("%d references journalled twice", n)
	}
}

// TestBatchBankFileRefusalBlocksWithOneCase: the core refuses a BULK debit
// in its result file (its balance was lowered out of band): the posting is
// BLOCKED with the reason, one Case is opened however often Receive runs,
// nothing was journalled, and the shadow's core balance did not move.
func TestBatchBankFileRefusalBlocksWithOneCase(t *testing.T) {
	b := newBatchBank(t, map[string]int64{acctA: 100_000})
	if err := b.core.AdjustBalanceOutOfBand(context.Background(), acctA, -95_000); err != nil {
		t.Fatal(err)
	}
	b.debit(t, "TX-BULK", acctA, "BULK", 30_000)
	if in := b.night(t); in.Posted != 0 || in.Rejected != 1 {
		t.Fatalf("night %+v", in)
	}
	for i := 0; i < 2; i++ {
		if _, _, err := b.x.Receive(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	e := b.route(t, "TX-BULK")
	if e.Status != outbox.Blocked || e.ReasonCode != "INSUFFICIENT_FUNDS" || e.CaseID == "" {
		t.Fatalf("refused posting %+v", e)
	}
	if n := count(t, b.zc, `SELECT COUNT(*) FROM Cases WHERE detection_path = 'OVERNIGHT_RESULT' AND related_txid = 'TX-BULK'`); n != 1 {
		t.Fatalf("%d Cases, want 1", n)
	}
	if n := count(t, b.core.DB(), `SELECT COUNT(*) FROM CoreJournal WHERE ref = ?`, e.Posting.Ref); n != 0 {
		t.Fatalf("refused posting journalled %d times", n)
	}
	b.mqSweep(t)
	if c := b.mq.calls(); len(c) != 0 {
		t.Fatalf("a refused FILE posting went over MQ: %v", c)
	}
	if s, _ := b.a.Shadow(context.Background(), "h:"+acctA); s.CoreBalance != 100_000 {
		t.Fatalf("shadow core balance %d after a refusal, want 100000", s.CoreBalance)
	}
}

// TestRealTimeBankBulkStaysOnMQ: a real-time bank's BULK posting is an MQ
// posting as before.
func TestRealTimeBankBulkStaysOnMQ(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), false)
	a, err := adapter.Open(ctx, adapter.Config{BankID: "001", DBPath: filepath.Join(e.dir, "adapter-rt.db"),
		Core: &mqCore{core: e.core}, RealTime: true, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := &batchBank{env: e, a: a}
	if _, err := a.InitializeBank(ctx, bankapi.InitializeBankRequest{RequestIDValue: "init"}); err != nil {
		t.Fatal(err)
	}
	if err := a.OpenAccount(ctx, adapter.Account{Hash: "h:" + acctA, CoreAccount: acctA, HolderName: "Y", Status: adapter.AccountActive}, 10); err != nil {
		t.Fatal(err)
	}
	b.credit(t, "TX-RT", acctA, "BULK", 5)
	if r := b.route(t, "TX-RT").Posting.Route; r != outbox.RouteMQ {
		t.Fatalf("real-time bank BULK route %s", r)
	}
}
