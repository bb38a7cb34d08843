package coresim

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/coreacct"
	"github.com/zcgw/zcgw/formats/overnight"
)

// The batch run decides and writes a chunk at a time; it must leave the
// core exactly as posting the file's details one by one would: the same
// outcome per detail (result code, journal number), balances, journal
// lines, refusals and holds. The file crosses chunk boundaries and mixes
// credits, debits refused for funds (some only because of another
// transaction's hold), a debit consuming its own hold, an unknown and a
// closed account, and reversals of postings earlier in the same chunk.
func TestBatchRunEqualsOneByOne(t *testing.T) {
	ctx := context.Background()
	batch, single := openCore(t), openCore(t)
	accts := []string{"101-1-0000001", "101-1-0000002", "101-1-0000003", "101-1-0000004", "101-1-0000005"}
	for _, c := range []*Core{batch, single} {
		for i, a := range accts {
			if err := c.OpenAccount(ctx, a, "ﾃｽﾄ", int64(i)*40_000); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.CloseAccount(ctx, accts[4]); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Hold(ctx, "H-1", "TX-HOLD", accts[1], 30_000); err != nil { // consumed by TX-HOLD's debit
			t.Fatal(err)
		}
		if _, err := c.Hold(ctx, "H-2", "TX-OTHER", accts[2], 70_000); err != nil { // reduces what accts[2] can pay
			t.Fatal(err)
		}
	}
	vd := overnight.Date{Year: 2026, Month: 12, Day: 2}
	n := batchChunk + batchChunk/2 + 7
	var ds []*overnight.PostingDetail
	for i := 1; i <= n; i++ {
		acct := accts[i%len(accts)]
		if i%997 == 0 {
			acct = "101-1-0009999" // no such account
		}
		k, err := coreacct.Parse(acct)
		if err != nil {
			t.Fatal(err)
		}
		d := &overnight.PostingDetail{Seq: int64(i), Kind: overnight.Posting, Side: overnight.Credit, TxID: fmt.Sprintf("TX-%d", i),
			Ref: fmt.Sprintf("R-%06d", i), Account: overnight.Account{BranchCode: k.Branch, AccountType: k.Type, AccountNumber: k.Number},
			Amount: int64(100 + i*37%9000), ValueDate: vd}
		switch {
		case i == 3: // accts[3]
		case i == 6: // accts[1]: TX-HOLD's debit consumes its own hold
			d.Side, d.TxID, d.Amount = overnight.Debit, "TX-HOLD", 35_000
		case i == 11: // accts[1]: payable only once TX-HOLD's hold is consumed
			d.Side, d.Amount = overnight.Debit, 5_000
		case i%7 == 0 && i > 20: // reverses the posting 5 details back (same account: i-5 ≡ i mod 5)
			d.Kind, d.OriginalRef = overnight.Reversal, fmt.Sprintf("R-%06d", i-5)
			d.Side, d.Amount = overnight.Debit, ds[i-6].Amount
			if ds[i-6].Side == overnight.Debit {
				d.Side = overnight.Credit
			}
			if i%2 == 0 {
				d.Amount++ // above the original: refused
			}
		case i%3 == 0:
			d.Side = overnight.Debit
			d.Amount *= 4
		}
		ds = append(ds, d)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "post.dat"), filepath.Join(dir, "result.dat")
	writePostingFile(t, in, 1, ds...)
	sum, err := batch.RunBatchFile(ctx, in, out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := overnight.NewReader(f)
	applied, refused := 0, 0
	for _, d := range ds {
		pin := PostIn{Ref: d.Ref, TxID: d.TxID, Amount: d.Amount, ReversalOf: d.OriginalRef,
			Account: coreacct.Format(d.BranchCode, d.AccountType, d.AccountNumber), Kind: KindCredit}
		switch {
		case d.Kind == overnight.Reversal:
			pin.Kind = KindReversal
		case d.Side == overnight.Debit:
			pin.Kind = KindDebit
		}
		want, err := single.Post(ctx, pin)
		if err != nil {
			t.Fatal(err)
		}
		var got *overnight.ResultDetail
		for got == nil {
			rec, err := r.Next()
			if err != nil {
				t.Fatalf("result file ends before detail %d: %v", d.Seq, err)
			}
			got, _ = rec.(*overnight.ResultDetail)
		}
		wantRef := ""
		if want.Applied {
			wantRef = journalNo(want.JournalID)
			applied++
		} else {
			refused++
		}
		if got.Seq != d.Seq || got.Code != resultCode(want.ReasonCode) || got.CoreRef != wantRef {
			t.Fatalf("detail %d (%s %c): batch %s %q, one by one %s %q", d.Seq, pin.Kind, d.Side, got.Code, got.CoreRef,
				resultCode(want.ReasonCode), wantRef)
		}
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if _, isDetail := rec.(*overnight.ResultDetail); isDetail || err != nil {
			t.Fatalf("result file has more: %v %v", rec, err)
		}
	}
	if sum.Applied != applied || sum.Refused != refused || applied == 0 || refused == 0 {
		t.Fatalf("summary %+v, one by one %d applied %d refused", sum, applied, refused)
	}
	// The same rows, apart from the source column (BATCH against MQ).
	for _, q := range []string{
		`SELECT account || ':' || balance || ':' || status FROM CoreAccounts ORDER BY account`,
		`SELECT journal_id || ':' || ref || ':' || txid || ':' || account || ':' || kind || ':' || amount || ':' || delta || ':' ||
			balance_after || ':' || COALESCE(reversal_of,'') FROM CoreJournal ORDER BY journal_id`,
		`SELECT refusal_id || ':' || ref || ':' || txid || ':' || account || ':' || kind || ':' || amount || ':' || reason_code
			FROM CoreRefusals ORDER BY refusal_id`,
		`SELECT hold_id || ':' || status FROM CoreHolds ORDER BY hold_id`,
	} {
		a, b := rowsOf(t, batch, q), rowsOf(t, single, q)
		if len(a) != len(b) {
			t.Fatalf("%s: batch %d rows, one by one %d", q, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: row %d: batch %s, one by one %s", q, i, a[i], b[i])
			}
		}
	}
	if got := rowsOf(t, batch, `SELECT status FROM CoreHolds WHERE ref = 'H-1'`); len(got) != 1 || got[0] != "CONSUMED" {
		t.Fatalf("own hold: %v", got)
	}
}

func rowsOf(t *testing.T, c *Core, q string) []string {
	t.Helper()
	var out []string
	if err := c.db.Read(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), q)
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
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
