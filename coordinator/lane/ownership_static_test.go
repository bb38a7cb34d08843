package lane

import (
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
)

// The single-owner rule's static guard (spec 000 §4 lane_invariants and
// §5.4 Phase 3 (b)): outside this package no code — tests included —
// inserts into Transactions or writes Transactions.state, and only the two
// DNS bulk handoff sites write Transactions.owner.

const dynamicPart = " <DYNAMIC> "

var (
	quoteRe     = regexp.MustCompile("[\"`\\[\\]]")
	spacesRe    = regexp.MustCompile(`\s+`)
	txInsertRe  = regexp.MustCompile(`\b(?:INSERT|REPLACE)(?:\s+OR\s+\w+)?\s+INTO\s+(?:MAIN\.)?TRANSACTIONS\b`)
	txUpdateRe  = regexp.MustCompile(`\bUPDATE\s+(?:OR\s+\w+\s+)?(?:MAIN\.)?TRANSACTIONS(?:\s+AS\s+\w+|\s+\w+)?\s+SET\b(.*?)(?:\bWHERE\b|\bFROM\b|\bRETURNING\b|$)`)
	setStateRe  = regexp.MustCompile(`(?:^|[\s,(.])STATE\s*=`)
	setOwnerRe  = regexp.MustCompile(`(?:^|[\s,(.])OWNER\s*=`)
	dynamicSetS = strings.TrimSpace(dynamicPart)
)

type sqlViolation struct {
	pos  string
	what string
}

// checkSQL reports what a SQL text does to Transactions that only this
// package may do. ownerAllowed whitelists owner writes (DNS sites).
func checkSQL(sql string, ownerAllowed bool) []string {
	s := strings.ToUpper(spacesRe.ReplaceAllString(quoteRe.ReplaceAllString(sql, ""), " "))
	var out []string
	if txInsertRe.MatchString(s) {
		out = append(out, "inserts into Transactions (use lane.InsertTxWithLog)")
	}
	for _, m := range txUpdateRe.FindAllStringSubmatch(s, -1) {
		set := m[1]
		if strings.Contains(set, strings.ToUpper(dynamicSetS)) {
			out = append(out, "updates Transactions with a SET clause built at run time (cannot prove it leaves state/owner alone)")
			continue
		}
		if setStateRe.MatchString(set) {
			out = append(out, "writes Transactions.state (use lane.TransitionWithLog / CancelInFlightTx / SuspendTx)")
		}
		if setOwnerRe.MatchString(set) && !ownerAllowed {
			out = append(out, "writes Transactions.owner (use lane.TransferOwnership)")
		}
	}
	return out
}

// stringExprs returns the SQL-ish strings of a Go file: every string
// literal, with "+" concatenations joined (non-literal operands become a
// DYNAMIC marker).
func stringExprs(fset *token.FileSet, f *ast.File) map[token.Pos]string {
	out := map[token.Pos]string{}
	inConcat := map[ast.Node]bool{}
	var flatten func(e ast.Expr) string
	flatten = func(e ast.Expr) string {
		switch x := e.(type) {
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				if s, err := strconv.Unquote(x.Value); err == nil {
					return s
				}
			}
			return dynamicPart
		case *ast.ParenExpr:
			return flatten(x.X)
		case *ast.BinaryExpr:
			if x.Op == token.ADD {
				inConcat[x.X], inConcat[x.Y] = true, true
				return flatten(x.X) + flatten(x.Y)
			}
		}
		return dynamicPart
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if inConcat[n] {
			return true
		}
		switch x := n.(type) {
		case *ast.BinaryExpr:
			if x.Op == token.ADD {
				out[x.Pos()] = flatten(x)
			}
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				if s, err := strconv.Unquote(x.Value); err == nil {
					out[x.Pos()] = s
				}
			}
		}
		return true
	})
	return out
}

// moduleRoot is the repository root: tests run in their package folder,
// coordinator/<package>.
const moduleRoot = "../.."

func TestOnlyLaneWritesStateAndOwner(t *testing.T) {
	root := moduleRoot
	var violations []sqlViolation
	scanned := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor" || d.Name() == "var") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(rel, "coordinator/lane/") || rel == "coordinator/store/schema.sql" {
			return nil
		}
		// The chaos audit's own test corrupts a stopped node's files on
		// purpose, to prove the audit names each kind of damage.
		if rel == "test/chaos/tamper_test.go" {
			return nil
		}
		ownerAllowed := rel == DNSKickSite || rel == DNSSettleSite
		switch {
		case strings.HasSuffix(rel, ".go"):
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return nil // a half-written file of another helper; the compiler will complain
			}
			scanned++
			for pos, s := range stringExprs(fset, f) {
				for _, what := range checkSQL(s, ownerAllowed) {
					violations = append(violations, sqlViolation{fset.Position(pos).String(), what})
				}
			}
		case strings.HasSuffix(rel, ".sql"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			scanned++
			for _, what := range checkSQL(string(b), ownerAllowed) {
				violations = append(violations, sqlViolation{rel, what})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 5 {
		t.Fatalf("scanned only %d files under %s", scanned, root)
	}
	for _, v := range violations {
		t.Errorf("%s: %s", v.pos, v.what)
	}
}

// The scanner must itself catch what it is there to catch.
func TestOwnershipScannerCatchesViolations(t *testing.T) {
	src := `package x
const a = "UPDATE Transactions SET state = 'SETTLED' WHERE txid = ?"
const b = "update transactions set case_id = ?, owner='ZC' where txid=?"
const c = "INSERT OR IGNORE INTO Transactions (txid) VALUES (?)"
var d = "UPDATE Transactions SET " + col + " = ? WHERE txid = ?"
var e = "UPDATE " + "Transactions SET reason_code = ?, " + "state = ?"
const ok1 = "UPDATE Transactions SET case_id = ? WHERE txid = ? AND state = 'SUSPENDED'"
const ok2 = "UPDATE GtidTransactions SET state = ? WHERE gtid = ?"
const ok3 = "SELECT state, owner FROM Transactions WHERE owner = 'ZC'"
const ok4 = "INSERT INTO CaseRelatedTransactions (case_id) VALUES (?)"
const ok5 = "UPDATE Transactions SET external_settlement_status = ?, edi_ref = ? WHERE txid = ?"
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{}
	for _, s := range stringExprs(fset, f) {
		if v := checkSQL(s, false); len(v) > 0 {
			found[s] = v
		}
	}
	if len(found) != 5 {
		for s, v := range found {
			t.Logf("%q: %v", s, v)
		}
		t.Fatalf("found %d violating strings, want 5 (a, b, c, d, e)", len(found))
	}
	if v := checkSQL("UPDATE Transactions SET owner = 'CYCLE:1', dns_cycle_id = ? WHERE state = 'DECIDED_TO_SETTLE'", true); len(v) != 0 {
		t.Fatalf("DNS site owner write flagged: %v", v)
	}
	if v := checkSQL("UPDATE Transactions SET owner = 'ZC', state = 'SETTLED'", true); len(v) != 1 {
		t.Fatalf("DNS site state write not flagged: %v", v)
	}
}
