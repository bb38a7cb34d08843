package coremsg

import (
	"bufio"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/formats/charset"
)

// The EBCDIC golden files are checked byte by byte against the table iconv
// produced (fixtures/ebcdic/decode-IBM930.txt), independently of our own
// CCSID 290 table: every text byte must decode, under iconv, to the same
// character as the canonical encoding of the sample; packed bytes must be
// identical.
func TestGoldenEBCDICMatchesIconv(t *testing.T) {
	f, err := os.Open("../../fixtures/ebcdic/decode-IBM930.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var iconv [256]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 2 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		b, _ := hex.DecodeString(fs[0])
		if u, err := hex.DecodeString(fs[1]); err == nil && len(b) == 1 {
			iconv[b[0]] = string(u)
		}
	}
	checked := 0
	for _, g := range goldens() {
		if g.cs != charset.EBCDIC290 {
			continue
		}
		text, err := os.ReadFile(goldenDir + "/" + g.file)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := ParseHex(string(text))
		if err != nil {
			t.Fatal(err)
		}
		canon, err := Encode(&g.msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		ti, _ := Lookup(g.msg.Body.MsgType())
		packed := map[int]bool{}
		for _, s := range ti.Layout.PackedSpans() {
			for i := 0; i < s.Len; i++ {
				packed[HeaderLen+s.Off+i] = true
			}
		}
		if len(raw) != len(canon) {
			t.Fatalf("%s: %d bytes, canonical %d", g.file, len(raw), len(canon))
		}
		for i := range raw {
			if packed[i] {
				if raw[i] != canon[i] {
					t.Errorf("%s offset %d: packed byte %02X, want %02X", g.file, i, raw[i], canon[i])
				}
				continue
			}
			if want := string(charset.CanonicalRune(canon[i])); iconv[raw[i]] != want {
				t.Errorf("%s offset %d: iconv reads %02X as %q, want %q", g.file, i, raw[i], iconv[raw[i]], want)
			}
			checked++
		}
	}
	if checked < 2000 {
		t.Fatalf("only %d bytes checked", checked)
	}
}
