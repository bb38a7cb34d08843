package sysmode

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

func setup(t *testing.T) (*store.DB, *Controller) {
	t.Helper()
	db, err := store.OpenCoordinator(context.Background(), filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewManual(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))
	return db, NewController(db, finality.New(clk), clk, nil)
}

func TestHasQuorumIsAStrictMajority(t *testing.T) {
	for _, c := range []struct {
		up, n int
		want  bool
	}{
		{1, 1, true}, {0, 1, false},
		{1, 2, false}, {2, 2, true},
		{1, 3, false}, {2, 3, true},
		{2, 4, false}, {3, 4, true},
		{2, 5, false}, {3, 5, true},
	} {
		if got := HasQuorum(c.up, c.n); got != c.want {
			t.Errorf("HasQuorum(%d of %d) = %v, want %v", c.up, c.n, got, c.want)
		}
	}
}

type logRow struct{ Type, From, To string }

func globalChain(t *testing.T, db *store.DB) []logRow {
	t.Helper()
	ctx := context.Background()
	var out []logRow
	if err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT event_type, state_from, state_to FROM FinalityLog WHERE txid IS NULL AND gtid IS NULL ORDER BY event_seq")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r logRow
			if err := rows.Scan(&r.Type, &r.From, &r.To); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func gateErr(t *testing.T, db *store.DB) error {
	t.Helper()
	return db.Write(context.Background(), func(tx *store.Tx) error { return Gate{}.CheckWritable(context.Background(), tx) })
}

func TestModesAreIndependentAndEachChangeIsLogged(t *testing.T) {
	ctx := context.Background()
	db, c := setup(t)
	steps := []struct {
		name     string
		do       func() (Status, bool, error)
		want     Status
		changed  bool
		gateCode string
	}{
		{"3 of 3 up: nothing to do", func() (Status, bool, error) { return c.ReconcileQuorum(ctx, 3, 3) }, Status{}, false, ""},
		{"1 of 3 up: quorum lost", func() (Status, bool, error) { return c.ReconcileQuorum(ctx, 1, 3) }, Status{QuorumLoss: true}, true, "SYSTEM_QUORUM_LOSS_READ_ONLY"},
		{"still lost: no second event", func() (Status, bool, error) { return c.ReconcileQuorum(ctx, 0, 3) }, Status{QuorumLoss: true}, false, "SYSTEM_QUORUM_LOSS_READ_ONLY"},
		{"operator declares BCP", func() (Status, bool, error) { return c.ActivateBCP(ctx, "op-1", "vendor outage") }, Status{QuorumLoss: true, BCP: true}, true, "SYSTEM_QUORUM_LOSS_READ_ONLY"},
		{"BCP deactivation does not clear quorum loss", func() (Status, bool, error) { return c.DeactivateBCP(ctx, "op-1", "vendor back") }, Status{QuorumLoss: true}, true, "SYSTEM_QUORUM_LOSS_READ_ONLY"},
		{"operator declares BCP again", func() (Status, bool, error) { return c.ActivateBCP(ctx, "op-2", "drill") }, Status{QuorumLoss: true, BCP: true}, true, "SYSTEM_QUORUM_LOSS_READ_ONLY"},
		{"quorum recovery does not clear BCP", func() (Status, bool, error) { return c.ReconcileQuorum(ctx, 2, 3) }, Status{BCP: true}, true, "SYSTEM_BCP_READ_ONLY"},
		{"BCP activation is idempotent", func() (Status, bool, error) { return c.ActivateBCP(ctx, "op-2", "again") }, Status{BCP: true}, false, "SYSTEM_BCP_READ_ONLY"},
		{"BCP lifted: NORMAL", func() (Status, bool, error) { return c.DeactivateBCP(ctx, "op-2", "drill over") }, Status{}, true, ""},
	}
	for _, s := range steps {
		got, changed, err := s.do()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got != s.want || changed != s.changed {
			t.Fatalf("%s: status %+v changed %v, want %+v %v", s.name, got, changed, s.want, s.changed)
		}
		if st, err := c.Status(ctx); err != nil || st != s.want {
			t.Fatalf("%s: stored status %+v %v", s.name, st, err)
		}
		err = gateErr(t, db)
		if domainerr.Code(err) != s.gateCode || (s.gateCode == "" && err != nil) {
			t.Fatalf("%s: gate error %v, want %q", s.name, err, s.gateCode)
		}
		if err != nil {
			if de, _ := domainerr.As(err); de.Category != domainerr.Downstream || !de.Retryable() {
				t.Fatalf("%s: %s must be DOWNSTREAM and retryable, got %s", s.name, de.Code, de.Category)
			}
		}
	}
	want := []logRow{
		{"SystemQuorumLossActivated", "NORMAL", "QUORUM_LOSS_READONLY"},
		{"SystemBcpActivated", "NORMAL", "BCP_READONLY"},
		{"SystemBcpDeactivated", "BCP_READONLY", "NORMAL"},
		{"SystemBcpActivated", "NORMAL", "BCP_READONLY"},
		{"SystemQuorumLossCleared", "QUORUM_LOSS_READONLY", "NORMAL"},
		{"SystemBcpDeactivated", "BCP_READONLY", "NORMAL"},
	}
	got := globalChain(t, db)
	if len(got) != len(want) {
		t.Fatalf("GLOBAL chain %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("GLOBAL entry %d = %v, want %v", i, got[i], want[i])
		}
	}
	if r, err := finality.VerifyChain(ctx, db, finality.GlobalChain); err != nil || !r.OK() || r.Entries != 6 {
		t.Fatalf("GLOBAL chain verify %+v %v", r, err)
	}
}

func TestReadsStayAllowedWhileReadOnly(t *testing.T) {
	ctx := context.Background()
	db, c := setup(t)
	if _, _, err := c.ActivateBCP(ctx, "op", "test"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ReconcileQuorum(ctx, 0, 5); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM FinalityLog").Scan(&n)
	}); err != nil || n != 2 {
		t.Fatalf("read while read-only: n=%d err=%v", n, err)
	}
}

func TestRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	_, c := setup(t)
	for _, f := range []func() error{
		func() error { _, _, err := c.ReconcileQuorum(ctx, 1, 0); return err },
		func() error { _, _, err := c.ReconcileQuorum(ctx, 4, 3); return err },
		func() error { _, _, err := c.ReconcileQuorum(ctx, -1, 3); return err },
	} {
		if err := f(); domainerr.Code(err) != "INVALID_REQUEST" {
			t.Errorf("err %v, want INVALID_REQUEST", err)
		}
	}
	if _, _, err := c.ActivateBCP(ctx, "", "x"); domainerr.Code(err) != "MISSING_FIELD" {
		t.Errorf("ActivateBCP without operator: %v", err)
	}
	if _, _, err := c.DeactivateBCP(ctx, "", "x"); domainerr.Code(err) != "MISSING_FIELD" {
		t.Errorf("DeactivateBCP without operator: %v", err)
	}
}

// An operator mode change without a reason is refused and changes nothing.
func TestBCPNeedsAReason(t *testing.T) {
	ctx := context.Background()
	db, c := setup(t)
	for _, reason := range []string{"", "   "} {
		_, _, err := c.ActivateBCP(ctx, "op-1", reason)
		if de, ok := domainerr.As(err); !ok || de.Code != "MISSING_FIELD" || de.Details["field"] != "reason" {
			t.Fatalf("ActivateBCP reason %q: %v, want MISSING_FIELD naming reason", reason, err)
		}
	}
	if st, err := c.Status(ctx); err != nil || st.BCP {
		t.Fatalf("status after refused activation: %+v %v", st, err)
	}
	if got := globalChain(t, db); len(got) != 0 {
		t.Fatalf("refused activation wrote %v", got)
	}
	if _, _, err := c.ActivateBCP(ctx, "op-1", "drill"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.DeactivateBCP(ctx, "op-1", ""); domainerr.Code(err) != "MISSING_FIELD" {
		t.Fatalf("DeactivateBCP without reason: %v", err)
	}
	v, err := c.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bcp FlagState
	for _, f := range v.Flags {
		if f.Mode == BCPReadOnly {
			bcp = f
		}
	}
	if v.Writable || !bcp.Active || bcp.Actor != "op-1" || bcp.Reason != "drill" || bcp.ChangedAt != clock.Stamp(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)) || bcp.Version != 1 {
		t.Fatalf("Show after the refused deactivation: %+v", v)
	}
}

// N goroutines toggle BCP at once: the guarded UPDATE lets exactly one
// event through per actual change, so the GLOBAL chain alternates
// activated/deactivated, its length is the number of changes reported,
// and the flag's version counts them too.
func TestBCPTogglesRaceOneEventPerChange(t *testing.T) {
	ctx := context.Background()
	db, c := setup(t)
	const n, rounds = 8, 10
	var changes atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n*rounds)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				f := c.ActivateBCP
				if (g+i)%2 == 1 {
					f = c.DeactivateBCP
				}
				_, changed, err := f(ctx, fmt.Sprintf("op-%d", g), "race")
				if err != nil {
					errs <- err
					return
				}
				if changed {
					changes.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := globalChain(t, db)
	if int64(len(got)) != changes.Load() || len(got) == 0 {
		t.Fatalf("%d GLOBAL events for %d reported changes", len(got), changes.Load())
	}
	for i, r := range got {
		want := logRow{"SystemBcpActivated", "NORMAL", "BCP_READONLY"}
		if i%2 == 1 {
			want = logRow{"SystemBcpDeactivated", "BCP_READONLY", "NORMAL"}
		}
		if r != want {
			t.Fatalf("GLOBAL entry %d = %v, want %v (a change was logged twice or not at all)", i, r, want)
		}
	}
	v, err := c.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range v.Flags {
		if f.Mode == BCPReadOnly && (f.Version != changes.Load() || f.Active != (len(got)%2 == 1)) {
			t.Fatalf("BCP flag %+v after %d changes", f, changes.Load())
		}
	}
	if r, err := finality.VerifyChain(ctx, db, finality.GlobalChain); err != nil || !r.OK() || r.Entries != len(got) {
		t.Fatalf("GLOBAL chain verify %+v %v", r, err)
	}
}

func TestGateFailsClosedWhenModeRowsAreMissing(t *testing.T) {
	db, _ := setup(t)
	if err := db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), "DELETE FROM SystemMode WHERE mode = 'BCP_READONLY'")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := gateErr(t, db); domainerr.Code(err) != "INVARIANT_VIOLATION" {
		t.Fatalf("gate with a missing mode row: %v, want INVARIANT_VIOLATION", err)
	}
}
