package lane

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

func newGtid(id string) NewGtid {
	return NewGtid{GTID: id, InitiatorBankID: "001", Legs: []NewLeg{
		{LegID: id + "-P1", Role: LegPayer, BankID: "001", AccountHash: "acc-a", AmountValue: 700},
		{LegID: id + "-E1", Role: LegPayee, BankID: "002", AccountHash: "acc-b", AmountValue: 700},
	}, Payload: map[string]any{"legs": 2}}
}

func (e *env) gtidRow(t testing.TB, id string) (state GtidState, total int64, legs int, entries int) {
	t.Helper()
	ctx := context.Background()
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT state, total_amount, leg_count FROM GtidTransactions WHERE gtid = ?", id).Scan(&state, &total, &legs); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM FinalityLog WHERE gtid = ? AND txid IS NULL", id).Scan(&entries)
	}); err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	return
}

func (e *env) legs(t testing.TB, gtid string) []Leg {
	t.Helper()
	var out []Leg
	if err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		var err error
		out, err = LegsInTx(context.Background(), tx, gtid)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestInsertGtidWritesRowLegsAndEntry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	res, err := e.lanes.InsertGtidWithLog(ctx, newGtid("GT-1"))
	if err != nil || !res.Inserted || res.Entry.EventType != finality.GtidRegistered || res.Entry.ChainID() != "GT-1" || res.Entry.StateTo != "GT_RECEIVED" {
		t.Fatalf("insert: %+v %v", res, err)
	}
	state, total, n, entries := e.gtidRow(t, "GT-1")
	if state != GtReceived || total != 700 || n != 2 || entries != 1 {
		t.Fatalf("row: %s %d %d %d", state, total, n, entries)
	}
	legs := e.legs(t, "GT-1")
	if len(legs) != 2 || legs[0].Role != LegPayee || legs[1].Role != LegPayer || legs[0].State != LegPending || legs[1].Currency != "JPY" || legs[1].TxID != "" {
		t.Fatalf("legs: %+v", legs)
	}
	// Registering the same gtid again writes nothing.
	before := e.totalLogs(t)
	res, err = e.lanes.InsertGtidWithLog(ctx, newGtid("GT-1"))
	if err != nil || res.Inserted || e.totalLogs(t) != before {
		t.Fatalf("replay: %+v %v", res, err)
	}
	e.verify(t)
}

func TestInsertGtidRefusals(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	noPayee := newGtid("GT-A")
	noPayee.Legs = noPayee.Legs[:1]
	badEntry := newGtid("GT-B")
	badEntry.State = GtDecidedToSettle
	badRole := newGtid("GT-C")
	badRole.Legs[0].Role = "BOTH"
	zero := newGtid("GT-D")
	zero.Legs[1].AmountValue = 0
	dup := newGtid("GT-E")
	dup.Legs[1].LegID = dup.Legs[0].LegID
	for want, n := range map[string]NewGtid{"MISSING_LEG_ROLE": noPayee, "IMPOSSIBLE_TRANSITION": badEntry, "INVALID_REQUEST": badRole, "INVALID_AMOUNT": zero} {
		if _, err := e.lanes.InsertGtidWithLog(ctx, n); domainerr.Code(err) != want {
			t.Errorf("%s: got %v, want %s", n.GTID, err, want)
		}
	}
	if _, err := e.lanes.InsertGtidWithLog(ctx, dup); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Errorf("repeated leg_id: %v", err)
	}
	// A leg_id another GTID uses rolls the whole registration back.
	if _, err := e.lanes.InsertGtidWithLog(ctx, newGtid("GT-F")); err != nil {
		t.Fatal(err)
	}
	clash := newGtid("GT-G")
	clash.Legs[0].LegID = "GT-F-P1"
	if _, err := e.lanes.InsertGtidWithLog(ctx, clash); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("clash: %v", err)
	}
	var n int
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM GtidTransactions WHERE gtid = 'GT-G'").Scan(&n)
	}); err != nil || n != 0 {
		t.Fatalf("GT-G half-written: %d %v", n, err)
	}
	if e.totalLogs(t) != 1 {
		t.Fatalf("entries = %d, want only GT-F's", e.totalLogs(t))
	}
}

func TestInsertGtidAtSettledRecordsSettlement(t *testing.T) {
	e := newEnv(t)
	n := newGtid("GT-DNS")
	n.State = GtSettled
	res, err := e.lanes.InsertGtidWithLog(context.Background(), n)
	if err != nil || !res.Inserted || res.Entry.EventType != finality.GtidSettled || res.Entry.StateTo != "GT_SETTLED" || res.Entry.StateFrom != "" {
		t.Fatalf("%+v %v", res, err)
	}
	for _, g := range e.legs(t, "GT-DNS") {
		if g.State != LegSettled {
			t.Fatalf("leg %+v", g)
		}
	}
}

