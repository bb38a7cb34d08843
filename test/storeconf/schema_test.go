package storeconf

import (
	"testing"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"github.com/zcgw/zcgw/jobs/dns"
	"github.com/zcgw/zcgw/jobs/eod"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/lsm"
	"github.com/zcgw/zcgw/jobs/overnight"
	"github.com/zcgw/zcgw/outbox/events/consume"
)

// schemas is every schema a component applies, by the database it lives in.
var schemas = []struct {
	name, ddl string
	// triggers is how many triggers the schema declares.
	triggers int
}{
	{"coordinator", store.Schema, 0},
	{"coordinator+jobs", store.Schema + dns.Schema + lsm.Schema + eod.Schema + overnight.Schema, 0},
	{"job_ledger", ledger.Schema, 0},
	{"adapter", adapter.Schema, 6}, // the shadow totals (adapter/shadow_totals.go)
	{"core", coresim.Schema, 0},
	{"ingress_nonces", signing.NonceSchema, 0},
	{"event_consumer", consume.Schema, 0},
}

// TestSchemasAgreeAcrossBackends: each schema, applied on SQLite and on
// PostgreSQL (rewritten by the store), declares the same tables, columns
// (in order), indexes and triggers (with when and on what each fires). A
// DDL line PostgreSQL cannot take fails here too.
func TestSchemasAgreeAcrossBackends(t *testing.T) {
	pg, ok := storetest.Postgres(t)
	if !ok {
		t.Skip("no PostgreSQL server: nothing to compare SQLite with")
	}
	for _, s := range schemas {
		t.Run(s.name, func(t *testing.T) {
			lite := storetest.ShapeOf(t, storetest.Open(t, storetest.SQLite, s.name, s.ddl))
			pgs := storetest.ShapeOf(t, storetest.Open(t, pg, s.name, s.ddl))
			if len(lite.Columns) == 0 {
				t.Fatal("the schema declared no table")
			}
			if len(lite.Triggers) != s.triggers {
				t.Errorf("SQLite has triggers %q, want %d", lite.Triggers, s.triggers)
			}
			for _, d := range storetest.Diff(lite, pgs, "sqlite", "postgres") {
				t.Error(d)
			}
		})
	}
}

// TestShapeDiffNamesTheDrift: the comparison itself notices a missing
// column, table, index and trigger (and a trigger firing on another event).
func TestShapeDiffNamesTheDrift(t *testing.T) {
	a := storetest.Shape{Columns: map[string][]string{"t": {"a", "b"}, "u": {"x"}}, Indexes: []string{"t.idx_t_a"},
		Triggers: []string{"t.trg_a AFTER INSERT", "t.trg_b AFTER DELETE"}}
	b := storetest.Shape{Columns: map[string][]string{"t": {"a"}}, Triggers: []string{"t.trg_b AFTER UPDATE"}}
	got := storetest.Diff(a, b, "sqlite", "postgres")
	want := []string{
		"index t.idx_t_a: in sqlite, not in postgres",
		"table t: columns a,b in sqlite, a in postgres",
		"table u: in sqlite, not in postgres",
		"trigger t.trg_a AFTER INSERT: in sqlite, not in postgres",
		"trigger t.trg_b AFTER DELETE: in sqlite, not in postgres",
		"trigger t.trg_b AFTER UPDATE: in postgres, not in sqlite",
	}
	if len(got) != len(want) {
		t.Fatalf("diff %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("diff %q, want %q", got, want)
		}
	}
}
