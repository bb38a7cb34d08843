package store

import "strings"

// A schema script is common SQL (written in SQLite's form; pgDDL rewrites
// it for PostgreSQL) with, where the two backends need different DDL (a
// trigger: SQLite's body is SQL, PostgreSQL's is a PL/pgSQL function),
// sections that only one backend applies. ByBackend writes such a pair;
// Open keeps the section of its backend and drops the other's. The
// PostgreSQL section is applied as written (no rewriting).

const (
	sectionSQLite   = "\n-- zcgw:sqlite\n"
	sectionPostgres = "\n-- zcgw:postgres\n"
	sectionEnd      = "\n-- zcgw:end\n"
)

// ByBackend returns a schema fragment that SQLite applies as sqlite and
// PostgreSQL applies as postgres. Both must declare the same objects
// (test/storeconf compares tables, columns, indexes and triggers).
func ByBackend(sqlite, postgres string) string {
	return sectionSQLite + sqlite + sectionEnd + sectionPostgres + postgres + sectionEnd
}

// schemaFor splits schema into its parts for one backend: common parts
// (run through common) and that backend's sections (as written), in
// order; the other backend's sections are dropped.
func schemaFor(schema string, postgres bool, common func(string) string) string {
	keep, drop := sectionSQLite, sectionPostgres
	if postgres {
		keep, drop = sectionPostgres, sectionSQLite
	}
	var b strings.Builder
	for schema != "" {
		i := strings.Index(schema, keep)
		j := strings.Index(schema, drop)
		next := i
		if next < 0 || (j >= 0 && j < next) {
			next = j
		}
		if next < 0 {
			b.WriteString(common(schema))
			break
		}
		b.WriteString(common(schema[:next]))
		rest := schema[next:]
		end := strings.Index(rest, sectionEnd)
		if end < 0 { // unterminated: the whole rest is the section
			end = len(rest)
		}
		if next == i {
			b.WriteString("\n" + rest[len(keep):end] + "\n")
		}
		schema = strings.TrimPrefix(rest[end:], sectionEnd)
	}
	return b.String()
}