func TestTransitionLeg(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := e.lanes.InsertGtidWithLog(ctx, newGtid("GT-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lanes.TransitionLeg(ctx, LegTransition{LegID: "GT-1-P1", From: LegPending, To: LegSettled}); domainerr.Code(err) != "IMPOSSIBLE_TRANSITION" {
		t.Fatalf("skip: %v", err)
	}
	if _, err := e.lanes.TransitionLeg(ctx, LegTransition{LegID: "GT-1-P1", GTID: "GT-2", From: LegPending, To: LegReady}); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("wrong gtid: %v", err)
	}
	if _, err := e.lanes.TransitionLeg(ctx, LegTransition{LegID: "GT-1-P1", From: LegPending, To: LegReady, TxID: "TX-1"}); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("txid on READY: %v", err)
	}
	if _, err := e.lanes.TransitionLeg(ctx, LegTransition{LegID: "nope", From: LegPending, To: LegReady}); domainerr.Code(err) != "GTID_NOT_FOUND" {
		t.Fatalf("missing leg: %v", err)
	}
	res, err := e.lanes.TransitionLeg(ctx, LegTransition{LegID: "GT-1-P1", GTID: "GT-1", From: LegPending, To: LegReady, BankProofRef: `{"result":"OK"}`})
	if err != nil || !res.Applied || res.State != LegReady || res.Version != 1 {
		t.Fatalf("ready: %+v %v", res, err)
	}
	res, err = e.lanes.TransitionLeg(ctx, LegTransition{LegID: "GT-1-P1", From: LegPending, To: LegNotReady})
	if err != nil || res.Applied || res.State != LegReady {
		t.Fatalf("stale: %+v %v", res, err)
	}
	if g := e.legs(t, "GT-1")[1]; g.State != LegReady || g.BankProofRef != `{"result":"OK"}` || g.Version != 1 {
		t.Fatalf("leg: %+v", g)
	}
	if e.totalLogs(t) != 1 {
		t.Fatal("a leg move wrote a FinalityLog entry")
	}
}

// N goroutines race to answer the same leg READY and NOT_READY: exactly
// one answer lands.
func TestTransitionLegRace(t *testing.T) {
	ctx := context.Background()
	for round := 0; round < 8; round++ {
		e := newEnv(t)
		if _, err := e.lanes.InsertGtidWithLog(ctx, newGtid("GT-R")); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		var won atomic.Int32
		var winner atomic.Value
		for i := 0; i < racers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				to := LegReady
				if i%2 == 1 {
					to = LegNotReady
				}
				res, err := e.lanes.TransitionLeg(ctx, LegTransition{LegID: "GT-R-E1", From: LegPending, To: to})
				if err != nil {
					t.Error(err)
				}
				if res.Applied {
					won.Add(1)
					winner.Store(to)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("round %d: %d winners", round, won.Load())
		}
		if g := e.legs(t, "GT-R")[0]; g.State != winner.Load().(LegState) || g.Version != 1 {
			t.Fatalf("leg %+v, winner %v", g, winner.Load())
		}
	}
}

func legTx(gtid, txid string) LegTx {
	return LegTx{GTID: gtid, LegIDs: []string{gtid + "-P1", gtid + "-E1"}, Tx: NewTx{TxID: txid, AmountValue: 700,
		PayerBankID: "001", PayerAccountHash: "acc-a", PayeeBankID: "002", PayeeAccountHash: "acc-b",
		IdempotencyKey: "GTID:" + gtid + ":" + txid}}
}

func (e *env) decide(t testing.TB, gtid string) {
	t.Helper()
	ctx := context.Background()
	for _, id := range []string{gtid + "-P1", gtid + "-E1"} {
		if res, err := e.lanes.TransitionLeg(ctx, LegTransition{LegID: id, From: LegPending, To: LegReady}); err != nil || !res.Applied {
			t.Fatalf("%s: %+v %v", id, res, err)
		}
	}
	for _, s := range [][2]GtidState{{GtReceived, GtPrechecked}, {GtPrechecked, GtDecidedToSettle}} {
		if res, err := e.lanes.TransitionGtidWithLog(ctx, GtidTransition{GTID: gtid, From: s[0], To: s[1], EventType: finality.GtidDecided}); err != nil || !res.Applied {
			t.Fatalf("%v: %+v %v", s, res, err)
		}
	}
}

