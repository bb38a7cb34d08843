package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

// holdGroup makes the group-commit leader of db run a caller that waits
// until release is closed, so Submits arriving meanwhile queue up and
// share the next commit. The returned channel closes when that caller's
// own commit is done.
func holdGroup(t *testing.T, db *store.DB, release <-chan struct{}) <-chan struct{} {
	t.Helper()
	held, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if err := db.Write(context.Background(), func(*store.Tx) error { close(held); <-release; return nil }); err != nil {
			t.Error(err)
		}
	}()
	<-held
	return done
}

// submitAll runs the submits concurrently, all queued behind one held
// group so they share commits, and returns results, errors and how many
// commits they took.
func submitAll(f *fixture, reqs []PaymentInitiated, keys []string) ([]SubmitResult, []error, int64) {
	f.t.Helper()
	t := f.t.(*testing.T)
	out, errs := make([]SubmitResult, len(reqs)), make([]error, len(reqs))
	release := make(chan struct{})
	held := holdGroup(t, f.db, release)
	before := f.db.Stats().Commits
	var started, wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			started.Done()
			out[i], errs[i] = f.o.Submit(f.ctx, reqs[i], keys[i], reqs[i].Payer.BankID)
		}()
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond) // let the Submits queue behind the held group
	close(release)
	wg.Wait()
	<-held
	return out, errs, f.db.Stats().Commits - before
}

func TestGroupCommitSubmitRefusalsDoNotTouchNeighbours(t *testing.T) {
	f := newFixture(t, nil)
	f.setParticipant("001", func(p *participants.Participant) { p.TxAmountLimit = i64(5_000) })
	const n = 24
	// Every 6th Submit has an invalid body, every 6th+3 breaches the
	// payer's per-transfer limit; the rest must all land.
	refused := func(i int) string {
		switch i % 6 {
		case 1:
			return "INVALID_AMOUNT"
		case 4:
			return "AMOUNT_EXCEEDS_TX_LIMIT"
		}
		return ""
	}
	reqs, keys := make([]PaymentInitiated, n), make([]string, n)
	var wantUsed int64
	for i := range n {
		keys[i] = fmt.Sprintf("g-%02d", i)
		reqs[i] = pi(LaneExpress, int64(100+i))
		switch refused(i) {
		case "INVALID_AMOUNT":
			reqs[i].Amount.Value = 0
		case "AMOUNT_EXCEEDS_TX_LIMIT":
			reqs[i].Amount.Value = 9_000
		default:
			wantUsed += reqs[i].Amount.Value
		}
	}
	res, errs, commits := submitAll(f, reqs, keys)
	txids := map[string]bool{}
	for i := range n {
		idem := idemKey("001", keys[i])
		if code := refused(i); code != "" {
			wantCode(t, errs[i], code)
			if got := f.count("SELECT COUNT(*) FROM IdempotencyKeys WHERE key = ?", idem); got != 0 {
				t.Errorf("refused submit %d left %d idempotency keys", i, got)
			}
			continue
		}
		if errs[i] != nil || res[i].TxID == "" || res[i].Replayed {
			t.Fatalf("submit %d: %+v %v", i, res[i], errs[i])
		}
		txids[res[i].TxID] = true
		if got := f.count("SELECT COUNT(*) FROM Transactions WHERE idempotency_key = ? AND txid = ? AND state = 'RECEIVED'", idem, res[i].TxID); got != 1 {
			t.Errorf("submit %d: %d Transactions rows, want 1", i, got)
		}
		if got := f.count("SELECT COUNT(*) FROM OrchestratorTransfers WHERE txid = ?", res[i].TxID); got != 1 {
			t.Errorf("submit %d: %d progress rows, want 1", i, got)
		}
	}
	landed := n - 2*n/6
	if len(txids) != landed || f.count("SELECT COUNT(*) FROM Transactions") != landed {
		t.Fatalf("%d distinct txids, %d Transactions rows; want %d", len(txids), f.count("SELECT COUNT(*) FROM Transactions"), landed)
	}
	if got := f.count("SELECT daily_amount_used FROM Participants WHERE bank_id = '001'"); int64(got) != wantUsed {
		t.Errorf("daily_amount_used %d, want %d (refused submits consume nothing)", got, wantUsed)
	}
	if commits >= n/2 {
		t.Errorf("%d commits for %d concurrent grouped submits: commits were not shared", commits, n)
	}

	// Round 2, again in shared commits: replays of landed keys (same body),
	// a changed body on a landed key, and a fresh key whose txid collides
	// with a landed transfer (refused after it claimed its key and consumed
	// its daily amount, so its savepoint must undo both).
	var reqs2 []PaymentInitiated
	var keys2, want2 []string
	for i := range n {
		if refused(i) == "" && i%3 == 0 {
			reqs2, keys2, want2 = append(reqs2, reqs[i]), append(keys2, keys[i]), append(want2, "REPLAY:"+res[i].TxID)
		}
	}
	changed := reqs[2]
	changed.Amount.Value++
	collide := pi(LaneExpress, 777)
	collide.TxID = res[3].TxID
	reqs2 = append(reqs2, changed, collide)
	keys2 = append(keys2, keys[2], "g-collide")
	want2 = append(want2, "IDEMPOTENCY_KEY_CONFLICT", "INVALID_REQUEST")
	res2, errs2, _ := submitAll(f, reqs2, keys2)
	for i, want := range want2 {
		if txid, ok := strings.CutPrefix(want, "REPLAY:"); ok {
			if errs2[i] != nil || !res2[i].Replayed || res2[i].TxID != txid {
				t.Errorf("replay of %s: %+v %v, want the stored answer for %s", keys2[i], res2[i], errs2[i], txid)
			}
			continue
		}
		if domainerr.Code(errs2[i]) != want {
			t.Errorf("%s: %v, want %s", keys2[i], errs2[i], want)
		}
	}
	if got := f.count("SELECT COUNT(*) FROM Transactions"); got != landed {
		t.Errorf("%d Transactions rows after replays and refusals, want %d", got, landed)
	}
	if got := f.count("SELECT COUNT(*) FROM IdempotencyKeys WHERE key = ?", idemKey("001", "g-collide")); got != 0 {
		t.Errorf("refused colliding submit left its idempotency key")
	}
	if got := f.count("SELECT daily_amount_used FROM Participants WHERE bank_id = '001'"); int64(got) != wantUsed {
		t.Errorf("daily_amount_used %d after round 2, want %d", got, wantUsed)
	}
}

