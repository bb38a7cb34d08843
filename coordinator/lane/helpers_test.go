package lane

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

type env struct {
	db    *store.DB
	lanes *Lanes
	modes *sysmode.Controller
	clk   *clock.Manual
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenCoordinator(ctx, filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewManual(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC))
	log := finality.New(clk)
	e := &env{db: db, lanes: New(db, log, sysmode.Gate{}, clk, nil), modes: sysmode.NewController(db, log, clk, nil), clk: clk}
	e.exec(t, `INSERT INTO Participants (bank_id, bank_name, ingress_base_url, h_limit, h_used, registered_at) VALUES
		('001', 'Bank One', '/bank/001', 1000000, 0, '2026-01-01T00:00:00.000000000Z'),
		('002', 'Bank Two', '/bank/002', 1000000, 0, '2026-01-01T00:00:00.000000000Z')`)
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

func newTx(id string) NewTx {
	return NewTx{TxID: id, Lane: "EXPRESS", AmountValue: 5000, PayerBankID: "001", PayerAccountHash: "acc-a",
		PayeeBankID: "002", PayeeAccountHash: "acc-b", IdempotencyKey: "TX:" + id + ":PaymentInitiated:001",
		Payload: map[string]any{"amount": 5000}}
}

// seedTx inserts a transaction through the primitive, then (test-only,
// allowed inside package lane) forces state and owner.
func (e *env) seedTx(t testing.TB, id string, state TxState, owner string) {
	t.Helper()
	e.seedNewTx(t, newTx(id), state, owner)
}

func (e *env) seedNewTx(t testing.TB, n NewTx, state TxState, owner string) {
	t.Helper()
	res, err := e.lanes.InsertTxWithLog(context.Background(), n)
	if err != nil || !res.Inserted {
		t.Fatalf("insert %s: %+v %v", n.TxID, res, err)
	}
	if state != Received || owner != OwnerZC {
		e.exec(t, "UPDATE Transactions SET state = ?, owner = ? WHERE txid = ?", string(state), owner, n.TxID)
	}
}

// reserveH books an H reservation the way coordinator/hlimit does.
func (e *env) reserveH(t testing.TB, txid, bank string, amount int64) {
	t.Helper()
	e.exec(t, "UPDATE Participants SET h_used = h_used + ? WHERE bank_id = ?", amount, bank)
	e.exec(t, "INSERT INTO HReservations (reservation_id, txid, bank_id, amount, created_at) VALUES (?, ?, ?, ?, 'x')", "HR-"+txid, txid, bank, amount)
}

type txRow struct {
	State   TxState
	Version int64
	Owner   string
	Reason  string
	Logs    int
}

func (e *env) row(t testing.TB, id string) txRow {
	t.Helper()
	ctx := context.Background()
	var r txRow
	var reason sql.NullString
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT state, version, owner, reason_code FROM Transactions WHERE txid = ?", id).Scan(&r.State, &r.Version, &r.Owner, &reason); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM FinalityLog WHERE txid = ?", id).Scan(&r.Logs)
	}); err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	r.Reason = reason.String
	return r
}

func (e *env) hUsed(t testing.TB, bank string) (used int64, unreleased int) {
	t.Helper()
	ctx := context.Background()
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT h_used FROM Participants WHERE bank_id = ?", bank).Scan(&used); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM HReservations WHERE bank_id = ? AND is_released = 0", bank).Scan(&unreleased)
	}); err != nil {
		t.Fatal(err)
	}
	return
}

func (e *env) dailyUsed(t testing.TB, bank string) int64 {
	t.Helper()
	var n int64
	if err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), "SELECT daily_amount_used FROM Participants WHERE bank_id = ?", bank).Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) totalLogs(t testing.TB) int {
	t.Helper()
	var n int
	if err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM FinalityLog").Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) verify(t testing.TB) {
	t.Helper()
	rep, err := finality.VerifyAll(context.Background(), e.db)
	if err != nil || !rep.OK() {
		t.Fatalf("FinalityLog does not verify: %+v %v", rep, err)
	}
}

// anyNext returns some allowed successor of s.
func anyNext(s TxState) TxState { return AllowedTransitions[s][0] }

func eventFor(to TxState) finality.EventType {
	m := map[TxState]finality.EventType{
		Prechecked: finality.PreCheckPassed, PrecheckedSuspended: finality.Suspended, HReserved: finality.HReserved,
		HtlcLocked: finality.HtlcLocked, HtlcOnchainPending: finality.HtlcOnchainPending,
		HtlcFulfillRequested: finality.HtlcFulfillRequested, DecidedToSettle: finality.DecidedToSettle,
		DecidedCancel: finality.DecidedCancel, PayerExecConfirmed: finality.PayerExecConfirmed,
		PayeeExecConfirmed: finality.PayeeExecConfirmed, Suspended: finality.Suspended,
		FailedExecution: finality.FailedExecution, Cancelled: finality.Cancelled, Settled: finality.Settled,
	}
	if ev, ok := m[to]; ok {
		return ev
	}
	panic(fmt.Sprint("no event for ", to))
}
