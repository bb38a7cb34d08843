package hlimit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// A cancelled transfer's amount goes back to the daily total of the JST
// business date it was accepted on; once that date has been reset, there
// is nothing to give back. (External test package: transfers are created
// through the lane primitive, the only writer of Transactions.)
func TestGiveBackDailyForTxOnlyOnItsBusinessDate(t *testing.T) {
	ctx := context.Background()
	db, err := store.OpenCoordinator(ctx, filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewManual(time.Date(2026, 4, 1, 14, 30, 0, 0, time.UTC)) // 2026-04-01 23:30 JST
	h := hlimit.New(clk, nil)
	lanes := lane.New(db, finality.New(clk), sysmode.Gate{}, clk, nil)
	write := func(f func(tx *store.Tx) error) {
		t.Helper()
		if err := db.Write(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	write(func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO Participants (bank_id, bank_name, ingress_base_url, h_limit, registered_at)
			VALUES ('001', 'Bank 001', '/bank/001', 0, ?), ('002', 'Bank 002', '/bank/002', 0, ?)`, clock.Stamp(clk.Now()), clock.Stamp(clk.Now()))
		return err
	})
	// accept creates a transfer whose amount was counted in date's total
	// ("" for one never counted).
	accept := func(txid string, amount int64, date string) {
		t.Helper()
		payload := map[string]any{}
		if date != "" {
			payload[hlimit.DailyDateKey] = date
		}
		res, err := lanes.InsertTxWithLog(ctx, lane.NewTx{TxID: txid, Lane: "EXPRESS", AmountValue: amount, PayerBankID: "001",
			PayerAccountHash: "h:a", PayeeBankID: "002", PayeeAccountHash: "h:b", IdempotencyKey: "k-" + txid, Payload: payload})
		if err != nil || !res.Inserted {
			t.Fatalf("insert %s: %+v %v", txid, res, err)
		}
	}
	consume := func(amount int64) {
		t.Helper()
		write(func(tx *store.Tx) error { _, err := h.ConsumeDaily(ctx, tx, "001", amount); return err })
	}
	giveBack := func(txid string) int64 {
		t.Helper()
		var n int64
		write(func(tx *store.Tx) error { var err error; n, err = h.GiveBackDailyForTx(ctx, tx, txid); return err })
		return n
	}
	used := func() int64 {
		t.Helper()
		var d hlimit.Daily
		write(func(tx *store.Tx) error { var err error; d, err = h.DailyOf(ctx, tx, "001"); return err })
		return d.Used
	}

	consume(900)
	accept("TX-A", 600, "2026-04-01")
	accept("TX-B", 400, "2026-04-01")
	accept("TX-N", 100, "")
	if n := giveBack("TX-A"); n != 600 || used() != 300 {
		t.Fatalf("same day: gave back %d, used %d; want 600 and 300", n, used())
	}
	if n := giveBack("TX-N"); n != 0 || used() != 300 {
		t.Fatalf("never counted: gave back %d, used %d; want 0 and 300", n, used())
	}
	// TX-B (400) is more than the 300 left: the total never goes negative.
	if n := giveBack("TX-B"); n != 0 || used() != 300 {
		t.Fatalf("over the total: gave back %d, used %d; want 0 and 300", n, used())
	}
	accept("TX-C", 200, "2026-04-01")
	// 00:00 JST on 04-02: the new day's total owes nothing to 04-01's transfers.
	clk.Set(time.Date(2026, 4, 1, 15, 0, 0, 0, time.UTC))
	consume(500)
	if n := giveBack("TX-C"); n != 0 || used() != 500 {
		t.Fatalf("after the reset: gave back %d, used %d; want 0 and 500", n, used())
	}
	write(func(tx *store.Tx) error {
		if _, err := h.GiveBackDailyForTx(ctx, tx, "TX-NONE"); !domainerr.Has(err, "TX_NOT_FOUND") {
			return fmt.Errorf("unknown txid: %v", err)
		}
		return nil
	})
}
