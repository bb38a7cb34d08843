package test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/zclog"
)

// logMethods are the *slog.Logger methods whose string arguments are
// attribute keys (and the message), and slogAttrs the slog attribute
// constructors whose first argument is a key.
var (
	logMethods = map[string]bool{"Info": true, "Warn": true, "Error": true, "Debug": true, "InfoContext": true,
		"WarnContext": true, "ErrorContext": true, "DebugContext": true, "Log": true, "With": true}
	slogAttrs = map[string]bool{"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
		"Bool": true, "Time": true, "Duration": true, "Any": true, "Group": true}
	// personalKey looks like a customer's account number, balance or name.
	personalKey = regexp.MustCompile(`(?i)account|balance|holder_?name|kana|(payer|payee|customer|target)_?name`)
	// notPersonal are the keys that look personal and are not: the salted
	// hash the spec puts on the wire instead of the account number.
	notPersonal = map[string]bool{"account_hash": true, "payer_account_hash": true, "payee_account_hash": true}
	logKey      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
)

// TestLoggedPersonalKeysAreRedacted scans every log call site of the
// module (slog methods and slog attribute constructors) and fails on an
// attribute key that looks like a core account number, a balance or a
// customer name but that zclog does not redact (zclog.IsPIIKey): such a
// call site would write the value in clear. Name the key so the list
// covers it (e.g. core_account, balance_after), or extend the list.
func TestLoggedPersonalKeysAreRedacted(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	keys := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			args := call.Args
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "slog" {
				if !slogAttrs[sel.Sel.Name] || len(args) == 0 {
					return true
				}
				args = args[:1]
			} else if !logMethods[sel.Sel.Name] {
				return true
			}
			for _, a := range args {
				lit, ok := a.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				k, err := strconv.Unquote(lit.Value)
				if err != nil || !logKey.MatchString(k) {
					continue
				}
				keys++
				if personalKey.MatchString(k) && !notPersonal[strings.ToLower(k)] && !zclog.IsPIIKey(k) {
					t.Errorf("%s: log key %q looks like an account number, balance or name but zclog does not redact it",
						fset.Position(lit.Pos()), k)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if keys < 200 {
		t.Fatalf("only %d log keys found: the scan is not reading the call sites", keys)
	}
}
