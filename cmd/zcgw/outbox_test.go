package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// refusingCore answers every posting with an overdraft refusal.
type refusingCore struct{}

func (refusingCore) Apply(context.Context, outbox.Posting) (outbox.ApplyResult, error) {
	return outbox.ApplyResult{}, &outbox.RefusedError{ReasonCode: "INSUFFICIENT_FUNDS", Message: "overdraft"}
}

func (refusingCore) Lookup(context.Context, string) (outbox.LookupResult, error) {
	return outbox.LookupResult{State: outbox.LookupUnknown}, nil
}

// TestOutboxCommandOperatorPath drives a posting to BLOCKED, then requeues
// one and writes off another through `zcgw outbox`, and checks the rows and
// the EntityStateLog entries the operator decisions leave.
func TestOutboxCommandOperatorPath(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(dir, "adapter-001.db"), adapter.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ob, err := outbox.New(outbox.Config{DB: db, Core: refusingCore{}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, ref := range []string{"REF-A", "REF-B"} {
		err := db.Write(ctx, func(tx *store.Tx) error {
			id, err := ob.Enqueue(ctx, tx, outbox.Posting{Ref: ref, TxID: "TX-" + ref, Bank: "001",
				Account: "001-1-000000" + ref[len(ref)-1:], Kind: outbox.Debit, Amount: 500})
			ids = append(ids, id)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ob.Drain(ctx, 10); err != nil {
		t.Fatal(err)
	}

	zcgw := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(ctx, append([]string{"--data", dir, "outbox"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := zcgw("list", "--bank", "001", "--status", "BLOCKED")
	if code != 0 || strings.Count(out, "BLOCKED") != 2 || !strings.Contains(out, "INSUFFICIENT_FUNDS") {
		t.Fatalf("list: code %d\n%s%s", code, out, errs)
	}
	if code, out, errs = zcgw("requeue", "--bank", "001", "--id", strconv.FormatInt(ids[0], 10), "--operator", "sato", "--reason", "customer funded the account"); code != 0 {
		t.Fatalf("requeue: code %d %s%s", code, out, errs)
	}
	if code, out, errs = zcgw("writeoff", "--bank", "001", "--id", strconv.FormatInt(ids[1], 10), "--operator", "sato", "--reason", "duplicate instruction"); code != 0 {
		t.Fatalf("writeoff: code %d %s%s", code, out, errs)
	}
	for i, want := range []outbox.Status{outbox.Pending, outbox.WrittenOff} {
		e, err := ob.Get(ctx, ids[i])
		if err != nil || e.Status != want {
			t.Fatalf("row %d: %+v %v, want %s", ids[i], e.Status, err, want)
		}
	}
	var logged int
	if err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM EntityStateLog WHERE entity_type = ? AND actor = 'OPS'
			AND ((state_from = 'BLOCKED' AND state_to = 'PENDING') OR (state_from = 'BLOCKED' AND state_to = 'WRITTEN_OFF'))`,
			outbox.EntityType).Scan(&logged)
	}); err != nil {
		t.Fatal(err)
	}
	if logged != 2 {
		t.Fatalf("EntityStateLog operator rows = %d, want 2", logged)
	}
	// A written-off row is final: a second decision is refused and changes nothing.
	if code, _, errs = zcgw("requeue", "--bank", "001", "--id", strconv.FormatInt(ids[1], 10), "--operator", "sato", "--reason", "again"); code != 1 || errs == "" {
		t.Fatalf("requeue of WRITTEN_OFF: code %d stderr %q", code, errs)
	}
	if e, _ := ob.Get(ctx, ids[1]); e.Status != outbox.WrittenOff {
		t.Fatalf("row after refused requeue: %s", e.Status)
	}
}
