package test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/zcgw/zcgw"

// forbidden lists, per top-level package, the zcgw top-level packages it
// must not import (docs/ARCHITECTURE.md, "Dependencies point one way").
// gateway is the top layer: it mounts the jobs' /internal/cron triggers, so
// it may import jobs; jobs never imports gateway.
var forbidden = map[string][]string{
	"coordinator": {"gateway", "adapter", "outbox", "jobs", "formats", "cmd", "test"},
	"formats":     {"coordinator", "gateway", "adapter", "outbox", "jobs", "cmd", "test"},
	"fixtures":    {"coordinator", "gateway", "adapter", "outbox", "jobs", "formats", "cmd", "test"},
	"outbox":      {"gateway", "adapter", "jobs", "cmd", "test"},
	"adapter":     {"gateway", "jobs", "cmd", "test"},
	"gateway":     {"cmd", "test"},
	"jobs":        {"gateway", "cmd", "test"},
}

// TestDependenciesPointOneWay parses the imports of every Go file in the
// module (tests included) and fails on an import against the layering.
func TestDependenciesPointOneWay(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if strings.HasPrefix(name, ".") || name == "testdata" || name == "var" || name == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		top := strings.Split(filepath.ToSlash(rel), "/")[0]
		bans := forbidden[top]
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module+"/") {
				continue
			}
			target := strings.Split(strings.TrimPrefix(p, module+"/"), "/")[0]
			for _, b := range bans {
				if target == b {
					t.Errorf("%s imports %s: %s must not import %s", rel, p, top, b)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("checked only %d files; is the module root right?", checked)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s has no go.mod: %v", root, err)
	}
}
