package hlimit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// 2026-04-01 23:30 JST.
var t0 = time.Date(2026, 4, 1, 14, 30, 0, 0, time.UTC)

func openDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.OpenCoordinator(context.Background(), filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t testing.TB, db *store.DB, q string, args ...any) {
	t.Helper()
	if err := db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), q, args...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func seedBank(t testing.TB, db *store.DB, bankID string, hLimit int64) {
	exec(t, db, `INSERT INTO Participants (bank_id, bank_name, ingress_base_url, h_limit, registered_at)
		VALUES (?, ?, ?, ?, ?)`, bankID, "Bank "+bankID, "/bank/"+bankID, hLimit, clock.Stamp(t0))
}

func seedCurrency(t testing.TB, db *store.DB, bankID, currency string, hLimit int64) {
	exec(t, db, "INSERT INTO ParticipantCurrencyLimits (bank_id, currency, h_limit) VALUES (?, ?, ?)", bankID, currency, hLimit)
}

func usage(t testing.TB, db *store.DB, bankID, currency string) Usage {
	t.Helper()
	var u Usage
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		var err error
		u, err = UsageOf(context.Background(), tx, bankID, currency)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return u
}

// unreleasedSum is SUM(amount) of unreleased reservations for (bank, currency).
func unreleasedSum(t testing.TB, db *store.DB, bankID, currency string) (sum int64, n int) {
	t.Helper()
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(),
			"SELECT COALESCE(SUM(amount), 0), COUNT(*) FROM HReservations WHERE bank_id = ? AND currency = ? AND is_released = 0",
			bankID, currency).Scan(&sum, &n)
	}); err != nil {
		t.Fatal(err)
	}
	return sum, n
}

