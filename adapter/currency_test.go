package adapter

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

func usd(v int64) bankapi.Amount { return bankapi.Amount{Value: v, Currency: "USD"} }

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if de, ok := domainerr.As(err); !ok || de.Code != code {
		t.Fatalf("error %v, want %s", err, code)
	}
}

// A bank keeping dollar accounts besides yen: each command must be in its
// account's currency; a currency the bank does not keep is refused; the
// dollar account's shadow and postings are its own.
func TestAccountsKeepTheirCurrency(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Currencies = []string{"USD"} })
	h.account("h:yen", "0000001", "ヤマダ タロウ", 50_000)
	h.core.set(func(c *fakeCore) { c.balance["0000002"] = 10_000; c.names["0000002"] = "ヤマダ タロウ" })
	if err := h.a.OpenAccount(h.ctx, Account{Hash: "h:usd", CoreAccount: "0000002", HolderName: "ヤマダ タロウ", Currency: "USD"}, 10_000); err != nil {
		t.Fatal(err)
	}
	if err := h.a.OpenAccount(h.ctx, Account{Hash: "h:eur", CoreAccount: "0000003", HolderName: "X", Currency: "EUR"}, 0); err == nil {
		t.Fatal("an account in a currency the bank does not keep was opened")
	} else {
		wantCode(t, err, "INVALID_CURRENCY")
	}
	_, err := h.a.ReserveFunds(h.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "r1", TxID: "TX-1", Amount: jpy(100), AccountHash: "h:usd"})
	wantCode(t, err, "INVALID_CURRENCY")
	_, err = h.a.ExecuteCredit(h.ctx, bankapi.ExecuteCreditRequest{RequestIDValue: "c1", TxID: "TX-2", Amount: usd(100), DecisionProofRef: "DP", PayeeAccountHash: "h:yen"})
	wantCode(t, err, "INVALID_CURRENCY")
	_, err = h.a.ExecuteDebit(h.ctx, bankapi.ExecuteDebitRequest{RequestIDValue: "d0", TxID: "TX-3", Amount: bankapi.Amount{Value: 1, Currency: "EUR"},
		DecisionProofRef: "DP", Lane: "HIGH_VALUE", PayerAccountHash: "h:usd"})
	wantCode(t, err, "INVALID_CURRENCY")
	r, err := h.a.ReserveFunds(h.ctx, bankapi.ReserveFundsRequest{RequestIDValue: "r2", TxID: "TX-4", Amount: usd(4_000), AccountHash: "h:usd"})
	if err != nil || r.Result != bankapi.ResultReserved {
		t.Fatalf("dollar hold: %+v %v", r, err)
	}
	if _, err := h.a.ExecuteDebit(h.ctx, bankapi.ExecuteDebitRequest{RequestIDValue: "d1", TxID: "TX-4", Amount: usd(4_000), DecisionProofRef: "DP",
		HReservation: &bankapi.HReservation{ReservationID: r.ReservationRef}}); err != nil {
		t.Fatal(err)
	}
	h.drain()
	if got := h.core.bal("0000002"); got != 6_000 {
		t.Errorf("dollar account at the core %d, want 6000", got)
	}
	if got := h.core.bal("0000001"); got != 50_000 {
		t.Errorf("yen account moved to %d", got)
	}
	if s := h.shadow("h:usd"); s.Currency != "USD" || s.CoreBalance != 6_000 {
		t.Errorf("dollar shadow %+v", s)
	}
}

// A database made before accounts had a currency gains the column; its
// accounts keep the adapter's home currency.
func TestMigrateAddsAccountCurrency(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := OpenDB(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `ALTER TABLE AdapterAccounts DROP COLUMN currency`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var has bool
	if err := db.Read(ctx, func(tx *store.Tx) (err error) {
		has, err = store.ColumnExists(ctx, tx, "AdapterAccounts", "currency")
		return err
	}); err != nil || !has {
		t.Fatalf("currency column after Migrate: %v %v", has, err)
	}
	db.Close()
}

// The adapter honours the currency the core reports: an account opened
// from the core without a currency takes the core's, one declared in
// another currency is refused, the balance a customer reads names the
// account's currency, and reconciliation of an account the core keeps in
// another currency than registered reports CURRENCY_MISMATCH instead of
// comparing amounts of two currencies.
func TestAdapterHonoursTheCoresCurrency(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Currencies = []string{"USD"} })
	h.core.set(func(c *fakeCore) {
		c.balance["0000002"], c.currency["0000002"], c.names["0000002"] = 10_000, "USD", "ヤマダ タロウ"
		c.balance["0000003"], c.currency["0000003"], c.names["0000003"] = 500, "USD", "ヤマダ タロウ"
		c.balance["0000004"], c.currency["0000004"], c.names["0000004"] = 500, "EUR", "ヤマダ タロウ"
	})
	if err := h.a.OpenAccountFromCore(h.ctx, Account{Hash: "h:usd", CoreAccount: "0000002", HolderName: "ヤマダ タロウ"}); err != nil {
		t.Fatal(err)
	}
	if s := h.shadow("h:usd"); s.Currency != "USD" || s.CoreBalance != 10_000 {
		t.Fatalf("account opened from a dollar core account: %+v", s)
	}
	err := h.a.OpenAccountFromCore(h.ctx, Account{Hash: "h:x", CoreAccount: "0000003", HolderName: "ヤマダ タロウ", Currency: "JPY"})
	wantCode(t, err, "INVALID_CURRENCY")
	err = h.a.OpenAccountFromCore(h.ctx, Account{Hash: "h:eur", CoreAccount: "0000004", HolderName: "ヤマダ タロウ"})
	wantCode(t, err, "INVALID_CURRENCY") // the bank keeps no euro accounts
	b, err := h.a.AccountBalance(h.ctx, "", "0000002")
	if err != nil || b.Currency != "USD" || b.Balance != 10_000 || b.Source != SourceCore {
		t.Fatalf("balance of the dollar account: %+v %v", b, err)
	}
	r, err := h.a.ReconcileAccount(h.ctx, "h:usd")
	if err != nil || r.Status != ReconMatched {
		t.Fatalf("recon of the dollar account: %+v %v", r, err)
	}
	h.core.set(func(c *fakeCore) { c.currency["0000002"] = "JPY" }) // the core now says otherwise
	r, err = h.a.ReconcileAccount(h.ctx, "h:usd")
	if err != nil || r.Status != ReconCurrency {
		t.Fatalf("recon after the core changed currency: %+v %v", r, err)
	}
	wantCode(t, r.Err, "INVALID_CURRENCY")
	b, err = h.a.AccountBalance(h.ctx, "", "0000002")
	if err != nil || b.Currency != "USD" || b.Source != SourceShadow {
		t.Fatalf("a core balance in another currency must not be shown as the account's: %+v %v", b, err)
	}
}
