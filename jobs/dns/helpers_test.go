package dns

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// 2026-12-02 16:00 JST.
var t0 = time.Date(2026, 12, 2, 16, 0, 0, 0, clock.JST)

const day = "2026-12-02"

type env struct {
	db    *store.DB
	led   *ledger.Ledger
	svc   *Service
	lanes *lane.Lanes
	clk   *clock.Manual
	flog  *finality.Log
	seq   int
}

// newEnv opens one coordinator database (ledger, coordinator schema and
// this package's schema on one handle, as the server wires it) with banks
// 001..00n.
func newEnv(t testing.TB, banks int) *env {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewManual(t0)
	led, err := ledger.Open(ctx, filepath.Join(t.TempDir(), ledger.FileName), clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	db := led.DB()
	if err := db.Write(ctx, func(tx *store.Tx) error { _, err := tx.ExecContext(ctx, store.Schema); return err }); err != nil {
		t.Fatal(err)
	}
	if err := EnsureSchema(ctx, db); err != nil {
		t.Fatal(err)
	}
	flog := finality.New(clk)
	e := &env{db: db, led: led, clk: clk, flog: flog, svc: New(db, flog, sysmode.Gate{}, clk, nil),
		lanes: lane.New(db, flog, sysmode.Gate{}, clk, nil)}
	for i := 1; i <= banks; i++ {
		e.exec(t, `INSERT INTO Participants (bank_id, bank_name, ingress_base_url, h_limit, registered_at)
			VALUES (?, ?, ?, 1000000000, '2026-01-01T00:00:00.000000000Z')`, bank(i), "Bank "+bank(i), "/bank/"+bank(i))
	}
	return e
}

func bank(i int) string { return fmt.Sprintf("%03d", i) }

func (e *env) exec(t testing.TB, q string, args ...any) {
	t.Helper()
	if err := e.db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), q, args...)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// settledTx creates a transfer through the lane primitives and moves it
// to state (SETTLED for the DNS candidates): RECEIVED -> PRECHECKED ->
// DECIDED_TO_SETTLE -> SETTLED.
func (e *env) settledTx(t testing.TB, laneName, payer, payee string, amount int64, to lane.TxState) string {
	t.Helper()
	e.seq++
	id := fmt.Sprintf("TX-%05d", e.seq)
	ctx := context.Background()
	path := []struct {
		from, to lane.TxState
		ev       finality.EventType
	}{
		{lane.Received, lane.Prechecked, finality.PreCheckPassed},
		{lane.Prechecked, lane.DecidedToSettle, finality.DecidedToSettle},
		{lane.DecidedToSettle, lane.Settled, finality.Settled},
	}
	err := e.db.Write(ctx, func(tx *store.Tx) error {
		if _, err := e.lanes.InsertTxInTx(ctx, tx, lane.NewTx{TxID: id, Lane: laneName, AmountValue: amount, PayerBankID: payer,
			PayerAccountHash: "acc-" + payer, PayeeBankID: payee, PayeeAccountHash: "acc-" + payee,
			IdempotencyKey: "TX:" + id + ":PaymentInitiated:" + payer}); err != nil {
			return err
		}
		for _, p := range path {
			if to == lane.Received {
				return nil
			}
			res, err := e.lanes.TransitionInTx(ctx, tx, lane.Transition{TxID: id, From: p.from, To: p.to, EventType: p.ev})
			if err != nil {
				return err
			}
			if !res.Applied {
				return fmt.Errorf("transition %s -> %s not applied", p.from, p.to)
			}
			if p.to == to {
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	if to == lane.Settled && laneName != "HIGH_VALUE" {
		// what the orchestrator does when a non HIGH_VALUE transfer settles
		for _, m := range []struct {
			bank string
			d    int64
		}{{payer, -amount}, {payee, amount}} {
			e.exec(t, `INSERT OR IGNORE INTO SettlementPositions (bank_id, venue, currency, balance, updated_at) VALUES (?, 'ZC', 'JPY', 0, 'x')`, m.bank)
			e.exec(t, `UPDATE SettlementPositions SET balance = balance + ? WHERE bank_id = ? AND venue = 'ZC'`, m.d, m.bank)
		}
	}
	return id
}

// zcOpen is the bank's open ZC net position.
func (e *env) zcOpen(t testing.TB, b string) int64 {
	t.Helper()
	var bal int64
	if err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		err := tx.QueryRowContext(context.Background(), `SELECT COALESCE(SUM(balance), 0) FROM SettlementPositions WHERE bank_id = ? AND venue = 'ZC'`, b).Scan(&bal)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return bal
}

func (e *env) owner(t testing.TB, txid string) (owner, cycle string) {
	t.Helper()
	var c sql.NullString
	if err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT owner, dns_cycle_id FROM Transactions WHERE txid = ?`, txid).Scan(&owner, &c)
	}); err != nil {
		t.Fatal(err)
	}
	return owner, c.String
}

func (e *env) boj(t testing.TB, b string) int64 {
	t.Helper()
	var bal int64
	if err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		var err error
		bal, err = balanceOf(context.Background(), tx, VenueBOJ, b, "JPY")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return bal
}

func (e *env) count(t testing.TB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), q, args...).Scan(&n)
	}); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// dump is every row DNS touches, as text: comparing two dumps proves a
// re-run changed nothing.
func (e *env) dump(t testing.TB) string {
	t.Helper()
	var out string
	queries := []string{
		`SELECT txid || '|' || owner || '|' || COALESCE(dns_cycle_id,'') || '|' || state || '|' || version FROM Transactions ORDER BY txid`,
		`SELECT cycle_id || '|' || state || '|' || igs_mode || '|' || COALESCE(net_positions,'') || '|' || COALESCE(hold_reason,'') || '|' || COALESCE(public_message_id,'') || '|' || COALESCE(updated_at,'') FROM DnsCycles ORDER BY cycle_id`,
		`SELECT id || '|' || net_position || '|' || is_settled FROM DnsNetPositions ORDER BY id`,
		`SELECT bank_id || '|' || venue || '|' || balance FROM SettlementPositions ORDER BY bank_id, venue`,
		`SELECT cycle_id || '|' || bank_id || '|' || amount FROM DnsSettlementPostings ORDER BY cycle_id, bank_id`,
		`SELECT COUNT(*) FROM FinalityLog`,
	}
	err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		for _, q := range queries {
			rows, err := tx.QueryContext(context.Background(), q)
			if err != nil {
				return err
			}
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					rows.Close()
					return err
				}
				out += s + "\n"
			}
			rows.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) events(t testing.TB, chain string) []string {
	t.Helper()
	var out []string
	err := e.db.Read(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), `SELECT event_type FROM FinalityLog WHERE gtid = ? AND txid IS NULL ORDER BY event_seq`, chain)
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
