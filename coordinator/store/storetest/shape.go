package storetest

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/store"
)

// Shape is what a schema declares, in a form both backends report the
// same way: table -> its columns, and the explicitly created indexes
// (table.index), all lower case (PostgreSQL folds unquoted names).
// Indexes that back a PRIMARY KEY or UNIQUE constraint are left out: the
// constraint is part of the table on both. PostgreSQL's rowid column (the
// store adds it to every table, standing for SQLite's implicit rowid) is
// left out too. Triggers are table.trigger followed by when and on what
// each fires ("adapterpostings.trg_x AFTER INSERT"); PostgreSQL's
// trigger functions are not listed apart (a trigger names its function,
// and creating the trigger fails when the function is missing).
type Shape struct {
	Columns  map[string][]string
	Indexes  []string
	Triggers []string
}

// ShapeOf reads db's shape.
func ShapeOf(t testing.TB, db *store.DB) Shape {
	t.Helper()
	ctx := context.Background()
	sh := Shape{Columns: map[string][]string{}}
	err := db.Read(ctx, func(tx *store.Tx) error {
		var colQ, idxQ, trgQ string
		if db.Postgres() {
			trgQ = `SELECT lower(event_object_table), lower(trigger_name), action_timing, event_manipulation
				FROM information_schema.triggers WHERE trigger_schema = current_schema()`
			colQ = `SELECT lower(table_name), lower(column_name) FROM information_schema.columns
				WHERE table_schema = current_schema() AND column_name <> 'rowid' ORDER BY 1, ordinal_position`
			idxQ = `SELECT lower(tablename), lower(indexname) FROM pg_indexes i WHERE schemaname = current_schema()
				AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`
		} else {
			colQ = `SELECT lower(m.name), lower(p.name) FROM sqlite_master m, pragma_table_info(m.name) p
				WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY 1, p.cid`
			idxQ = `SELECT lower(tbl_name), lower(name) FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`
			trgQ = `SELECT lower(tbl_name), lower(name), sql FROM sqlite_master WHERE type = 'trigger'`
		}
		rows, err := tx.QueryContext(ctx, colQ)
		if err != nil {
			return err
		}
		for rows.Next() {
			var tbl, col string
			if err := rows.Scan(&tbl, &col); err != nil {
				rows.Close()
				return err
			}
			sh.Columns[tbl] = append(sh.Columns[tbl], col)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if rows, err = tx.QueryContext(ctx, idxQ); err != nil {
			return err
		}
		for rows.Next() {
			var tbl, idx string
			if err := rows.Scan(&tbl, &idx); err != nil {
				rows.Close()
				return err
			}
			sh.Indexes = append(sh.Indexes, tbl+"."+idx)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if rows, err = tx.QueryContext(ctx, trgQ); err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if db.Postgres() {
				var tbl, name, timing, event string
				if err := rows.Scan(&tbl, &name, &timing, &event); err != nil {
					return err
				}
				sh.Triggers = append(sh.Triggers, tbl+"."+name+" "+timing+" "+event)
				continue
			}
			var tbl, name, ddl string
			if err := rows.Scan(&tbl, &name, &ddl); err != nil {
				return err
			}
			m := sqliteTriggerEvent.FindStringSubmatch(ddl)
			if m == nil {
				return fmt.Errorf("trigger %s: no timing and event in %q", name, ddl)
			}
			sh.Triggers = append(sh.Triggers, tbl+"."+name+" "+strings.ToUpper(m[1])+" "+strings.ToUpper(m[2]))
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatalf("read shape: %v", err)
	}
	slices.Sort(sh.Indexes)
	slices.Sort(sh.Triggers)
	return sh
}

// sqliteTriggerEvent finds a SQLite trigger's timing and event (one per
// trigger; PostgreSQL lists one row per event, and ours have one).
var sqliteTriggerEvent = regexp.MustCompile(`(?i)\b(BEFORE|AFTER|INSTEAD\s+OF)\s+(INSERT|UPDATE|DELETE)\b`)

// Diff lists how b differs from a, one line per table, column or index;
// empty when they declare the same.
func Diff(a, b Shape, aName, bName string) []string {
	var out []string
	for tbl, cols := range a.Columns {
		other, ok := b.Columns[tbl]
		if !ok {
			out = append(out, fmt.Sprintf("table %s: in %s, not in %s", tbl, aName, bName))
			continue
		}
		if !slices.Equal(cols, other) {
			out = append(out, fmt.Sprintf("table %s: columns %s in %s, %s in %s", tbl,
				strings.Join(cols, ","), aName, strings.Join(other, ","), bName))
		}
	}
	for tbl := range b.Columns {
		if _, ok := a.Columns[tbl]; !ok {
			out = append(out, fmt.Sprintf("table %s: in %s, not in %s", tbl, bName, aName))
		}
	}
	for _, l := range []struct {
		kind string
		a, b []string
	}{{"index", a.Indexes, b.Indexes}, {"trigger", a.Triggers, b.Triggers}} {
		for _, x := range l.a {
			if !slices.Contains(l.b, x) {
				out = append(out, fmt.Sprintf("%s %s: in %s, not in %s", l.kind, x, aName, bName))
			}
		}
		for _, x := range l.b {
			if !slices.Contains(l.a, x) {
				out = append(out, fmt.Sprintf("%s %s: in %s, not in %s", l.kind, x, bName, aName))
			}
		}
	}
	slices.Sort(out)
	return out
}
