package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `zcgw files validate` on files that are not valid Zengin files at all
// (empty, byte order marks, no header first, spaces, NUL, random bytes):
// invalid files, exit 1, and the first error names record 1 at byte
// offset 0; never exit 2 ("usage or I/O error").
func TestFilesValidateBadInputsExit1WithOffset(t *testing.T) {
	good, err := os.ReadFile("../../fixtures/zengin/transfer.txt")
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 500)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range random {
		random[i] = byte(r.IntN(256))
	}
	random[0] = 0x80 // not a record start, whatever the seed
	cases := map[string]struct {
		data []byte
		want string // in the first error line
	}{
		"empty":     {nil, "empty file"},
		"utf8 bom":  {append([]byte("\xEF\xBB\xBF"), good...), "UTF-8 byte order mark"},
		"utf16 bom": {append([]byte("\xFF\xFE"), good...), "UTF-16 byte order mark"},
		"no header": {good[122:], "data record outside a header…trailer group"},
		"spaces":    {bytes.Repeat([]byte(" "), 240), "データ区分 ' ' is not 1, 2, 8 or 9"},
		"nul":       {make([]byte, 240), "データ区分 0x00 is not 1, 2, 8 or 9"},
		"random":    {random, "record 1 line 1 offset 0 col 1"},
	}
	dir := t.TempDir()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"files", "validate", path}, &out, &errb)
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
			}
			lines := strings.Split(out.String(), "\n")
			if len(lines) < 3 || !strings.Contains(lines[0], ": INVALID: ") {
				t.Fatalf("output:\n%s", out.String())
			}
			first := strings.TrimSpace(lines[2])
			if !strings.HasPrefix(first, "record 1 line 1 offset 0") || !strings.Contains(first, tc.want) {
				t.Fatalf("first error %q, want record 1 offset 0 and %q", first, tc.want)
			}
		})
	}
}

// `--names long-vowel` validates a file with ｰ in a name; the default
// (strict) refuses it at the character's offset.
func TestFilesValidateNamesOption(t *testing.T) {
	good, err := os.ReadFile("../../fixtures/zengin/transfer.txt")
	if err != nil {
		t.Fatal(err)
	}
	b := bytes.Clone(good)
	b[122+51] = 0xB0 // ｰ in the first payee name (column 52)
	path := filepath.Join(t.TempDir(), "lv.txt")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"files", "validate", path}, &out, &out); code != 1 ||
		!strings.Contains(out.String(), "record 2 line 2 offset 173 col 52 [zengin.data.transfer Name (受取人名)]") {
		t.Fatalf("strict: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"files", "validate", "--names", "long-vowel", path}, &out, &out); code != 0 {
		t.Fatalf("long-vowel: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"files", "validate", "--names", "loose", path}, &out, &out); code != 2 {
		t.Fatalf("bad --names: exit %d\n%s", code, out.String())
	}
}
