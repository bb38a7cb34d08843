package overnight_test

import (
	"context"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
)

// TestConcurrentSendCutsOneFile races senders and case sweepers: one file
// is cut, every posting is in it once, and each BLOCKED posting gets one
// Case. Run with -race.
func TestConcurrentSendCutsOneFile(t *testing.T) {
	ctx := context.Background()
	e := openEnv(t, t.TempDir(), true)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := e.exchange(t)
			if _, _, err := x.Send(ctx, date); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := count(t, e.db, `SELECT COUNT(*) FROM OvernightFiles`); got != 1 {
		t.Fatalf("%d files cut, want 1", got)
	}
	if got := count(t, e.db, `SELECT COUNT(DISTINCT file_seq) FROM AdapterOutbox WHERE status = 'IN_FILE'`); got != 6 {
		t.Fatalf("%d distinct details, want 6", got)
	}
	if err := e.cycle(t); err != nil {
		t.Fatal(err)
	}
	// Reset the Case ids and race the sweepers over them.
	mustWrite(t, e, `UPDATE AdapterOutbox SET case_id = NULL, case_token = NULL, case_claimed_at = NULL WHERE status = 'BLOCKED'`)
	var wg2 sync.WaitGroup
	for i := 0; i < n; i++ {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			if _, err := e.exchange(t).OpenMissingCases(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg2.Wait()
	e.assertExactlyOnce(t)
}

func mustWrite(t *testing.T, e *env, q string) {
	t.Helper()
	if err := e.db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), q)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
