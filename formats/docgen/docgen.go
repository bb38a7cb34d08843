package docgen

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/formats/fixed"
)

// The markers around the generated block of a document.
const (
	BeginMarker = "<!-- BEGIN GENERATED LAYOUTS: edit the Go layout declarations and run `go test ./formats/docgen -run TestDocs -update` -->"
	EndMarker   = "<!-- END GENERATED LAYOUTS -->"
)

// Table renders one layout: a heading, a line with its name and length,
// and one row per field.
func Table(l *fixed.Layout, title string) string {
	var b strings.Builder
	if title == "" {
		title = l.Name()
	}
	fmt.Fprintf(&b, "### %s\n\n", title)
	fmt.Fprintf(&b, "Layout `%s`, %d bytes.\n\n", l.Name(), l.Length())
	b.WriteString("| Pos | Len | Type | Field | Meaning |\n|---|---|---|---|---|\n")
	for _, f := range l.Fields() {
		pos := fmt.Sprint(f.Start)
		if f.Len > 1 {
			pos = fmt.Sprintf("%d–%d", f.Start, f.End())
		}
		meaning := escape(f.Label)
		if f.Const != "" {
			meaning += fmt.Sprintf(" (always `%s`)", f.Const)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", pos, f.Len, f.Type, f.Name, meaning)
	}
	return b.String()
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Block renders the generated block for several layouts, markers included.
// title may return "" to use the layout's name.
func Block(layouts []*fixed.Layout, title func(*fixed.Layout) string) string {
	var b strings.Builder
	b.WriteString(BeginMarker + "\n\n")
	b.WriteString("Type: `9` digits (right-justified, zero-filled), `X` printable single-byte text, `K` Zengin text " +
		"(half-width katakana ｦ ｰ–ﾟ, A–Z, 0–9, space, `( ) - . /`), `S9` signed zoned, `P` packed decimal, " +
		"`FILLER` spaces. Positions are 1-based and inclusive.\n\n")
	for i, l := range layouts {
		if i > 0 {
			b.WriteString("\n")
		}
		t := ""
		if title != nil {
			t = title(l)
		}
		b.WriteString(Table(l, t))
	}
	b.WriteString("\n" + EndMarker + "\n")
	return b.String()
}

// ErrNoMarkers is returned by Splice for a document without the markers.
var ErrNoMarkers = errors.New("docgen: document has no generated-block markers")

// Splice replaces the generated block of doc (markers included) with
// block.
func Splice(doc, block string) (string, error) {
	i := strings.Index(doc, BeginMarker)
	j := strings.Index(doc, EndMarker)
	if i < 0 || j < i {
		return "", ErrNoMarkers
	}
	end := j + len(EndMarker)
	if end < len(doc) && doc[end] == '\n' {
		end++
	}
	return doc[:i] + block + doc[end:], nil
}
