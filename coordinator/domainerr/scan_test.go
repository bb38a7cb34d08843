package domainerr

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const importPath = "github.com/zcgw/zcgw/coordinator/domainerr"

// codeUse is one place a reason-code string literal reaches domainerr.
type codeUse struct {
	Pos  string
	Code string
}

// moduleRoot is the repository root: tests run in their package folder,
// coordinator/<package>.
const moduleRoot = "../.."

// scanPackageFiles parses one package's files and returns every reason
// code passed as a literal (or a package-level string constant) to
// domainerr.New/Newf/Wrap/Has or set as Code in a domainerr.Error literal.
// inDomainerr marks the domainerr package itself, where the calls are
// unqualified.
func scanPackageFiles(fset *token.FileSet, files []*ast.File, inDomainerr bool) []codeUse {
	consts := map[string]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := stringLit(vs.Values[i]); ok {
							consts[name.Name] = s
						}
					}
				}
			}
		}
	}
	value := func(e ast.Expr) (string, bool) {
		if s, ok := stringLit(e); ok {
			return s, true
		}
		if id, ok := e.(*ast.Ident); ok {
			s, ok := consts[id.Name]
			return s, ok
		}
		return "", false
	}
	var uses []codeUse
	for _, f := range files {
		alias := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
				alias = "domainerr"
				if imp.Name != nil {
					alias = imp.Name.Name
				}
			}
		}
		if alias == "" && !inDomainerr {
			continue
		}
		// target reports whether expr names domainerr's identifier sel.
		target := func(expr ast.Expr) string {
			switch x := expr.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && alias != "" && id.Name == alias {
					return x.Sel.Name
				}
			case *ast.Ident:
				if inDomainerr {
					return x.Name
				}
			}
			return ""
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				argIdx := -1
				switch target(x.Fun) {
				case "New", "Newf", "Wrap":
					argIdx = 0
				case "Has":
					argIdx = 1
				}
				if argIdx >= 0 && len(x.Args) > argIdx {
					if s, ok := value(x.Args[argIdx]); ok {
						uses = append(uses, codeUse{fset.Position(x.Args[argIdx].Pos()).String(), s})
					}
				}
			case *ast.CompositeLit:
				if target(x.Type) != "Error" {
					return true
				}
				for _, el := range x.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Code" {
						if s, ok := value(kv.Value); ok {
							uses = append(uses, codeUse{fset.Position(kv.Value.Pos()).String(), s})
						}
					}
				}
			}
			return true
		})
	}
	return uses
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}

// scanModule parses every Go file under root (skipping testdata, vendor
// and hidden folders) and returns the reason-code uses, grouped by folder
// so package-level constants resolve.
func scanModule(t *testing.T, root string) []codeUse {
	t.Helper()
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Getwd()
	var uses []codeUse
	for dir, paths := range byDir {
		fset := token.NewFileSet()
		var files []*ast.File
		for _, p := range paths {
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				// Another package's half-written file: the compiler reports it.
				t.Logf("skip unparsable %s: %v", p, err)
				continue
			}
			files = append(files, f)
		}
		uses = append(uses, scanPackageFiles(fset, files, dir == self)...)
	}
	return uses
}

// Spec 004: a reason code passed to a DomainError must be registered, or
// it silently becomes INTERNAL (500, never retried).
func TestSourceUsesOnlyRegisteredCodes(t *testing.T) {
	root := moduleRoot
	uses := scanModule(t, root)
	if len(uses) == 0 {
		t.Fatal("scan found no reason-code uses at all; the scanner is broken")
	}
	t.Logf("checked %d reason-code uses under %s", len(uses), root)
	var bad []string
	for _, u := range uses {
		if !Registered(u.Code) {
			rel := u.Pos
			if r, err := filepath.Rel(root, u.Pos); err == nil {
				rel = r
			}
			bad = append(bad, rel+": "+strconv.Quote(u.Code))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("unregistered reason code %s (register it in coordinator/domainerr/catalog.go from spec 004)", b)
	}
}

// The scanner itself catches every form it claims to.
func TestScannerFindsEveryForm(t *testing.T) {
	src := `package p

import de "github.com/zcgw/zcgw/coordinator/domainerr"

const codeConst = "BAD_CONST"

func f(err error) {
	_ = de.New("BAD_NEW", "m", nil)
	_ = de.Newf("BAD_NEWF", "m %d", 1)
	_ = de.Wrap("BAD_WRAP", err, "m", nil)
	_ = de.Has(err, "BAD_HAS")
	_ = &de.Error{Code: "BAD_LIT", Message: "m"}
	_ = de.Error{Code: codeConst}
	_ = de.New("TX_NOT_FOUND", "m", nil)
	code := "DYNAMIC"
	_ = de.New(code, "m", nil)
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	uses := scanPackageFiles(fset, []*ast.File{f}, false)
	var got []string
	for _, u := range uses {
		if !Registered(u.Code) {
			got = append(got, u.Code)
		}
	}
	want := []string{"BAD_NEW", "BAD_NEWF", "BAD_WRAP", "BAD_HAS", "BAD_LIT", "BAD_CONST"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("unregistered found %v, want %v", got, want)
	}
	if len(uses) != 7 {
		t.Fatalf("found %d uses, want 7 (6 bad + TX_NOT_FOUND)", len(uses))
	}
}
