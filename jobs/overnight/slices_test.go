package overnight_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/overnight/corepickup"
	"github.com/zcgw/zcgw/outbox"
)

// A file larger than the slices the exchange reads and settles at a time
// (and than the core's chunk): a result detail that does not echo its
// posting in a later slice refuses the whole file with nothing settled;
// the genuine result settles every posting once, as the core applied it.
func TestLargeFileInSlices(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), false)
	const accounts = 40
	for a := 1; a <= accounts; a++ {
		if err := e.core.OpenAccount(ctx, fmt.Sprintf("300-1-%07d", a), "SATO", 50_000); err != nil {
			t.Fatal(err)
		}
	}
	n := 2*4096 + 5
	ob := e.outbox(t)
	if err := e.db.Write(ctx, func(tx *store.Tx) error {
		for k := 0; k < n; k++ {
			kind, amount := outbox.Credit, int64(100+k%700)
			if k%4 == 0 {
				kind, amount = outbox.Debit, int64(2_000+k%3_000) // some beyond the balance: refused
			}
			if _, err := ob.Enqueue(ctx, tx, outbox.Posting{Ref: fmt.Sprintf("L%08d", k), TxID: fmt.Sprintf("TXL%08d", k), Bank: "001",
				Account: fmt.Sprintf("300-1-%07d", k%accounts+1), Kind: kind, Amount: amount, Route: outbox.RouteFILE}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	x := e.exchange(t)
	f, ok, err := x.Send(ctx, date)
	if err != nil || !ok || f.Records != n {
		t.Fatal(f, ok, err)
	}
	if ran, err := corepickup.PickUp(ctx, e.core, e.clk, e.inbound(), e.results(), nil); err != nil || ran != 1 {
		t.Fatal(ran, err)
	}
	resultPath := filepath.Join(e.results(), f.ResultName())
	good, err := os.ReadFile(resultPath)
	if err != nil {
		t.Fatal(err)
	}
	// Swap the references of details 6000 and 6001 (the second slice).
	swapped := append([]byte(nil), good...)
	d1 := strings.Index(string(swapped), "\r\nD") + 2 + 5999*202
	d2 := d1 + 202
	ref1 := append([]byte(nil), swapped[d1+47:d1+79]...)
	copy(swapped[d1+47:d1+79], swapped[d2+47:d2+79])
	copy(swapped[d2+47:d2+79], ref1)
	if err := os.WriteFile(resultPath, swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := x.Ingest(ctx, f); domainerr.Code(err) != "INVALID_REQUEST" || !strings.Contains(err.Error(), "detail 6000") {
		t.Fatalf("swapped refs in the second slice: %v", err)
	}
	if got := count(t, e.db, `SELECT COUNT(*) FROM AdapterOutbox WHERE status = 'IN_FILE'`); got != n {
		t.Fatalf("%d of %d postings still in file after a refused result (nothing may settle)", got, n)
	}
	if err := os.WriteFile(resultPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	in, ok, err := x.Receive(ctx)
	if err != nil || !ok || in.Posted+in.Rejected != n || in.Rejected == 0 || in.Posted == 0 {
		t.Fatalf("receive %+v %v %v", in, ok, err)
	}
	applied := count(t, e.core.DB(), `SELECT COUNT(*) FROM CoreJournal WHERE source = 'BATCH'`)
	for _, c := range []struct {
		db   *store.DB
		q    string
		want int
	}{
		{e.db, `SELECT COUNT(*) FROM AdapterOutbox WHERE status = 'APPLIED' AND sends = 1`, in.Posted},
		{e.db, `SELECT COUNT(*) FROM AdapterOutbox WHERE status = 'BLOCKED' AND reason_code = 'INSUFFICIENT_FUNDS'`, in.Rejected},
		{e.db, `SELECT COUNT(*) FROM EntityStateLog WHERE event_type = 'OutboxFiled'`, n},
		{e.db, `SELECT COUNT(*) FROM EntityStateLog WHERE event_type IN ('OutboxFileApplied','OutboxFileBlocked')`, n},
		{e.core.DB(), `SELECT COUNT(*) FROM CoreJournal WHERE source = 'BATCH'`, in.Posted},
		{e.core.DB(), `SELECT COUNT(*) FROM CoreRefusals WHERE source = 'BATCH'`, in.Rejected},
		{e.core.DB(), `SELECT COUNT(*) FROM (SELECT ref FROM CoreJournal GROUP BY ref HAVING COUNT(*) > 1)`, 0},
	} {
		if got := count(t, c.db, c.q); got != c.want {
			t.Errorf("%s = %d, want %d", c.q, got, c.want)
		}
	}
	// Each APPLIED posting carries the journal number the core gave it.
	if got := count(t, e.db, `SELECT COUNT(DISTINCT core_ref) FROM AdapterOutbox WHERE status = 'APPLIED'`); got != applied {
		t.Errorf("%d distinct core refs, want %d", got, applied)
	}
}
