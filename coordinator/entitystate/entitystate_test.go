package entitystate

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

var t0 = time.Date(2026, 4, 1, 3, 0, 0, 0, time.UTC)

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.OpenCoordinator(context.Background(), filepath.Join(t.TempDir(), "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func seedPspr(t *testing.T, db *store.DB, ref string) {
	t.Helper()
	err := db.Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(),
			`INSERT INTO PsprRegistry (pspr_ref, payee_bank_id, account_hash, digest, expires_at, created_at)
			 VALUES (?, '002', 'h', 'd', '2027-01-01T00:00:00.000000000Z', ?)`, ref, clock.Stamp(t0))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func history(t *testing.T, db *store.DB, typ, id string) []Entry {
	t.Helper()
	var out []Entry
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		var err error
		out, err = History(context.Background(), tx, typ, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func psprState(t *testing.T, db *store.DB, ref string) (state string, revokedAt *string) {
	t.Helper()
	if err := db.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(),
			"SELECT capability_state, revoked_at FROM PsprRegistry WHERE pspr_ref = ?", ref).Scan(&state, &revokedAt)
	}); err != nil {
		t.Fatal(err)
	}
	return state, revokedAt
}

func TestTransitionWritesStatusAndLogTogether(t *testing.T) {
	db := openDB(t)
	seedPspr(t, db, "PSPR-1")
	clk := clock.NewManual(t0)
	ctx := context.Background()
	apply := func(c Change) (Result, error) {
		var r Result
		err := db.Write(ctx, func(tx *store.Tx) error {
			var err error
			r, err = Transition(ctx, tx, clk, c)
			return err
		})
		return r, err
	}
	suspend := Change{EntityType: "PSPR", EntityID: "PSPR-1", From: []string{"ACTIVE"}, To: "SUSPENDED",
		EventType: "PsprSuspended", ReasonCode: "BANK_REQUEST", Actor: "BANK_002", Payload: map[string]any{"ticket": 7}}
	clk.Advance(time.Minute)
	if r, err := apply(suspend); err != nil || r != (Result{Applied: true, From: "ACTIVE"}) {
		t.Fatalf("suspend: %+v %v", r, err)
	}
	// Re-applying is a no-op: the guard (From ACTIVE) no longer holds.
	if r, err := apply(suspend); err != nil || r != (Result{Applied: false, From: "SUSPENDED"}) {
		t.Fatalf("again: %+v %v", r, err)
	}
	// Same-state change with any From is never applied.
	if r, err := apply(Change{EntityType: "PSPR", EntityID: "PSPR-1", To: "SUSPENDED", EventType: "PsprSuspended"}); err != nil || r.Applied {
		t.Fatalf("same state: %+v %v", r, err)
	}
	clk.Advance(time.Minute)
	revokedAt := clock.Stamp(clk.Now())
	if r, err := apply(Change{EntityType: "PSPR", EntityID: "PSPR-1", To: "REVOKED", EventType: "PsprRevoked",
		Actor: "OPS", Set: []Assign{{"revoked_at", revokedAt}}}); err != nil || !r.Applied {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	state, rev := psprState(t, db, "PSPR-1")
	if state != "REVOKED" || rev == nil || *rev != "2026-04-01T03:02:00.000000000Z" {
		t.Fatalf("row state %s revoked_at %v", state, rev)
	}
	h := history(t, db, "PSPR", "PSPR-1")
	if len(h) != 2 {
		t.Fatalf("history %+v", h)
	}
	got := []string{}
	for _, e := range h {
		if !strings.HasPrefix(e.LogID, "ESL-") {
			t.Errorf("log id %q", e.LogID)
		}
		got = append(got, fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s", e.EventType, e.From, e.To, e.ReasonCode, e.Actor, e.Payload, e.OccurredAt))
	}
	want := []string{
		`PsprSuspended|ACTIVE|SUSPENDED|BANK_REQUEST|BANK_002|{"ticket":7}|2026-04-01T03:01:00.000000000Z`,
		`PsprRevoked|SUSPENDED|REVOKED||OPS||2026-04-01T03:02:00.000000000Z`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTransitionRollsBackWithCaller(t *testing.T) {
	db := openDB(t)
	seedPspr(t, db, "PSPR-2")
	ctx := context.Background()
	boom := errors.New("side update failed")
	err := db.Write(ctx, func(tx *store.Tx) error {
		if _, err := Transition(ctx, tx, clock.NewManual(t0), Change{EntityType: "PSPR", EntityID: "PSPR-2",
			To: "SUSPENDED", EventType: "PsprSuspended"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if state, _ := psprState(t, db, "PSPR-2"); state != "ACTIVE" {
		t.Fatalf("state %s after rollback", state)
	}
	if h := history(t, db, "PSPR", "PSPR-2"); len(h) != 0 {
		t.Fatalf("log kept after rollback: %+v", h)
	}
}

func TestTransitionRefusals(t *testing.T) {
	db := openDB(t)
	seedPspr(t, db, "PSPR-3")
	ctx := context.Background()
	cases := []struct {
		name string
		c    Change
		code string
	}{
		{"missing entity", Change{EntityType: "PSPR", EntityID: "nope", To: "REVOKED", EventType: "PsprRevoked"}, "NOT_FOUND"},
		{"unknown type", Change{EntityType: "WIDGET", EntityID: "x", To: "A", EventType: "E"}, "INVALID_REQUEST"},
		{"no event", Change{EntityType: "PSPR", EntityID: "PSPR-3", To: "REVOKED"}, "MISSING_FIELD"},
		{"bad column", Change{EntityType: "PSPR", EntityID: "PSPR-3", To: "REVOKED", EventType: "E",
			Set: []Assign{{"revoked_at = 1; DROP TABLE x; --", 1}}}, "INVALID_REQUEST"},
		{"state column via Set", Change{EntityType: "PSPR", EntityID: "PSPR-3", To: "REVOKED", EventType: "E",
			Set: []Assign{{"capability_state", "ACTIVE"}}}, "INVALID_REQUEST"},
	}
	for _, c := range cases {
		err := db.Write(ctx, func(tx *store.Tx) error {
			_, err := Transition(ctx, tx, clock.NewManual(t0), c.c)
			return err
		})
		if domainerr.Code(err) != c.code {
			t.Errorf("%s: got %v, want %s", c.name, err, c.code)
		}
	}
	if state, _ := psprState(t, db, "PSPR-3"); state != "ACTIVE" {
		t.Fatalf("state changed to %s", state)
	}
}

func TestRegister(t *testing.T) {
	if err := Register(Entity{Type: "BANK_ACCOUNT", Table: "BankAccounts", IDColumn: "account_id", StateColumn: "status"}); err != nil {
		t.Fatal(err)
	}
	if e, ok := Lookup("BANK_ACCOUNT"); !ok || e.Table != "BankAccounts" {
		t.Fatal(e, ok)
	}
	if err := Register(Entity{Type: "BANK_ACCOUNT", Table: "Other", IDColumn: "id", StateColumn: "status"}); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("redefinition: %v", err)
	}
	if err := Register(Entity{Type: "X", Table: "T;", IDColumn: "id", StateColumn: "s"}); domainerr.Code(err) != "INVALID_REQUEST" {
		t.Fatalf("bad identifier: %v", err)
	}
}

// No code outside this package writes a registered status column: every
// "UPDATE <table> SET ... <status> =" string literal in the module's
// non-test Go files must be here.
func TestOnlyEntitystateWritesStatusColumns(t *testing.T) {
	root := moduleRoot
	self, _ := os.Getwd()
	var bad []string
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			if path == self {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Logf("skip unparsable %s: %v", path, err)
			return nil
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			bl, ok := n.(*ast.BasicLit)
			if !ok || bl.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(bl.Value)
			if err != nil {
				return true
			}
			if ent, ok := writesStatus(s); ok {
				rel, _ := filepath.Rel(root, fset.Position(bl.Pos()).String())
				bad = append(bad, fmt.Sprintf("%s writes %s status outside entitystate", rel, ent))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no files scanned")
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// writesStatus reports whether SQL text updates a registered status column.
func writesStatus(sqlText string) (string, bool) {
	mu.RLock()
	defer mu.RUnlock()
	for typ, e := range registry {
		re := regexp.MustCompile(`(?is)\bUPDATE\s+` + e.Table + `\s+SET\s`)
		for _, loc := range re.FindAllStringIndex(sqlText, -1) {
			rest := sqlText[loc[1]:]
			if w := regexp.MustCompile(`(?i)\bWHERE\b`).FindStringIndex(rest); w != nil {
				rest = rest[:w[0]]
			}
			if regexp.MustCompile(`(?i)(^|[\s,])` + e.StateColumn + `\s*=`).MatchString(rest) {
				return typ, true
			}
		}
	}
	return "", false
}

func TestWritesStatusDetector(t *testing.T) {
	cases := map[string]bool{
		"UPDATE Cases SET state = ? WHERE case_id = ?":                             true,
		"update cases set updated_at = ?, state='ESCALATED' where case_id = ?":     true,
		"UPDATE PsprRegistry SET capability_state = ? WHERE pspr_ref = ?":          true,
		"UPDATE Cases SET occurrence_count = occurrence_count + 1 WHERE state = ?": false,
		"UPDATE Cases SET last_notified_at = ? WHERE case_id = ?":                  false,
		"SELECT state FROM Cases":                                                  false,
	}
	for q, want := range cases {
		if _, got := writesStatus(q); got != want {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
	}
}

// moduleRoot is the repository root: tests run in their package folder,
// coordinator/<package>.
const moduleRoot = "../.."

// Log ids are version 7 UUIDs that increase within a process, also when
// the clock does not move (a manual clock) and when it goes back.
func TestLogIDsIncrease(t *testing.T) {
	at := time.Date(2026, 12, 1, 14, 30, 0, 0, time.UTC)
	prev := uuid.NewV7(at)
	seen := map[string]bool{prev: true}
	for i := 0; i < 10000; i++ {
		now := at
		switch {
		case i%1000 == 999:
			at = at.Add(time.Millisecond)
		case i == 5000:
			now = at.Add(-time.Hour)
		}
		id := uuid.NewV7(now)
		if id <= prev || seen[id] {
			t.Fatalf("id %d %s after %s", i, id, prev)
		}
		if len(id) != 36 || id[14] != '7' || !strings.ContainsRune("89ab", rune(id[19])) {
			t.Fatalf("not a version 7 UUID: %s", id)
		}
		seen[id] = true
		prev = id
	}
	if got, want := prev[:8], fmt.Sprintf("%08x", uint64(at.UnixMilli())>>16); got != want {
		t.Fatalf("time prefix %s, want %s", got, want)
	}
}
