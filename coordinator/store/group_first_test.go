package store

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
)

// TestGroupFirstCallerFailsAlone: a group's first caller runs without a
// savepoint. When it fails (error or panic) after writing, its writes are
// undone and the rest of the group commits in a new transaction; a later
// caller that fails is undone to its savepoint. Callers queue behind a
// Write that holds the writer, so the group and its order are known.
func TestGroupFirstCallerFailsAlone(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "g.db"), "CREATE TABLE IF NOT EXISTS kv (k INTEGER PRIMARY KEY)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hold, started := make(chan struct{}), make(chan struct{})
	holderDone := make(chan error)
	go func() {
		holderDone <- db.Write(ctx, func(tx *Tx) error {
			close(started)
			<-hold
			_, err := tx.ExecContext(ctx, "INSERT INTO kv (k) VALUES (0)")
			return err
		})
	}()
	<-started
	// callers 1..6 in this order: 1 fails, 2 panics (each first in its
	// transaction in turn), 3 commits, 4 fails, 5 panics, 6 commits.
	type result struct {
		err   error
		panic any
	}
	results := make([]chan result, 7)
	queued := func() int {
		db.groupMu.Lock()
		defer db.groupMu.Unlock()
		return len(db.groupQueue)
	}
	for k := 1; k <= 6; k++ {
		results[k] = make(chan result, 1)
		go func(k int) {
			var res result
			defer func() {
				res.panic = recover()
				results[k] <- res
			}()
			res.err = db.Write(ctx, func(tx *Tx) error {
				if _, err := tx.ExecContext(ctx, "INSERT INTO kv (k) VALUES (?)", k); err != nil {
					return err
				}
				switch k {
				case 1, 4:
					return fmt.Errorf("caller %d fails", k)
				case 2, 5:
					panic(fmt.Sprintf("caller %d panics", k))
				}
				return nil
			})
		}(k)
		for queued() < k {
			runtime.Gosched()
		}
	}
	before := db.Stats()
	close(hold)
	if err := <-holderDone; err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 6; k++ {
		res := <-results[k]
		switch k {
		case 1, 4:
			if res.err == nil || res.err.Error() != fmt.Sprintf("caller %d fails", k) || res.panic != nil {
				t.Errorf("caller %d: %+v, want its own error", k, res)
			}
		case 2, 5:
			if res.panic != fmt.Sprintf("caller %d panics", k) || res.err != nil {
				t.Errorf("caller %d: %+v, want its panic re-raised", k, res)
			}
		default:
			if res.err != nil || res.panic != nil {
				t.Errorf("caller %d: %+v", k, res)
			}
		}
	}
	after := db.Stats()
	var got []int
	if err := db.Read(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT k FROM kv ORDER BY k")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k int
			if err := rows.Scan(&k); err != nil {
				return err
			}
			got = append(got, k)
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[0 3 6]" {
		t.Errorf("rows %v, want [0 3 6]: failed callers undone, their neighbours kept", got)
	}
	// the holder's commit, then one commit for callers 3..6 (the
	// transactions that 1 and 2 began were rolled back)
	if c := after.Commits - before.Commits; c != 2 {
		t.Errorf("%d commits after the release, want 2", c)
	}
	// statements: the holder's INSERT; 1 and 2 an INSERT each, bare; 3 an
	// INSERT, bare; 4 and 5 SAVEPOINT, INSERT, ROLLBACK TO, RELEASE; 6
	// SAVEPOINT, INSERT, RELEASE (with a savepoint for every caller: 23)
	if n := after.Statements - before.Statements; n != 15 {
		t.Errorf("%d statements after the release, want 15", n)
	}
}
