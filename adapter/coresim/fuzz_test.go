package coresim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/coremsg"
)

func encodeSeed(tb testing.TB, c *Core, body coremsg.Body) []byte {
	b, err := coremsg.Encode(&coremsg.Message{Header: coremsg.Header{RequestID: "seed-1", TxID: "TX-SEED",
		BankCode: "001", Timestamp: coremsg.FormatTimestamp(time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC))}, Body: body}, c.cs)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

var errRollback = errors.New("fuzz: roll back")

// FuzzHandle feeds arbitrary request bytes to the core's request handler:
// it must never panic, must refuse what it cannot decode without touching
// the ledger, and must answer what it accepts with a decodable reply.
func FuzzHandle(f *testing.F) {
	c := openCore(f)
	ctx := context.Background()
	if err := c.OpenAccount(ctx, "001-1-0000001", "ﾔﾏﾀﾞ ﾀﾛｳ", 1000); err != nil {
		f.Fatal(err)
	}
	for _, b := range []coremsg.Body{
		&coremsg.PostingRequest{Kind: "D", PostingRef: "S1", Branch: "001", AccountType: 1, AccountNo: "0000001",
			Amount: 10, Currency: "JPY", ValueDate: "20261202"},
		&coremsg.StatusInquiryRequest{PostingRef: "S1"},
		&coremsg.BalanceRequest{Branch: "001", AccountType: 1, AccountNo: "0000001"},
		&coremsg.HoldRequest{Action: "H", HoldRef: "H1", Branch: "001", AccountType: 1, AccountNo: "0000001",
			Amount: 5, Currency: "JPY", ExpiryDate: "00000000"},
	} {
		f.Add(encodeSeed(f, c, b))
	}
	f.Add([]byte("NOT A CORE MESSAGE"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var reply []byte
		var herr error
		_ = c.db.Write(ctx, func(tx *store.Tx) error {
			reply, _, herr = c.handle(ctx, tx, &mq.Message{MsgID: mq.NewID(), Body: body})
			return errRollback
		})
		if herr != nil {
			if reply != nil {
				t.Fatalf("refused request produced a reply: %v", herr)
			}
			return
		}
		m, err := coremsg.Decode(reply, c.cs)
		if err != nil {
			t.Fatalf("reply does not decode: %v", err)
		}
		if ti, _ := coremsg.Lookup(m.Header.MsgType); !ti.Reply {
			t.Fatalf("reply type %s", m.Header.MsgType)
		}
		if b, _ := c.Balance(ctx, "001-1-0000001"); b.Balance != 1000 {
			t.Fatalf("rolled-back request changed the balance: %d", b.Balance)
		}
	})
}
