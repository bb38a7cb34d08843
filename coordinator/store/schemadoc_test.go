package store

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

type indexDef struct {
	Table, Columns, Where string
	Unique                bool
}

var (
	sqlIndexRe = regexp.MustCompile(`(?is)CREATE\s+(UNIQUE\s+)?INDEX\s+IF\s+NOT\s+EXISTS\s+(\w+)\s+ON\s+(\w+)\s*\(([^)]*)\)\s*(?:WHERE\s+([^;]*))?;`)
	sqlTableRe = regexp.MustCompile(`(?i)CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(\w+)`)
	spaceRe    = regexp.MustCompile(`\s+`)
)

func norm(s string) string { return strings.TrimSpace(spaceRe.ReplaceAllString(s, " ")) }

func normCols(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = norm(p)
	}
	return strings.Join(parts, ", ")
}

// stripComments drops "-- ..." comments so commented-out DDL is ignored.
func stripComments(sql string) string {
	var b strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func schemaIndexes(sql string) map[string]indexDef {
	out := map[string]indexDef{}
	for _, m := range sqlIndexRe.FindAllStringSubmatch(stripComments(sql), -1) {
		out[m[2]] = indexDef{Table: m[3], Columns: normCols(m[4]), Where: norm(m[5]), Unique: m[1] != ""}
	}
	return out
}

func schemaTables(sql string) []string {
	var out []string
	for _, m := range sqlTableRe.FindAllStringSubmatch(stripComments(sql), -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// docTables parses the markdown table rows that follow the heading.
func docRows(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	i := strings.Index(doc, "\n## "+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/schema.md has no %q section", heading)
	}
	rest := doc[i+len(heading)+5:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	var rows [][]string
	for _, line := range strings.Split(rest, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		rows = append(rows, cells)
	}
	if len(rows) < 2 {
		t.Fatalf("section %q has no table rows", heading)
	}
	return rows[1:] // drop the header row
}

func readSchemaDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema.md"))
	if err != nil {
		t.Fatalf("read docs/schema.md: %v", err)
	}
	return string(b)
}

func TestSchemaDocMatchesSQL(t *testing.T) {
	doc := readSchemaDoc(t)
	sqlIdx := schemaIndexes(Schema)
	if len(sqlIdx) == 0 {
		t.Fatal("no indexes parsed from schema.sql")
	}
	docIdx := map[string]indexDef{}
	for _, r := range docRows(t, doc, "Index catalog") {
		if len(r) < 5 {
			t.Fatalf("catalog row %v has %d cells, want >= 5", r, len(r))
		}
		if _, dup := docIdx[r[0]]; dup {
			t.Errorf("index %s listed twice in docs/schema.md", r[0])
		}
		docIdx[r[0]] = indexDef{Table: r[1], Columns: normCols(r[2]), Unique: r[3] == "yes", Where: norm(r[4])}
	}
	for name, s := range sqlIdx {
		d, ok := docIdx[name]
		if !ok {
			t.Errorf("index %s is in schema.sql but not in docs/schema.md's catalog", name)
			continue
		}
		if d != s {
			t.Errorf("index %s differs:\n schema.sql: %+v\n docs:       %+v", name, s, d)
		}
	}
	for name := range docIdx {
		if _, ok := sqlIdx[name]; !ok {
			t.Errorf("index %s is in docs/schema.md but not in schema.sql", name)
		}
	}

	var docTables []string
	for _, r := range docRows(t, doc, "Tables") {
		docTables = append(docTables, r[0])
	}
	sort.Strings(docTables)
	if got, want := strings.Join(docTables, ","), strings.Join(schemaTables(Schema), ","); got != want {
		t.Errorf("tables differ:\n docs:       %s\n schema.sql: %s", got, want)
	}
}

// The drift check must itself catch drift.
func TestSchemaDocCheckDetectsDrift(t *testing.T) {
	base := schemaIndexes(Schema)
	mutated := schemaIndexes(strings.Replace(Schema, "ON Transactions(owner, state)", "ON Transactions(state, owner)", 1))
	if base["idx_tx_owner"] == mutated["idx_tx_owner"] {
		t.Fatal("column order change not seen by the parser")
	}
	commented := schemaIndexes(strings.Replace(Schema, "CREATE INDEX IF NOT EXISTS idx_tx_dns", "-- CREATE INDEX IF NOT EXISTS idx_tx_dns", 1))
	if _, ok := commented["idx_tx_dns"]; ok {
		t.Fatal("commented-out index still parsed")
	}
	if !base["idx_fl_chain_prev_hash"].Unique || base["idx_fl_chain_prev_hash"].Where != "txid IS NOT NULL" {
		t.Fatalf("partial unique index parsed as %+v", base["idx_fl_chain_prev_hash"])
	}
}
