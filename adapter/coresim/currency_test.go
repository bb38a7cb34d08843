package coresim

import (
	"context"
	"testing"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/coremsg"
)

// The core keeps each account in its own currency and says so on the
// wire: the balance reply (BALR) of a dollar account names USD, of a yen
// account JPY, of an unknown account no currency at all.
func TestBalanceReplyNamesTheAccountsCurrency(t *testing.T) {
	c := openCore(t)
	ctx := context.Background()
	if err := c.OpenAccount(ctx, "001-1-0000001", "ﾔﾏﾀﾞ ﾀﾛｳ", 1000); err != nil {
		t.Fatal(err)
	}
	if err := c.OpenAccountIn(ctx, "001-1-0000002", "ﾔﾏﾀﾞ ﾀﾛｳ", "USD", 2500); err != nil {
		t.Fatal(err)
	}
	err := c.OpenAccountIn(ctx, "001-1-0000003", "X", "usd", 0)
	if de, ok := domainerr.As(err); !ok || de.Code != "INVALID_CURRENCY" {
		t.Fatalf("lower-case currency: %v, want INVALID_CURRENCY", err)
	}
	for _, tc := range []struct {
		no, status, currency string
		ledger               int64
	}{{"0000001", "N", "JPY", 1000}, {"0000002", "N", "USD", 2500}, {"0000009", "X", "", 0}} {
		var reply []byte
		if err := c.db.Write(ctx, func(tx *store.Tx) error {
			var err error
			reply, _, err = c.handle(ctx, tx, &mq.Message{MsgID: mq.NewID(),
				Body: encodeSeed(t, c, &coremsg.BalanceRequest{Branch: "001", AccountType: 1, AccountNo: tc.no})})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		m, err := coremsg.Decode(reply, c.cs)
		if err != nil {
			t.Fatal(err)
		}
		r := m.Body.(*coremsg.BalanceReply)
		if r.AccountStatus != tc.status || r.Currency != tc.currency || r.Ledger != tc.ledger {
			t.Errorf("account %s: status %q currency %q ledger %d, want %q %q %d", tc.no, r.AccountStatus, r.Currency, r.Ledger,
				tc.status, tc.currency, tc.ledger)
		}
	}
	if b, err := c.Balance(ctx, "001-1-0000002"); err != nil || b.Currency != "USD" {
		t.Fatalf("Balance: %+v %v", b, err)
	}
}

// A core database made before accounts had a currency gains the column;
// its accounts were yen accounts.
func TestOldCoreDatabaseGainsAccountCurrency(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/core.db"
	db, err := store.Open(ctx, path, `CREATE TABLE CoreAccounts (account TEXT PRIMARY KEY, name TEXT NOT NULL,
		balance INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'OPEN', opened_at TEXT NOT NULL, updated_at TEXT NOT NULL);
		INSERT INTO CoreAccounts VALUES ('001-1-0000001', 'ﾔﾏﾀﾞ', 700, 'OPEN', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');`)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	c, err := Open(ctx, Config{Bank: "001", DBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if b, err := c.Balance(ctx, "001-1-0000001"); err != nil || b.Currency != "JPY" || b.Balance != 700 {
		t.Fatalf("migrated account: %+v %v", b, err)
	}
}
