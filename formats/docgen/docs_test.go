package docgen

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/formats/corebalance"
	"github.com/zcgw/zcgw/formats/coremsg"
	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/overnight"
	"github.com/zcgw/zcgw/formats/zengin"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of docs/formats/*.md")

const docsDir = "../../docs/formats"

func coremsgTitle(l *fixed.Layout) string {
	for _, t := range coremsg.Types() {
		if t.Layout == l {
			dir := "request"
			if t.Reply {
				dir = "reply"
			}
			return fmt.Sprintf("%s %s (%s)", t.Operation, dir, t.Code)
		}
	}
	return "Common header"
}

// docs maps each document to the layouts it must describe.
var docs = map[string]struct {
	layouts []*fixed.Layout
	title   func(*fixed.Layout) string
}{
	"zengin.md":      {zengin.Layouts(), zengin.Title},
	"overnight.md":   {overnight.Layouts(), overnight.Title},
	"coremsg.md":     {coremsg.Layouts(), coremsgTitle},
	"corebalance.md": {corebalance.Layouts(), corebalance.Title},
}

// TestDocs fails when a document's generated tables differ from the
// layouts declared in code. Run with -update to rewrite them.
func TestDocs(t *testing.T) {
	for name, d := range docs {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(docsDir, name)
			old, err := os.ReadFile(path)
			if err != nil {
				if !*update || !os.IsNotExist(err) {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				old = []byte("# " + strings.TrimSuffix(name, ".md") + "\n\n" + BeginMarker + "\n" + EndMarker + "\n")
			}
			want, err := Splice(string(old), Block(d.layouts, d.title))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if want == string(old) {
				return
			}
			if *update {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Fatalf("%s is out of date with the layouts in code; run: go test ./formats/docgen -run TestDocs -update", path)
		})
	}
}

func TestTable(t *testing.T) {
	l := fixed.MustLayout("demo", 12,
		fixed.Field{Name: "Type", Label: "種別", Start: 1, Len: 1, Type: fixed.X, Const: "D"},
		fixed.Field{Name: "Amount", Label: "金額 | yen", Start: 2, Len: 10, Type: fixed.N},
		fixed.Field{Name: "Pad", Label: "空白", Start: 12, Len: 1, Type: fixed.Filler},
	)
	want := "### Demo\n\nLayout `demo`, 12 bytes.\n\n| Pos | Len | Type | Field | Meaning |\n|---|---|---|---|---|\n" +
		"| 1 | 1 | X | Type | 種別 (always `D`) |\n| 2–11 | 10 | 9 | Amount | 金額 \\| yen |\n| 12 | 1 | FILLER | Pad | 空白 |\n"
	if got := Table(l, "Demo"); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSpliceDetectsDrift(t *testing.T) {
	doc := "# x\n\nprose\n\n" + BeginMarker + "\nold table\n" + EndMarker + "\n\nmore prose\n"
	got, err := Splice(doc, "NEW\n")
	if err != nil || got != "# x\n\nprose\n\nNEW\n\nmore prose\n" {
		t.Fatalf("Splice = %q, %v", got, err)
	}
	if _, err := Splice("no markers", "x"); err != ErrNoMarkers {
		t.Fatalf("err = %v", err)
	}
}