func reconcile(t testing.TB, db *store.DB) []Mismatch {
	t.Helper()
	m, err := ReconcileDB(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReserveAndReleaseJPYAndUSD(t *testing.T) {
	db := openDB(t)
	seedBank(t, db, "001", 1000)
	seedCurrency(t, db, "001", "USD", 50)
	h := New(clock.NewManual(t0), nil)
	ctx := context.Background()

	r1, err := h.ReserveDB(ctx, db, ReserveRequest{ReservationID: "HRES-1", TxID: "TX-1", BankID: "001", Amount: 600})
	if err != nil {
		t.Fatal(err)
	}
	if r1 != (Reservation{ID: "HRES-1", TxID: "TX-1", BankID: "001", Currency: "JPY", Amount: 600, Mode: "RESERVED", CreatedAt: "2026-04-01T14:30:00.000000000Z"}) {
		t.Fatalf("reservation %+v", r1)
	}
	// 600 + 401 > 1000: refused, nothing written.
	_, err = h.ReserveDB(ctx, db, ReserveRequest{TxID: "TX-2", BankID: "001", Amount: 401})
	de, ok := domainerr.As(err)
	if !ok || de.Code != "H_LIMIT_EXCEEDED" || de.Details["available"] != int64(400) || de.Details["requested"] != int64(401) {
		t.Fatalf("over limit: %v %+v", err, de)
	}
	// Exactly up to the limit is allowed.
	if _, err := h.ReserveDB(ctx, db, ReserveRequest{TxID: "TX-2", BankID: "001", Amount: 400}); err != nil {
		t.Fatal(err)
	}
	if u := usage(t, db, "001", "JPY"); u != (Usage{Limit: 1000, Used: 1000}) {
		t.Fatalf("JPY usage %+v", u)
	}
	// USD uses its own counter; JPY is full but USD is not.
	if _, err := h.ReserveDB(ctx, db, ReserveRequest{TxID: "TX-3", BankID: "001", Currency: "USD", Amount: 50}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReserveDB(ctx, db, ReserveRequest{TxID: "TX-4", BankID: "001", Currency: "USD", Amount: 1}); !domainerr.Has(err, "H_LIMIT_EXCEEDED") {
		t.Fatalf("USD over: %v", err)
	}
	// A currency without a limit row has no H.
	if _, err := h.ReserveDB(ctx, db, ReserveRequest{TxID: "TX-5", BankID: "001", Currency: "EUR", Amount: 1}); !domainerr.Has(err, "H_LIMIT_EXCEEDED") {
		t.Fatalf("EUR: %v", err)
	}
	if _, err := h.ReserveDB(ctx, db, ReserveRequest{TxID: "TX-6", BankID: "999", Amount: 1}); !domainerr.Has(err, "PARTICIPANT_NOT_FOUND") {
		t.Fatalf("unknown bank: %v", err)
	}
	if _, err := h.ReserveDB(ctx, db, ReserveRequest{TxID: "TX-7", BankID: "001", Amount: 0}); !domainerr.Has(err, "INVALID_AMOUNT") {
		t.Fatalf("zero amount: %v", err)
	}
	if u := usage(t, db, "001", "USD"); u != (Usage{Limit: 50, Used: 50}) {
		t.Fatalf("USD usage %+v", u)
	}

	// Release is counted once.
	for i, want := range []bool{true, false, false} {
		ok, err := h.ReleaseDB(ctx, db, "HRES-1")
		if err != nil || ok != want {
			t.Fatalf("release %d: %v %v", i, ok, err)
		}
	}
	if u := usage(t, db, "001", "JPY"); u.Used != 400 {
		t.Fatalf("after release %+v", u)
	}
	if _, err := h.ReleaseDB(ctx, db, "HRES-none"); !domainerr.Has(err, "INVARIANT_VIOLATION") {
		t.Fatalf("unknown release: %v", err)
	}
	if m := reconcile(t, db); len(m) != 0 {
		t.Fatalf("mismatches %+v", m)
	}
}

func TestReserveSameIDIsIdempotent(t *testing.T) {
	db := openDB(t)
	seedBank(t, db, "001", 1000)
	h := New(clock.NewManual(t0), nil)
	ctx := context.Background()
	req := ReserveRequest{ReservationID: "HRES-X", TxID: "TX-1", BankID: "001", Amount: 300}
	for range 3 {
		if _, err := h.ReserveDB(ctx, db, req); err != nil {
			t.Fatal(err)
		}
	}
	if u := usage(t, db, "001", "JPY"); u.Used != 300 {
		t.Fatalf("charged %d, want 300 once", u.Used)
	}
	req.Amount = 301
	if _, err := h.ReserveDB(ctx, db, req); !domainerr.Has(err, "IDEMPOTENCY_KEY_CONFLICT") {
		t.Fatalf("changed request: %v", err)
	}
}

func TestReleaseForTx(t *testing.T) {
	db := openDB(t)
	seedBank(t, db, "001", 1000)
	seedBank(t, db, "002", 1000)
	seedCurrency(t, db, "002", "USD", 100)
	clk := clock.NewManual(t0)
	h := New(clk, nil)
	ctx := context.Background()
	for _, req := range []ReserveRequest{
		{ReservationID: "A", TxID: "TX-1", BankID: "001", Amount: 100},
		{ReservationID: "B", TxID: "TX-1", BankID: "002", Currency: "USD", Amount: 30},
		{ReservationID: "C", TxID: "TX-2", BankID: "001", Amount: 200},
	} {
		if _, err := h.ReserveDB(ctx, db, req); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Minute)
	var released []Reservation
	err := db.Write(ctx, func(tx *store.Tx) error {
		var err error
		released, err = h.ReleaseForTx(ctx, tx, "TX-1")
		return err
	})
	if err != nil || len(released) != 2 || released[0].ID != "A" || released[1].ID != "B" {
		t.Fatalf("released %+v %v", released, err)
	}
	err = db.Write(ctx, func(tx *store.Tx) error {
		again, err := h.ReleaseForTx(ctx, tx, "TX-1")
		if len(again) != 0 {
			return fmt.Errorf("second release freed %+v", again)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if u := usage(t, db, "001", "JPY"); u.Used != 200 {
		t.Fatalf("001 JPY used %d", u.Used)
	}
	if u := usage(t, db, "002", "USD"); u.Used != 0 {
		t.Fatalf("002 USD used %d", u.Used)
	}
	err = db.Read(ctx, func(tx *store.Tx) error {
		rs, err := Reservations(ctx, tx, "TX-1")
		if err != nil {
			return err
		}
		for _, r := range rs {
			if !r.Released || r.ReleasedAt != "2026-04-01T14:31:00.000000000Z" {
				return fmt.Errorf("row %+v", r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A failure later in the caller's transaction undoes the release.
	err = db.Write(ctx, func(tx *store.Tx) error {
		if _, err := h.ReleaseForTx(ctx, tx, "TX-2"); err != nil {
			return err
		}
		return fmt.Errorf("side update failed")
	})
	if err == nil || usage(t, db, "001", "JPY").Used != 200 {
		t.Fatalf("rollback did not restore H: %v", err)
	}
	if m := reconcile(t, db); len(m) != 0 {
		t.Fatalf("mismatches %+v", m)
	}
}

func TestReconcileReportsDrift(t *testing.T) {
	db := openDB(t)
	seedBank(t, db, "001", 1000)
	seedBank(t, db, "002", 1000)
	seedCurrency(t, db, "001", "USD", 100)
	h := New(clock.NewManual(t0), nil)
	ctx := context.Background()
	if _, err := h.ReserveDB(ctx, db, ReserveRequest{TxID: "TX-1", BankID: "001", Amount: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReserveDB(ctx, db, ReserveRequest{TxID: "TX-2", BankID: "001", Currency: "USD", Amount: 10}); err != nil {
		t.Fatal(err)
	}
	// Corrupt: counter drift on 002, a USD counter lost on 001, and a
	// reservation for a bank that is not registered.
	exec(t, db, "UPDATE Participants SET h_used = 5 WHERE bank_id = '002'")
	exec(t, db, "DELETE FROM ParticipantCurrencyLimits WHERE bank_id = '001'")
	exec(t, db, `INSERT INTO HReservations (reservation_id, txid, bank_id, amount, created_at) VALUES ('X', 'TX-X', '777', 42, ?)`, clock.Stamp(t0))
	got := reconcile(t, db)
	want := []Mismatch{
		{BankID: "001", Currency: "USD", HUsed: 0, Unreleased: 10, NoCounter: true},
		{BankID: "002", Currency: "JPY", HUsed: 5, Unreleased: 0},
		{BankID: "777", Currency: "JPY", HUsed: 0, Unreleased: 42, NoCounter: true},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// Both backends: ConsumeDaily's one UPDATE ... RETURNING (reset and
// addition together) on SQLite and PostgreSQL.
func TestDailyLimitResetsByJSTBusinessDate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		db, err := store.OpenCoordinator(context.Background(), b.Location(t, "zc"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dailyLimitResetsByJSTBusinessDate(t, db)
	})
}

func dailyLimitResetsByJSTBusinessDate(t *testing.T, db *store.DB) {
	seedBank(t, db, "001", 0)
	exec(t, db, "UPDATE Participants SET daily_amount_limit = 1000, tx_amount_limit = 800 WHERE bank_id = '001'")
	clk := clock.NewManual(t0) // 2026-04-01 23:30 JST
	h := New(clk, nil)
	ctx := context.Background()
	consume := func(amount int64) (Daily, error) {
		var d Daily
		err := db.Write(ctx, func(tx *store.Tx) error {
			var err error
			d, err = h.ConsumeDaily(ctx, tx, "001", amount)
			return err
		})
		return d, err
	}
	if d, err := consume(700); err != nil || d.BusinessDate != "2026-04-01" || d.Used != 700 || *d.Limit != 1000 {
		t.Fatalf("%+v %v", d, err)
	}
	_, err := consume(301)
	if de, ok := domainerr.As(err); !ok || de.Code != "DAILY_LIMIT_EXCEEDED" || de.HTTPStatus() != 422 || de.Details["used"] != int64(700) {
		t.Fatalf("over daily: %v", err)
	}
	if d, err := consume(300); err != nil || d.Used != 1000 {
		t.Fatalf("%+v %v", d, err)
	}
	// 00:00 UTC is still 09:00 JST of the 2nd... move to 2026-04-01 14:59:59 UTC
	// = 23:59:59 JST: same business date, still full.
	clk.Set(time.Date(2026, 4, 1, 14, 59, 59, 0, time.UTC))
	if _, err := consume(1); !domainerr.Has(err, "DAILY_LIMIT_EXCEEDED") {
		t.Fatalf("same JST day: %v", err)
	}
	// 15:00 UTC = 00:00 JST on 04-02: the first consumption resets lazily.
	clk.Set(time.Date(2026, 4, 1, 15, 0, 0, 0, time.UTC))
	if d, err := consume(100); err != nil || d.BusinessDate != "2026-04-02" || d.Used != 100 {
		t.Fatalf("new day: %+v %v", d, err)
	}
	// A clock set back to the previous date does not reset again.
	clk.Set(t0)
	if d, err := consume(50); err != nil || d.Used != 150 || d.BusinessDate != "2026-04-02" {
		t.Fatalf("clock back: %+v %v", d, err)
	}
	err = db.Read(ctx, func(tx *store.Tx) error {
		if err := CheckTxAmount(ctx, tx, "001", 800); err != nil {
			return err
		}
		if err := CheckTxAmount(ctx, tx, "001", 801); !domainerr.Has(err, "AMOUNT_EXCEEDS_TX_LIMIT") {
			return fmt.Errorf("801: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDailyConcurrentNeverExceeds(t *testing.T) {
	db := openDB(t)
	seedBank(t, db, "001", 0)
	exec(t, db, "UPDATE Participants SET daily_amount_limit = 1000, daily_amount_used = 999, daily_amount_last_reset_date = '2026-03-31' WHERE bank_id = '001'")
	h := New(clock.NewManual(t0), nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.Write(ctx, func(tx *store.Tx) error {
				_, err := h.ConsumeDaily(ctx, tx, "001", 100)
				return err
			})
			if err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !domainerr.Has(err, "DAILY_LIMIT_EXCEEDED") {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var d Daily
	db.Write(ctx, func(tx *store.Tx) error {
		var err error
		d, err = h.DailyOf(ctx, tx, "001")
		return err
	})
	// The stale total resets once (new date), then 10 x 100 fit.
	if ok != 10 || d.Used != 1000 || d.BusinessDate != "2026-04-01" {
		t.Fatalf("ok %d, daily %+v", ok, d)
	}
}

func ExampleH_ReserveH() {
	ctx := context.Background()
	db, _ := store.OpenCoordinator(ctx, filepath.Join(exampleDir(), "zc.db"))
	defer db.Close()
	db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO Participants (bank_id, bank_name, ingress_base_url, h_limit, registered_at)
			VALUES ('001', 'Bank 001', '/bank/001', 1000, '2026-04-01T00:00:00.000000000Z')`)
		return err
	})
	h := New(clock.NewManual(t0), nil)
	_ = db.Write(ctx, func(tx *store.Tx) error {
		r, err := h.ReserveH(ctx, tx, ReserveRequest{ReservationID: "HRES-1", TxID: "TX-1", BankID: "001", Amount: 800})
		fmt.Println(r.ID, r.Amount, err)
		_, err = h.ReserveH(ctx, tx, ReserveRequest{TxID: "TX-2", BankID: "001", Amount: 300})
		fmt.Println(domainerr.Code(err))
		return nil
	})
	// Output:
	// HRES-1 800 <nil>
	// H_LIMIT_EXCEEDED
}

func exampleDir() string {
	dir, err := os.MkdirTemp("", "hlimit-example")
	if err != nil {
		panic(err)
	}
	return dir
}

// BenchmarkReserveRelease measures a reserve and a release in one commit,
// and 100 reserve+release pairs batched in one commit, on a file database.
func BenchmarkReserveRelease(b *testing.B) {
	db := openDB(b)
	seedBank(b, db, "001", 1<<40)
	h := New(clock.NewManual(t0), nil)
	ctx := context.Background()
	pair := func(tx *store.Tx, i int) error {
		r, err := h.ReserveH(ctx, tx, ReserveRequest{TxID: fmt.Sprintf("TX-%d", i), BankID: "001", Amount: 100})
		if err != nil {
			return err
		}
		_, err = h.ReleaseH(ctx, tx, r.ID)
		return err
	}
	b.Run("commit-per-pair", func(b *testing.B) {
		for i := range b.N {
			if err := db.Write(ctx, func(tx *store.Tx) error { return pair(tx, i) }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("100-pairs-per-commit", func(b *testing.B) {
		for i := range b.N {
			if err := db.Write(ctx, func(tx *store.Tx) error {
				for j := range 100 {
					if err := pair(tx, i*100+j); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
