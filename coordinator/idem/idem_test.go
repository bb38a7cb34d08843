package idem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

var t0 = time.Date(2026, 4, 1, 1, 0, 0, 0, time.UTC)

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.OpenCoordinator(context.Background(), filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type row struct {
	Key, Status, Response, Created string
	Hash                           *string
}

func rows(t *testing.T, db *store.DB) []row {
	t.Helper()
	var out []row
	err := db.Read(context.Background(), func(tx *store.Tx) error {
		rs, err := tx.QueryContext(context.Background(),
			"SELECT key, status, COALESCE(response_body, ''), created_at, request_hash FROM IdempotencyKeys ORDER BY key")
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.Key, &r.Status, &r.Response, &r.Created, &r.Hash); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rs.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKeyBuilders(t *testing.T) {
	cases := []struct {
		name  string
		build func() (string, error)
		want  string
		code  string
		field string
	}{
		{"tx", func() (string, error) { return TxKey("TX-1", "PaymentInitiated", "001") }, "TX:TX-1:PaymentInitiated:001", "", ""},
		{"gt", func() (string, error) { return GtKey("GT-1", "GtRegister", "ZC") }, "GT:GT-1:GtRegister:ZC", "", ""},
		{"leg", func() (string, error) { return LegKey("GT-1", "L2", "GtLegReadyRequested", "ZC") }, "LEG:GT-1:L2:GtLegReadyRequested:ZC", "", ""},
		{"rtp", func() (string, error) { return RtpKey("RTP-1", "A3", "RtpRequested", "002") }, "RTP:RTP-1:A3:RtpRequested:002", "", ""},
		{"case", func() (string, error) { return CaseKey("CASE-1", "CaseResolve", "OPS") }, "CASE:CASE-1:CaseResolve:OPS", "", ""},
		{"sig", func() (string, error) { return SigKey("KEY-1", "n-1") }, "sig:KEY-1:n-1", "", ""},
		{"leg without leg_id", func() (string, error) { return LegKey("GT-1", "", "GtLegReadyRequested", "ZC") }, "", "MISSING_FIELD", "leg_id"},
		{"rtp without attempt_id", func() (string, error) { return RtpKey("RTP-1", " ", "RtpRequested", "002") }, "", "MISSING_FIELD", "attempt_id"},
		{"tx without issuer", func() (string, error) { return TxKey("TX-1", "PaymentInitiated", "") }, "", "MISSING_FIELD", "issuer"},
		{"gt without gtid", func() (string, error) { return GtKey("", "n", "ZC") }, "", "MISSING_FIELD", "gtid"},
		{"case without name", func() (string, error) { return CaseKey("CASE-1", "", "OPS") }, "", "MISSING_FIELD", "name"},
		{"colon in part", func() (string, error) { return TxKey("TX:1", "n", "001") }, "", "INVALID_REQUEST", "txid"},
	}
	for _, c := range cases {
		got, err := c.build()
		if c.code == "" {
			if err != nil || got != c.want {
				t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
			}
			continue
		}
		de, ok := domainerr.As(err)
		if !ok || de.Code != c.code || de.Details["field"] != c.field || got != "" {
			t.Errorf("%s: got %q, %v; want %s on %s", c.name, got, err, c.code, c.field)
		}
	}
}

func TestReplayConflictAndInFlight(t *testing.T) {
	db := openDB(t)
	clk := clock.NewManual(t0)
	k := New(clk, nil)
	ctx := context.Background()
	key, _ := TxKey("TX-1", "PaymentInitiated", "001")
	body := []byte(`{"amount":1000,"payee":"002"}`)

	r, err := k.AcquireDB(ctx, db, key, body)
	if err != nil || r.Outcome != Fresh {
		t.Fatalf("first acquire: %+v %v", r, err)
	}
	r, err = k.AcquireDB(ctx, db, key, body)
	if err != nil || r.Outcome != InFlight || r.Response != nil {
		t.Fatalf("second acquire before complete: %+v %v", r, err)
	}
	clk.Advance(time.Second)
	if err := k.CompleteDB(ctx, db, key, []byte(`{"txid":"TX-1","state":"INITIATED"}`)); err != nil {
		t.Fatal(err)
	}
	r, err = k.AcquireDB(ctx, db, key, body)
	if err != nil || r.Outcome != Replay || string(r.Response) != `{"txid":"TX-1","state":"INITIATED"}` {
		t.Fatalf("replay: %+v %v", r, err)
	}
	r, err = k.ResolveDB(ctx, db, key, body)
	if err != nil || r.Outcome != Replay || string(r.Response) != `{"txid":"TX-1","state":"INITIATED"}` {
		t.Fatalf("resolve: %+v %v", r, err)
	}
	// Same key, different body: conflict, no stored response.
	r, err = k.AcquireDB(ctx, db, key, []byte(`{"amount":9000,"payee":"002"}`))
	if !domainerr.Has(err, "IDEMPOTENCY_KEY_CONFLICT") || r.Outcome != Conflict || r.Response != nil {
		t.Fatalf("conflict: %+v %v", r, err)
	}
	if de, _ := domainerr.As(err); de.HTTPStatus() != 409 {
		t.Fatalf("conflict status %d", de.HTTPStatus())
	}
	// Completing twice is refused and keeps the first response.
	if err := k.CompleteDB(ctx, db, key, []byte(`other`)); !domainerr.Has(err, "ALREADY_PROCESSED") {
		t.Fatalf("second complete: %v", err)
	}
	got := rows(t, db)
	want := HashBody(body).String
	if len(got) != 1 || got[0].Status != StatusDone || got[0].Response != `{"txid":"TX-1","state":"INITIATED"}` ||
		got[0].Hash == nil || *got[0].Hash != want || got[0].Created != "2026-04-01T01:00:00.000000000Z" {
		t.Fatalf("row %+v", got)
	}
}

func TestSigKeyNeverConflicts(t *testing.T) {
	db := openDB(t)
	k := New(clock.NewManual(t0), nil)
	ctx := context.Background()
	key, _ := SigKey("KEY-1", "nonce-1")
	if r, err := k.AcquireDB(ctx, db, key, nil); err != nil || r.Outcome != Fresh {
		t.Fatalf("%+v %v", r, err)
	}
	// The replay of the nonce is seen (IN_FLIGHT: held), never a body conflict.
	if r, err := k.AcquireDB(ctx, db, key, []byte("anything")); err != nil || r.Outcome != InFlight {
		t.Fatalf("%+v %v", r, err)
	}
	if got := rows(t, db); len(got) != 1 || got[0].Hash != nil {
		t.Fatalf("rows %+v", got)
	}
}

func TestCompleteUnknownKey(t *testing.T) {
	db := openDB(t)
	k := New(clock.NewManual(t0), nil)
	err := k.CompleteDB(context.Background(), db, "TX:none:n:001", []byte("x"))
	if !domainerr.Has(err, "STATE_GUARD") {
		t.Fatalf("got %v", err)
	}
}

func TestAbandonFreesProcessingOnly(t *testing.T) {
	db := openDB(t)
	k := New(clock.NewManual(t0), nil)
	ctx := context.Background()
	k.AcquireDB(ctx, db, "TX:a:n:001", []byte("a"))
	k.AcquireDB(ctx, db, "TX:b:n:001", []byte("b"))
	k.CompleteDB(ctx, db, "TX:b:n:001", []byte("done"))
	if ok, err := k.AbandonDB(ctx, db, "TX:a:n:001"); !ok || err != nil {
		t.Fatalf("abandon processing: %v %v", ok, err)
	}
	if ok, err := k.AbandonDB(ctx, db, "TX:b:n:001"); ok || err != nil {
		t.Fatalf("abandon done: %v %v", ok, err)
	}
	if r, _ := k.AcquireDB(ctx, db, "TX:a:n:001", []byte("a")); r.Outcome != Fresh {
		t.Fatalf("after abandon: %v", r.Outcome)
	}
	if got := rows(t, db); len(got) != 2 || got[1].Status != StatusDone {
		t.Fatalf("rows %+v", got)
	}
}

// The sweep removes exactly the expired rows, including within the
// boundary second where RFC3339Nano strings do not sort as times.
func TestSweepRemovesExactlyExpired(t *testing.T) {
	db := openDB(t)
	clk := clock.NewManual(t0)
	k := New(clk, nil)
	ctx := context.Background()
	now := t0.Add(48 * time.Hour)
	type seed struct {
		key     string
		created time.Time
		done    bool
	}
	seeds := []seed{
		{"P-old", now.Add(-OrphanAge - time.Hour), false},                   // orphan
		{"P-edge-before", now.Add(-OrphanAge - time.Millisecond), false},    // orphan, same second as cutoff
		{"P-edge-exact", now.Add(-OrphanAge), false},                        // not strictly older: kept
		{"P-edge-after", now.Add(-OrphanAge + 300*time.Millisecond), false}, // kept
		{"P-young", now.Add(-time.Minute), false},                           // kept
		{"D-old", now.Add(-DoneTTL - time.Second), true},                    // expired
		{"D-edge-before", now.Add(-DoneTTL - 1), true},                      // expired (1 ns)
		{"D-edge-after", now.Add(-DoneTTL + 1), true},                       // kept
		{"D-young", now.Add(-OrphanAge - time.Hour), true},                  // DONE, older than 15 min: kept
	}
	now = now.Add(500 * time.Millisecond) // make the cutoffs fall mid-second
	for i := range seeds {
		seeds[i].created = seeds[i].created.Add(500 * time.Millisecond)
	}
	for _, s := range seeds {
		clk.Set(s.created)
		if r, err := k.AcquireDB(ctx, db, s.key, []byte(s.key)); err != nil || r.Outcome != Fresh {
			t.Fatal(r, err)
		}
		if s.done {
			if err := k.CompleteDB(ctx, db, s.key, []byte("ok")); err != nil {
				t.Fatal(err)
			}
		}
	}
	clk.Set(now)
	swept, err := k.SweepDB(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if swept != (Swept{Orphans: 2, Expired: 2}) {
		t.Errorf("swept %+v, want 2 orphans and 2 expired", swept)
	}
	var left []string
	for _, r := range rows(t, db) {
		left = append(left, r.Key)
	}
	want := []string{"D-edge-after", "D-young", "P-edge-after", "P-edge-exact", "P-young"}
	sort.Strings(want)
	if fmt.Sprint(left) != fmt.Sprint(want) {
		t.Errorf("left %v, want %v", left, want)
	}
	// A second sweep at the same instant removes nothing.
	if swept, _ := k.SweepDB(ctx, db); swept != (Swept{}) {
		t.Errorf("second sweep %+v", swept)
	}
}

func TestOnceRunsOnceAndReplays(t *testing.T) {
	db := openDB(t)
	k := New(clock.NewManual(t0), nil)
	ctx := context.Background()
	runs := 0
	fn := func(tx *store.Tx) ([]byte, error) {
		runs++
		return []byte(fmt.Sprintf(`{"run":%d}`, runs)), nil
	}
	for i := range 3 {
		resp, replayed, err := k.Once(ctx, db, "TX:o:n:001", []byte("b"), fn)
		if err != nil || string(resp) != `{"run":1}` || replayed != (i > 0) {
			t.Fatalf("call %d: %s %v %v", i, resp, replayed, err)
		}
	}
	if runs != 1 {
		t.Fatalf("fn ran %d times", runs)
	}
	// A failing fn leaves no key behind.
	boom := errors.New("boom")
	if _, _, err := k.Once(ctx, db, "TX:f:n:001", []byte("b"), func(*store.Tx) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if _, _, err := k.Once(ctx, db, "TX:o:n:001", []byte("changed"), fn); !domainerr.Has(err, "IDEMPOTENCY_KEY_CONFLICT") {
		t.Fatalf("got %v", err)
	}
	if got := rows(t, db); len(got) != 1 {
		t.Fatalf("rows %+v", got)
	}
}

// holdGroup makes the group-commit leader of db run a caller that waits
// until release is closed, so callers arriving meanwhile queue up and
// share the next commit. It returns a channel closed when that caller's
// commit is done.
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

func TestOnceGroupedKeepsSemanticsPerCaller(t *testing.T) {
	db := openDB(t)
	k := New(clock.NewManual(t0), nil)
	ctx := context.Background()
	const callers = 32
	boom := errors.New("boom")
	var sharedRuns atomic.Int32
	type result struct {
		resp     string
		replayed bool
		err      error
	}
	results := make([]result, callers)
	release := make(chan struct{})
	held := holdGroup(t, db, release)
	before := db.Stats().Commits
	var started, wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			key, fn := fmt.Sprintf("TX:G%d:n:001", i), func(*store.Tx) ([]byte, error) { return []byte(fmt.Sprintf(`{"i":%d}`, i)), nil }
			switch i % 4 {
			case 0: // all of these share one key and one body
				key = "TX:same:n:001"
				fn = func(*store.Tx) ([]byte, error) { sharedRuns.Add(1); return []byte(`{"shared":true}`), nil }
			case 1:
				fn = func(*store.Tx) ([]byte, error) { return nil, fmt.Errorf("caller %d: %w", i, boom) }
			}
			started.Done()
			resp, replayed, err := k.Once(ctx, db, key, []byte("body"), fn)
			results[i] = result{string(resp), replayed, err}
		}()
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond) // let the callers queue behind the held group
	close(release)
	wg.Wait()
	<-held

	fresh := 0
	for i, r := range results {
		switch i % 4 {
		case 0:
			if r.err != nil || r.resp != `{"shared":true}` {
				t.Errorf("caller %d on the shared key: %+v", i, r)
			}
			if !r.replayed {
				fresh++
			}
		case 1:
			if !errors.Is(r.err, boom) || r.resp != "" {
				t.Errorf("failing caller %d: %+v, want its own error only", i, r)
			}
		default:
			if r.err != nil || r.replayed || r.resp != fmt.Sprintf(`{"i":%d}`, i) {
				t.Errorf("caller %d: %+v", i, r)
			}
		}
	}
	if n := sharedRuns.Load(); n != 1 || fresh != 1 {
		t.Errorf("shared key: fn ran %d times, %d fresh answers; want 1 and 1 (the rest replays)", n, fresh)
	}
	got := rows(t, db)
	if want := 1 + callers/2; len(got) != want {
		t.Fatalf("%d keys stored, want %d (one shared + the succeeding callers; failing callers leave none)", len(got), want)
	}
	for _, r := range got {
		if r.Status != StatusDone {
			t.Errorf("key %s is %s", r.Key, r.Status)
		}
	}
	if c := db.Stats().Commits - before; c >= callers/2 {
		t.Errorf("%d commits for %d grouped callers: commits were not shared", c, callers)
	}
	// A changed body is still a conflict through the grouped writer.
	if _, _, err := k.Once(ctx, db, "TX:same:n:001", []byte("changed"), nil); !domainerr.Has(err, "IDEMPOTENCY_KEY_CONFLICT") {
		t.Fatalf("changed body: %v", err)
	}
}

func ExampleKeys_Once() {
	ctx := context.Background()
	dir, _ := filepathTemp()
	defer os.RemoveAll(dir)
	db, _ := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	defer db.Close()
	keys := New(clock.NewManual(t0), nil)
	key, _ := TxKey("TX-001", "PaymentInitiated", "001")
	body := []byte(`{"amount":1000}`)
	for range 2 {
		resp, replayed, err := keys.Once(ctx, db, key, body, func(tx *store.Tx) ([]byte, error) {
			return []byte(`{"txid":"TX-001"}`), nil
		})
		fmt.Println(string(resp), replayed, err)
	}
	_, _, err := keys.Once(ctx, db, key, []byte(`{"amount":2}`), nil)
	fmt.Println(domainerr.Code(err))
	// Output:
	// {"txid":"TX-001"} false <nil>
	// {"txid":"TX-001"} true <nil>
	// IDEMPOTENCY_KEY_CONFLICT
}

func filepathTemp() (string, error) { return os.MkdirTemp("", "idem-example") }

// BenchmarkOnce measures one claim + work + complete per commit, then one
// replay, on a file database (synchronous=FULL).
func BenchmarkOnce(b *testing.B) {
	dir := b.TempDir()
	db, err := store.OpenCoordinator(context.Background(), filepath.Join(dir, "zc.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	k := New(clock.NewManual(t0), nil)
	ctx := context.Background()
	body := []byte(`{"amount":1000}`)
	fn := func(*store.Tx) ([]byte, error) { return []byte(`{"ok":true}`), nil }
	b.Run("fresh", func(b *testing.B) {
		for i := range b.N {
			if _, _, err := k.Once(ctx, db, fmt.Sprintf("TX:B%d:n:001", i), body, fn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		for range b.N {
			if _, replayed, err := k.Once(ctx, db, "TX:B0:n:001", body, fn); err != nil || !replayed {
				b.Fatal(err)
			}
		}
	})
}

// Of 32 callers racing to use one single-use key exactly one gets it, and
// the key is stored DONE with the response in that caller's one INSERT.
func TestConcurrentUseOneWinner(t *testing.T) {
	db := openDB(t)
	k := New(clock.NewManual(t0), nil)
	ctx := context.Background()
	key, err := SigKey("K1", "nonce-1")
	if err != nil {
		t.Fatal(err)
	}
	const n = 32
	var fresh atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := db.Write(ctx, func(tx *store.Tx) error {
				ok, err := k.Use(ctx, tx, key, []byte("{}"))
				if ok {
					fresh.Add(1)
				}
				return err
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if fresh.Load() != 1 {
		t.Fatalf("%d callers used the key, want 1", fresh.Load())
	}
	got := rows(t, db)
	if len(got) != 1 || got[0].Key != key || got[0].Status != StatusDone || got[0].Response != "{}" {
		t.Fatalf("rows %+v", got)
	}
	// A key acquired the two-statement way is not usable either.
	other, _ := SigKey("K1", "nonce-2")
	if _, err := k.AcquireDB(ctx, db, other, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, func(tx *store.Tx) error {
		ok, err := k.Use(ctx, tx, other, nil)
		if ok {
			t.Errorf("an acquired key was used again")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
