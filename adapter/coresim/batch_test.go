package coresim

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/formats/overnight"
)

func writePostingFile(t *testing.T, path string, seq int64, details ...*overnight.PostingDetail) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := overnight.NewWriter(f)
	if err := w.WriteHeader(&overnight.Header{FileType: overnight.Postings, Version: 1, BankCode: "0001",
		BusinessDate: overnight.Date{Year: 2026, Month: 12, Day: 2}, FileSeq: seq, CreatedAt: "20261202213000"}); err != nil {
		t.Fatal(err)
	}
	for _, d := range details {
		if err := w.WritePosting(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRunBatchFile(t *testing.T) {
	ctx := context.Background()
	c := openCore(t)
	c.OpenAccount(ctx, "101-1-1234567", "ﾔﾏﾀﾞ ﾀﾛｳ", 1000)
	acct := overnight.Account{BranchCode: "101", AccountType: 1, AccountNumber: "1234567"}
	vd := overnight.Date{Year: 2026, Month: 12, Day: 2}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "post.dat"), filepath.Join(dir, "result.dat")
	writePostingFile(t, in, 1,
		&overnight.PostingDetail{Seq: 1, Kind: overnight.Posting, Side: overnight.Credit, TxID: "TX-1", Ref: "B-C1", Account: acct, Amount: 500, ValueDate: vd},
		&overnight.PostingDetail{Seq: 2, Kind: overnight.Posting, Side: overnight.Debit, TxID: "TX-2", Ref: "B-D1", Account: acct, Amount: 9000, ValueDate: vd},
		&overnight.PostingDetail{Seq: 3, Kind: overnight.Reversal, Side: overnight.Debit, TxID: "TX-1", Ref: "B-V1", OriginalRef: "B-C1", Account: acct, Amount: 500, ValueDate: vd},
		&overnight.PostingDetail{Seq: 4, Kind: overnight.Posting, Side: overnight.Credit, TxID: "TX-3", Ref: "B-C2", Account: overnight.Account{BranchCode: "999", AccountType: 1, AccountNumber: "0000001"}, Amount: 1, ValueDate: vd},
	)
	sum, err := c.RunBatchFile(ctx, in, out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Records != 4 || sum.Applied != 2 || sum.Refused != 2 || sum.Replayed {
		t.Fatalf("summary: %+v", sum)
	}
	if b := mustBalance(t, c, "101-1-1234567"); b.Balance != 1000 {
		t.Fatalf("balance %d", b.Balance)
	}
	readResults := func() []*overnight.ResultDetail {
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var rs []*overnight.ResultDetail
		r := overnight.NewReader(f)
		for {
			rec, err := r.Next()
			if err == io.EOF {
				return rs
			}
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := rec.(*overnight.ResultDetail); ok {
				rs = append(rs, d)
			}
		}
	}
	rs := readResults()
	want := []overnight.ResultCode{overnight.Posted, overnight.InsufficientFunds, overnight.Posted, overnight.NoSuchAccount}
	if len(rs) != 4 {
		t.Fatalf("results: %d", len(rs))
	}
	for i, r := range rs {
		if r.Code != want[i] || r.Seq != int64(i+1) {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if rs[0].CoreRef == "" || rs[0].PostedDate != vd || rs[1].CoreRef != "" {
		t.Fatalf("result details: %+v %+v", rs[0], rs[1])
	}
	// The same file again posts nothing and rewrites the stored result.
	os.Remove(out)
	sum, err = c.RunBatchFile(ctx, in, out)
	if err != nil || !sum.Replayed {
		t.Fatalf("rerun: %+v %v", sum, err)
	}
	if lines, _ := c.Journal(ctx, "101-1-1234567"); len(lines) != 3 {
		t.Fatalf("rerun posted again: %d lines", len(lines))
	}
	if len(readResults()) != 4 {
		t.Fatal("result not rewritten")
	}
	// A damaged file is refused whole.
	bad := filepath.Join(dir, "bad.dat")
	raw, _ := os.ReadFile(in)
	os.WriteFile(bad, raw[:len(raw)-202], 0o644) // trailer missing
	if _, err := c.RunBatchFile(ctx, bad, filepath.Join(dir, "bad-result.dat")); err == nil {
		t.Fatal("damaged file accepted")
	}
	if lines, _ := c.Journal(ctx, "101-1-1234567"); len(lines) != 3 {
		t.Fatalf("damaged file posted: %d lines", len(lines))
	}
	// Outside the batch window nothing runs.
	c2, _ := Open(ctx, Config{Bank: "001", DBPath: filepath.Join(dir, "c2.db"),
		Clock: clock.NewManual(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)), Batch: []Window{{From: 22 * 60, To: 5 * 60}}})
	defer c2.Close()
	if _, err := c2.RunBatchFile(ctx, in, out); err == nil {
		t.Fatal("ran outside the batch window")
	}
}