func TestGroupCommitSubmitCancelledBeforeQueueingWritesNothing(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	if _, err := f.o.Submit(ctx, pi(LaneExpress, 100), "cancelled", "001"); err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if got := f.count("SELECT COUNT(*) FROM Transactions"); got != 0 {
		t.Fatalf("%d Transactions rows", got)
	}
}

// A Submit whose context is cancelled while it waits in the commit queue
// writes nothing and says so; its neighbour in the same group lands.
func TestGroupCommitSubmitCancelledWhileQueuedWritesNothing(t *testing.T) {
	f := newFixture(t, nil)
	release := make(chan struct{})
	held := holdGroup(t, f.db, release)
	ctx, cancel := context.WithCancel(f.ctx)
	type answer struct {
		r   SubmitResult
		err error
	}
	got := make(chan answer, 2)
	go func() {
		r, err := f.o.Submit(ctx, pi(LaneExpress, 100), "cancelled-late", "001")
		got <- answer{r, err}
	}()
	go func() { r, err := f.o.Submit(f.ctx, pi(LaneExpress, 200), "neighbour", "001"); got <- answer{r, err} }()
	time.Sleep(50 * time.Millisecond) // both queued behind the held group
	cancel()
	close(release)
	<-held
	var landed, refused int
	for range 2 {
		switch a := <-got; {
		case a.err == nil && a.r.TxID != "":
			landed++
		case errors.Is(a.err, context.Canceled):
			refused++
		default:
			t.Fatalf("submit: %+v %v", a.r, a.err)
		}
	}
	if landed != 1 || refused != 1 {
		t.Fatalf("landed %d refused %d, want 1 and 1", landed, refused)
	}
	if n := f.count("SELECT COUNT(*) FROM Transactions"); n != 1 {
		t.Fatalf("%d Transactions rows, want 1 (the neighbour's)", n)
	}
}

// Drives of many transfers share commits: their first commits (the H
// reservation and the decision) all queue behind one held group, so they
// land in one commit group. The transfer whose H reservation breaches the
// payer's H limit fails inside that group; its savepoint alone rolls back
// (it is cancelled with H_LIMIT_EXCEEDED, its bank hold released) and
// every neighbour is decided and settles.
func TestGroupCommitDriveOneBadItemLeavesNeighbours(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Concurrency, c.BatchSize = 16, 16 })
	f.setParticipant("001", func(p *participants.Participant) { p.HLimit = 10_000 })
	const n, bad = 12, 5
	txids := make([]string, n)
	for i := range n {
		amount := int64(500) // 11 x 500 fits the H limit together
		if i == bad {
			amount = 20_000
		}
		txids[i] = f.submit(pi("EXPRESS", amount), fmt.Sprintf("gd-%02d", i)).TxID
	}
	items, _, err := f.o.claim(f.ctx, f.o.cfg.WorkerID, n)
	if err != nil || len(items) != n {
		t.Fatalf("claimed %d items: %v", len(items), err)
	}
	release := make(chan struct{})
	held := holdGroup(t, f.db, release)
	var wg sync.WaitGroup
	for _, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.o.process(f.ctx, it, f.o.cfg.WorkerID, f.o.work); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // let every drive queue its first commit behind the held group
	close(release)
	wg.Wait()
	<-held
	// No second round: every drive finished in its one run.
	for i, id := range txids {
		v := f.view(id)
		switch {
		case i == bad && (v.State != "CANCELLED" || v.ReasonCode != ReasonHLimitExceeded):
			t.Errorf("bad transfer %s: %s %s, want CANCELLED %s", id, v.State, v.ReasonCode, ReasonHLimitExceeded)
		case i != bad && v.State != "SETTLED":
			t.Errorf("neighbour %s: %s %s, want SETTLED", id, v.State, v.ReasonCode)
		}
	}
	if got := f.count(`SELECT h_used FROM Participants WHERE bank_id = '001'`); got != 0 {
		t.Errorf("payer h_used %d after every transfer ended, want 0", got)
	}
	if got := f.count(`SELECT COUNT(*) FROM HReservations WHERE txid = ?`, txids[bad]); got != 0 {
		t.Errorf("%d H reservations left by the refused transfer, want 0", got)
	}
	if got := f.b.count(bankapi.ReleaseReserve); got != 1 {
		t.Errorf("%d release-reserve calls, want 1 (the refused transfer's bank hold)", got)
	}
}