func TestMaterialiseLegTx(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := e.lanes.InsertGtidWithLog(ctx, newGtid("GT-1")); err != nil {
		t.Fatal(err)
	}
	// Before the GT-level decision no leg transfer may exist.
	if _, err := e.lanes.MaterialiseLegTxWithLog(ctx, legTx("GT-1", "TX-L1")); domainerr.Code(err) != "INVALID_STATE" {
		t.Fatalf("undecided: %v", err)
	}
	e.decide(t, "GT-1")
	// Lane GTID only: an EXPRESS row cannot enter at DECIDED_TO_SETTLE.
	bad := legTx("GT-1", "TX-L0")
	bad.Tx.Lane = "EXPRESS"
	if _, err := e.lanes.MaterialiseLegTxWithLog(ctx, bad); domainerr.Code(err) != "IMPOSSIBLE_TRANSITION" {
		t.Fatalf("EXPRESS leg: %v", err)
	}
	res, err := e.lanes.MaterialiseLegTxWithLog(ctx, legTx("GT-1", "TX-L1"))
	if err != nil || !res.Inserted || res.Entry.EventType != finality.DecidedToSettle || res.Entry.StateTo != "DECIDED_TO_SETTLE" || res.Entry.ChainID() != "TX-L1" {
		t.Fatalf("materialise: %+v %v", res, err)
	}
	if r := e.row(t, "TX-L1"); r.State != DecidedToSettle || r.Owner != OwnerZC || r.Logs != 1 {
		t.Fatalf("row %+v", r)
	}
	for _, g := range e.legs(t, "GT-1") {
		if g.State != LegDecided || g.TxID != "TX-L1" {
			t.Fatalf("leg %+v", g)
		}
	}
	// Again: the txid exists, nothing moves.
	res, err = e.lanes.MaterialiseLegTxWithLog(ctx, legTx("GT-1", "TX-L1"))
	if err != nil || res.Inserted {
		t.Fatalf("replay: %+v %v", res, err)
	}
	// Another transfer over legs already decided rolls back whole.
	res, err = e.lanes.MaterialiseLegTxWithLog(ctx, legTx("GT-1", "TX-L2"))
	if domainerr.Code(err) != "CONCURRENCY_CONFLICT" {
		t.Fatalf("second transfer for the same legs: %+v %v", res, err)
	}
	var n int
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM Transactions WHERE txid = 'TX-L2'").Scan(&n)
	}); err != nil || n != 0 {
		t.Fatalf("TX-L2 half-written: %d %v", n, err)
	}
	e.verify(t)
}

// N goroutines race to materialise the same legs under different txids:
// exactly one transfer exists afterwards.
func TestMaterialiseLegTxRace(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := e.lanes.InsertGtidWithLog(ctx, newGtid("GT-R")); err != nil {
		t.Fatal(err)
	}
	e.decide(t, "GT-R")
	var wg sync.WaitGroup
	start := make(chan struct{})
	var won atomic.Int32
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			res, err := e.lanes.MaterialiseLegTxWithLog(ctx, legTx("GT-R", "TX-R"+string(rune('A'+i))))
			if err != nil && domainerr.Code(err) != "CONCURRENCY_CONFLICT" {
				t.Error(err)
			}
			if err == nil && res.Inserted {
				won.Add(1)
			}
		}(i)
	}
	close(start)
	wg.Wait()
	var n int
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM Transactions WHERE lane = 'GTID'").Scan(&n)
	}); err != nil || n != 1 || won.Load() != 1 {
		t.Fatalf("transfers %d, winners %d, %v", n, won.Load(), err)
	}
	e.verify(t)
}

// N goroutines race the GT-level decision against the cancel from
// GT_PRECHECKED: exactly one applies and the chain holds exactly its entry.
func TestGtidDecisionVersusCancelRace(t *testing.T) {
	ctx := context.Background()
	for round := 0; round < 8; round++ {
		e := newEnv(t)
		if _, err := e.lanes.InsertGtidWithLog(ctx, newGtid("GT-R")); err != nil {
			t.Fatal(err)
		}
		if _, err := e.lanes.TransitionGtidWithLog(ctx, GtidTransition{GTID: "GT-R", From: GtReceived, To: GtPrechecked, EventType: finality.GtidPrechecked}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		var won atomic.Int32
		for i := 0; i < racers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				tr := GtidTransition{GTID: "GT-R", From: GtPrechecked, To: GtDecidedToSettle, EventType: finality.GtidDecided}
				if i%2 == 1 {
					tr.To, tr.EventType = GtDecidedCancel, finality.GtidDecidedCancel
				}
				res, err := e.lanes.TransitionGtidWithLog(ctx, tr)
				if err != nil {
					t.Error(err)
				}
				if res.Applied {
					won.Add(1)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		state, _, _, entries := e.gtidRow(t, "GT-R")
		if won.Load() != 1 || entries != 3 || (state != GtDecidedToSettle && state != GtDecidedCancel) {
			t.Fatalf("round %d: winners %d, entries %d, state %s", round, won.Load(), entries, state)
		}
	}
}
