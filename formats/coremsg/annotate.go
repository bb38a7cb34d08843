package coremsg

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/formats/charset"
	"github.com/zcgw/zcgw/formats/fixed"
)

// Annotate renders a valid message as annotated hex: for each field a
// comment line "# START-END NAME PICTURE LABEL = VALUE" (positions 1-based
// from the start of the message) followed by the field's bytes in hex.
// ParseHex reads the result back. This is the format of the golden files
// in fixtures/coremsg.
func Annotate(msg []byte, cs *charset.Charset) (string, error) {
	m, err := Decode(msg, cs)
	if err != nil {
		return "", err
	}
	ti, _ := Lookup(m.Body.MsgType())
	var b strings.Builder
	section := func(l *fixed.Layout, rec []byte, base int) error {
		canon := make([]byte, len(rec))
		if err := l.ToCanonical(canon, rec, cs, fixed.Pos{Offset: int64(base)}); err != nil {
			return err
		}
		fmt.Fprintf(&b, "# --- %s: %d bytes at offset %d\n", l.Name(), l.Length(), base)
		for _, f := range l.Fields() {
			name := f.Name
			if f.Type == fixed.Filler {
				name = "FILLER"
			}
			fmt.Fprintf(&b, "# %d-%d %s %s", base+f.Start, base+f.End(), name, f.Picture())
			if f.Label != "" {
				fmt.Fprintf(&b, " %s", f.Label)
			}
			if f.Type != fixed.Filler {
				fmt.Fprintf(&b, " = %q", f.Text(canon))
			}
			fmt.Fprintf(&b, "\n%s\n", hex.EncodeToString(f.Bytes(rec)))
		}
		return nil
	}
	if err := section(headerLayout, msg[:HeaderLen], 0); err != nil {
		return "", err
	}
	if err := section(ti.Layout, msg[HeaderLen:], HeaderLen); err != nil {
		return "", err
	}
	return b.String(), nil
}

// ParseHex reads annotated hex: lines starting with '#' and blank lines are
// ignored, white space inside a line is ignored, everything else must be
// hex digits in pairs. Errors name the 1-based line.
func ParseHex(text string) ([]byte, error) {
	var out []byte
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.Join(strings.Fields(line), "")
		b, err := hex.DecodeString(line)
		if err != nil {
			return nil, fmt.Errorf("coremsg: hex line %d: %w", i+1, err)
		}
		out = append(out, b...)
	}
	return out, nil
}
