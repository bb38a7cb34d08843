package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

func bulkItems(n int, amount func(i int) int64) []BulkItem {
	items := make([]BulkItem, n)
	for i := range items {
		r := pi(LaneBulk, amount(i))
		r.Payee.AccountHash = fmt.Sprintf("h:payee-%d", i)
		items[i] = BulkItem{Req: r, Key: fmt.Sprintf("bulk-%d", i)}
	}
	return items
}

func outcomeCodes(out []BulkOutcome) []string {
	codes := make([]string, len(out))
	for i, o := range out {
		if o.Err != nil {
			de, _ := domainerr.As(o.Err)
			codes[i] = de.Code
		} else if o.Result.Replayed {
			codes[i] = "replay"
		}
	}
	return codes
}

// A bulk submission accepts each item as Submit would, in one commit:
// BULK transfers parked WAITING for their window, one key per item, the
// daily total counted once per item; a refused item writes nothing; a
// second submission of the same items is all replays with the same txids.
func TestSubmitBulkAcceptsEachItemAsSubmitWould(t *testing.T) {
	f := newFixture(t, nil)
	items := bulkItems(300, func(i int) int64 { return int64(1000 + i) })
	items[7].Req.Amount.Value = 0           // INVALID_AMOUNT
	items[8].Req.Payee.BankID = "999"       // PARTICIPANT_NOT_FOUND
	items[9].Req.Payee = items[9].Req.Payer // same account
	before := f.o.db.Stats()
	out, err := f.o.SubmitBulk(f.ctx, "001", items, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := f.o.db.Stats().Commits - before.Commits; d != 1 {
		t.Fatalf("%d commits, want 1", d)
	}
	codes := outcomeCodes(out)
	if codes[7] != "INVALID_AMOUNT" || codes[8] != "PARTICIPANT_NOT_FOUND" || codes[9] != "INVALID_REQUEST" {
		t.Fatalf("refusals: %v", codes[7:10])
	}
	var want int64
	for i, o := range out {
		if i >= 7 && i <= 9 {
			continue
		}
		if o.Err != nil || o.Result.Lane != LaneBulk || o.Result.State != "RECEIVED" || o.Result.Replayed {
			t.Fatalf("item %d: %+v", i, o)
		}
		want += items[i].Req.Amount.Value
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions t JOIN OrchestratorQueue q ON q.txid = t.txid
		JOIN OrchestratorTransfers p ON p.txid = t.txid JOIN FinalityLog l ON l.txid = t.txid
		WHERE t.lane = 'BULK' AND t.state = 'RECEIVED' AND q.status = 'WAITING' AND l.prev_hash = 'GENESIS'`); n != 297 {
		t.Fatalf("%d accepted transfers with work item, progress and first entry, want 297", n)
	}
	if n := f.count(`SELECT COUNT(*) FROM IdempotencyKeys WHERE status = 'DONE'`); n != 297 {
		t.Fatalf("%d done keys, want 297 (refused items leave none)", n)
	}
	if used := f.count(`SELECT daily_amount_used FROM Participants WHERE bank_id = '001'`); int64(used) != want {
		t.Fatalf("daily used %d, want %d", used, want)
	}
	again, err := f.o.SubmitBulk(f.ctx, "001", items, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range again {
		if i >= 7 && i <= 9 {
			continue
		}
		if !o.Result.Replayed || o.Result.TxID != out[i].Result.TxID {
			t.Fatalf("second submission, item %d: %+v (first %+v)", i, o, out[i])
		}
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 297 {
		t.Fatalf("%d transfers after the replay, want 297", n)
	}
}

// A payer's daily limit reached inside the batch refuses exactly the
// items Submit would refuse one after another (the batch reruns item by
// item), and their amounts are not counted.
func TestSubmitBulkDailyLimitRefusesTheItemsThatCrossIt(t *testing.T) {
	f := newFixture(t, nil)
	f.setParticipant("001", func(p *participants.Participant) { p.DailyAmountLimit = i64(10_000) })
	items := bulkItems(6, func(i int) int64 { return []int64{3000, 4000, 5000, 2000, 1000, 900}[i] })
	out, err := f.o.SubmitBulk(f.ctx, "001", items, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 3000+4000 = 7000; +5000 crosses; +2000 = 9000; +1000 = 10000; +900 crosses.
	got, want := outcomeCodes(out), []string{"", "", "DAILY_LIMIT_EXCEEDED", "", "", "DAILY_LIMIT_EXCEEDED"}
	if !slices.Equal(got, want) {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
	if used := f.count(`SELECT daily_amount_used FROM Participants WHERE bank_id = '001'`); used != 10_000 {
		t.Fatalf("daily used %d, want 10000", used)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 4 {
		t.Fatalf("%d transfers, want 4", n)
	}
}

// A txid that already exists sends the batch item by item: that item is
// refused, the others accepted.
func TestSubmitBulkExistingTxIDRefusesOnlyThatItem(t *testing.T) {
	f := newFixture(t, nil)
	first := pi(LaneBulk, 100)
	first.TxID = "001-fixed"
	f.submit(first, "single")
	items := bulkItems(5, func(i int) int64 { return 100 + int64(i) })
	items[2].Req.TxID = "001-fixed"
	out, err := f.o.SubmitBulk(f.ctx, "001", items, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := outcomeCodes(out), []string{"", "", "INVALID_REQUEST", "", ""}; !slices.Equal(got, want) {
		t.Fatalf("outcomes %q, want %q", got, want)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 5 {
		t.Fatalf("%d transfers, want 5", n)
	}
	if n := f.count(`SELECT COUNT(*) FROM IdempotencyKeys WHERE key = 'PI:001:bulk-2'`); n != 0 {
		t.Fatal("the refused item left its key")
	}
}

// then's rows commit with the transfers; its error rolls everything back.
func TestSubmitBulkThenCommitsWithTheTransfers(t *testing.T) {
	f := newFixture(t, nil)
	items := bulkItems(10, func(i int) int64 { return 500 })
	boom := errors.New("caller refused")
	if _, err := f.o.SubmitBulk(f.ctx, "001", items, func(ctx context.Context, tx *store.Tx, out []BulkOutcome) error {
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want then's", err)
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`) + f.count(`SELECT COUNT(*) FROM IdempotencyKeys`); n != 0 {
		t.Fatalf("%d rows left by a rolled-back submission", n)
	}
	if used := f.count(`SELECT daily_amount_used FROM Participants WHERE bank_id = '001'`); used != 0 {
		t.Fatalf("daily used %d after the rollback", used)
	}
	var seen int
	if _, err := f.o.SubmitBulk(f.ctx, "001", items, func(ctx context.Context, tx *store.Tx, out []BulkOutcome) error {
		seen = len(out)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen != 10 || f.count(`SELECT COUNT(*) FROM Transactions`) != 10 {
		t.Fatalf("then saw %d outcomes; %d transfers", seen, f.count(`SELECT COUNT(*) FROM Transactions`))
	}
}

// Keys of a batch resolve as Submit's would: a key already DONE with the
// same body replays its answer, with another body it is
// IDEMPOTENCY_KEY_CONFLICT, a key twice in the batch replays the first,
// and each fresh key gets one DONE row holding its answer and its body's
// hash (written with the batch, not claimed and then completed).
func TestSubmitBulkKeysResolveAsSubmitWould(t *testing.T) {
	f := newFixture(t, nil)
	items := bulkItems(6, func(i int) int64 { return int64(500 + i) })
	first := f.submit(items[1].Req, items[1].Key) // done, same body: a replay
	other := items[2].Req
	other.Amount.Value = 9
	f.submit(other, items[2].Key) // done with another body: a conflict
	items[5].Key = items[4].Key   // twice in the batch
	items[5].Req = items[4].Req
	out, err := f.o.SubmitBulk(f.ctx, "001", items, nil)
	if err != nil {
		t.Fatal(err)
	}
	codes := outcomeCodes(out)
	if !slices.Equal(codes, []string{"", "replay", "IDEMPOTENCY_KEY_CONFLICT", "", "", "replay"}) {
		t.Fatalf("outcomes %q", codes)
	}
	if out[1].Result.TxID != first.TxID || out[5].Result.TxID != out[4].Result.TxID || out[4].Result.TxID == "" {
		t.Fatalf("replays answer %s and %s, want %s and %s", out[1].Result.TxID, out[5].Result.TxID, first.TxID, out[4].Result.TxID)
	}
	for _, i := range []int{0, 3, 4} {
		body, err := json.Marshal(items[i].Req)
		if err != nil {
			t.Fatal(err)
		}
		var status, hash string
		var resp []byte
		if err := f.o.db.Read(f.ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(f.ctx, `SELECT status, request_hash, response_body FROM IdempotencyKeys WHERE key = ?`,
				idemKey("001", items[i].Key)).Scan(&status, &hash, &resp)
		}); err != nil {
			t.Fatalf("item %d key: %v", i, err)
		}
		var got SubmitResult
		if err := json.Unmarshal(resp, &got); err != nil || status != "DONE" || hash != idem.HashBody(body).String || got != out[i].Result {
			t.Fatalf("item %d key: %s %s %s (%v), want DONE, %s, %+v", i, status, hash, resp, err, idem.HashBody(body).String, out[i].Result)
		}
	}
	if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 2+3 {
		t.Fatalf("%d transfers, want 5 (2 submitted, 3 from the batch)", n)
	}
}
