package zengin

import (
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/formats/fixed"
)

// NameChars is the character set of the name fields (委託者名, 銀行名,
// 支店名, 受取人名, 預金者名). Banks differ on one character, ｰ (長音,
// 0xB0): many accept it, some refuse the whole file. It is a per-bank
// choice: the strict set is the default and a bank that accepts ｰ is
// configured with NamesLongVowel.
type NameChars uint8

// The name character sets.
const (
	// NamesStrict (the default) is half-width katakana ｦ ｱ–ﾝ ﾞ ﾟ, A–Z, 0–9,
	// space and ( ) - . /.
	NamesStrict NameChars = iota
	// NamesLongVowel is NamesStrict plus ｰ.
	NamesLongVowel
)

// String is the name ParseNameChars reads.
func (n NameChars) String() string {
	if n == NamesLongVowel {
		return "long-vowel"
	}
	return "strict"
}

// ParseNameChars reads "strict" (or "") and "long-vowel".
func ParseNameChars(s string) (NameChars, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "strict":
		return NamesStrict, nil
	case "long-vowel", "longvowel":
		return NamesLongVowel, nil
	}
	return 0, fmt.Errorf("zengin: name character set %q is not strict or long-vowel", s)
}

// Options are the per-bank choices of reading and writing.
type Options struct {
	// Names is the name character set (default NamesStrict).
	Names NameChars
	// MaxErrors caps the errors Validate keeps (0: DefaultMaxErrors).
	MaxErrors int
}

// longVowel is ｰ in the canonical form.
const longVowel = 0xB0

// ediExtra are the characters EDI情報 allows beyond the name set (as the
// published 総合振込 layouts list them): ｢ ｣ ¥ (0x5C, read as `\`) , ' +
// : ?.
const ediExtra = "\xA2\xA3\\,'+:?"

// textSets holds the refused-byte tables of the K fields: names and EDI,
// each strict and with ｰ. 1 = refused.
var textSets = func() (t [2][2][256]byte) {
	for names := range 2 {
		for edi := range 2 {
			for c := range 256 {
				ok := fixed.IsKana(byte(c))
				if c == longVowel {
					ok = names == int(NamesLongVowel)
				}
				if edi == 1 && strings.IndexByte(ediExtra, byte(c)) >= 0 {
					ok = true
				}
				if !ok {
					t[names][edi][c] = 1
				}
			}
		}
	}
	return t
}()

// textSet is the refused-byte table of K field name under the name set.
func textSet(names NameChars, field string) *[256]byte {
	edi := 0
	if field == "EDI" {
		edi = 1
	}
	return &textSets[names&1][edi]
}

// firstRefused is the index of the first byte refused by set, or -1.
func firstRefused(set *[256]byte, b []byte) int {
	for i, c := range b {
		if set[c] != 0 {
			return i
		}
	}
	return -1
}

// setHint explains a refused character of a K field.
func setHint(field string, ch byte) string {
	if field == "EDI" {
		return "(EDI情報: half-width katakana, A-Z, 0-9, space and ( ) - . / ｢ ｣ \\ , ' + : ? only)"
	}
	s := "(half-width katakana, A-Z, 0-9, space and ( ) - . / only)"
	if ch == longVowel {
		s += "; ｰ is accepted only for a bank configured with the long-vowel name set"
	}
	return s
}

// smallKana folds the half-width small kana to their full-size forms, as
// banks do when they convert names (ｷｭｳﾖ -> ｷﾕｳﾖ); 0 = unchanged.
var smallKana = func() (t [256]byte) {
	for small, big := range map[rune]rune{'ｧ': 'ｱ', 'ｨ': 'ｲ', 'ｩ': 'ｳ', 'ｪ': 'ｴ', 'ｫ': 'ｵ', 'ｬ': 'ﾔ', 'ｭ': 'ﾕ', 'ｮ': 'ﾖ', 'ｯ': 'ﾂ'} {
		t[0xA1+small-0xFF61] = byte(0xA1 + big - 0xFF61)
	}
	return t
}()

// foldSmall rewrites small kana in canonical bytes in place.
func foldSmall(b []byte) {
	for i, c := range b {
		if v := smallKana[c]; v != 0 {
			b[i] = v
		}
	}
}

// fullWidthFold maps the full-width small katakana that have no
// half-width form of their own (ヵ ヶ ヮ) to full size, before the
// half-width conversion; the others (ァ -> ｧ ...) are folded after it.
var fullWidthFold = strings.NewReplacer("ヵ", "カ", "ヶ", "ケ", "ヮ", "ワ")

// ediYen maps the yen signs to 0x5C (JIS X 0201 ¥, canonical `\`) for
// EDI情報.
var ediYen = strings.NewReplacer("¥", `\`, "￥", `\`)
