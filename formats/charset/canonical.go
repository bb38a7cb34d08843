package charset

import (
	"fmt"
	"unicode/utf8"
)

// IsCanonical reports whether b belongs to the canonical single-byte form:
// printable ASCII 0x20–0x7E or half-width katakana 0xA1–0xDF.
func IsCanonical(b byte) bool { return canonTab[b] }

var canonTab = func() (t [256]bool) {
	for b := 0x20; b <= 0x7E; b++ {
		t[b] = true
	}
	for b := 0xA1; b <= 0xDF; b++ {
		t[b] = true
	}
	return t
}()

// CanonicalRune is the Unicode character of a canonical byte (half-width
// katakana 0xA1–0xDF are U+FF61–U+FF9F), or -1 for a non-canonical byte.
func CanonicalRune(b byte) rune {
	switch {
	case b >= 0x20 && b <= 0x7E:
		return rune(b)
	case b >= 0xA1 && b <= 0xDF:
		return 0xFF61 + rune(b-0xA1)
	}
	return -1
}

func canonicalByte(r rune) (byte, bool) {
	switch {
	case r >= 0x20 && r <= 0x7E:
		return byte(r), true
	case r >= 0xFF61 && r <= 0xFF9F:
		return byte(0xA1 + (r - 0xFF61)), true
	}
	return 0, false
}

// CanonicalByte is the canonical byte of r (exact, no width conversion).
func CanonicalByte(r rune) (byte, bool) { return canonicalByte(r) }

// RuneError reports a character that cannot be represented. Pos is the
// 1-based character (rune) position in the input string.
type RuneError struct {
	Rune   rune
	Pos    int
	Reason string
}

func (e *RuneError) Error() string {
	return fmt.Sprintf("character %q (U+%04X) at position %d: %s", e.Rune, e.Rune, e.Pos, e.Reason)
}

// AppendUTF8 appends the UTF-8 form of canonical bytes to dst. A
// non-canonical byte gives a *ByteError with its offset in canon.
func AppendUTF8(dst, canon []byte) ([]byte, error) {
	for i, b := range canon {
		switch {
		case b >= 0x20 && b <= 0x7E:
			dst = append(dst, b)
		case b >= 0xA1 && b <= 0xDF:
			dst = utf8.AppendRune(dst, 0xFF61+rune(b-0xA1))
		default:
			return dst, &ByteError{Charset: "canonical", Offset: i, Byte: b, ToCanonical: true}
		}
	}
	return dst, nil
}

// CanonicalString converts canonical bytes to a UTF-8 string.
func CanonicalString(canon []byte) (string, error) {
	ascii := true
	for _, b := range canon {
		if b < 0x20 || b > 0x7E {
			ascii = false
			break
		}
	}
	if ascii {
		return string(canon), nil
	}
	out, err := AppendUTF8(make([]byte, 0, len(canon)*3), canon)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// AppendCanonical appends the canonical bytes of s to dst, exactly: only
// printable ASCII and half-width katakana are accepted (no width
// conversion). Anything else gives a *RuneError.
func AppendCanonical(dst []byte, s string) ([]byte, error) {
	pos := 0
	for _, r := range s {
		pos++
		b, ok := canonicalByte(r)
		if !ok {
			return dst, &RuneError{Rune: r, Pos: pos, Reason: "not a printable JIS X 0201 (single-byte) character"}
		}
		dst = append(dst, b)
	}
	return dst, nil
}

// HalfWidth returns the canonical byte(s) for r, converting full-width
// forms when a unique half-width form exists: full-width ASCII (Ａ -> A),
// the ideographic space, full-width katakana (ア -> ｱ, ガ -> ｶﾞ, パ -> ﾊﾟ,
// ヴ -> ｳﾞ) and the katakana punctuation 。「」、・ー゛゜. Canonical runes map
// to themselves. n is 0 when there is no such form (kanji, hiragana, ヰ ヱ
// ヵ ヶ ヮ, ¥, ...).
func HalfWidth(r rune) (b [2]byte, n int) {
	if c, ok := canonicalByte(r); ok {
		return [2]byte{c}, 1
	}
	switch {
	case r >= 0xFF01 && r <= 0xFF5E: // full-width ASCII
		return [2]byte{byte(r - 0xFEE0)}, 1
	case r == 0x3000:
		return [2]byte{' '}, 1
	case r >= 0x30A1 && r <= 0x30FC:
		s := kataHalf[r-0x30A1]
		if s == "" {
			return b, 0
		}
		for _, h := range s {
			c, _ := canonicalByte(h)
			b[n] = c
			n++
		}
		return b, n
	}
	switch r {
	case 0x3002: // 。
		return [2]byte{0xA1}, 1
	case 0x300C: // 「
		return [2]byte{0xA2}, 1
	case 0x300D: // 」
		return [2]byte{0xA3}, 1
	case 0x3001: // 、
		return [2]byte{0xA4}, 1
	case 0x309B: // ゛
		return [2]byte{0xDE}, 1
	case 0x309C: // ゜
		return [2]byte{0xDF}, 1
	}
	return b, 0
}

// AppendHalfWidth appends the canonical form of s to dst, converting
// full-width characters with HalfWidth. A character with no unique
// half-width form gives a *RuneError naming it and its position.
func AppendHalfWidth(dst []byte, s string) ([]byte, error) {
	pos := 0
	for i, r := range s {
		pos++
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return dst, &RuneError{Rune: r, Pos: pos, Reason: "invalid UTF-8"}
			}
		}
		b, n := HalfWidth(r)
		if n == 0 {
			return dst, &RuneError{Rune: r, Pos: pos, Reason: "no half-width (JIS X 0201) form"}
		}
		dst = append(dst, b[:n]...)
	}
	return dst, nil
}

// kataHalf maps full-width katakana U+30A1..U+30FC to half-width strings;
// "" where JIS X 0201 has no unique form.
var kataHalf = [0x30FC - 0x30A1 + 1]string{
	"ｧ", "ｱ", "ｨ", "ｲ", "ｩ", "ｳ", "ｪ", "ｴ", "ｫ", "ｵ", // ァ..オ
	"ｶ", "ｶﾞ", "ｷ", "ｷﾞ", "ｸ", "ｸﾞ", "ｹ", "ｹﾞ", "ｺ", "ｺﾞ", // カ..ゴ
	"ｻ", "ｻﾞ", "ｼ", "ｼﾞ", "ｽ", "ｽﾞ", "ｾ", "ｾﾞ", "ｿ", "ｿﾞ", // サ..ゾ
	"ﾀ", "ﾀﾞ", "ﾁ", "ﾁﾞ", "ｯ", "ﾂ", "ﾂﾞ", "ﾃ", "ﾃﾞ", "ﾄ", "ﾄﾞ", // タ..ド
	"ﾅ", "ﾆ", "ﾇ", "ﾈ", "ﾉ", // ナ..ノ
	"ﾊ", "ﾊﾞ", "ﾊﾟ", "ﾋ", "ﾋﾞ", "ﾋﾟ", "ﾌ", "ﾌﾞ", "ﾌﾟ", "ﾍ", "ﾍﾞ", "ﾍﾟ", "ﾎ", "ﾎﾞ", "ﾎﾟ", // ハ..ポ
	"ﾏ", "ﾐ", "ﾑ", "ﾒ", "ﾓ", // マ..モ
	"ｬ", "ﾔ", "ｭ", "ﾕ", "ｮ", "ﾖ", // ャ..ヨ
	"ﾗ", "ﾘ", "ﾙ", "ﾚ", "ﾛ", // ラ..ロ
	"", "ﾜ", "", "", "ｦ", "ﾝ", "ｳﾞ", "", "", "ﾜﾞ", "", "", "ｦﾞ", "･", "ｰ", // ヮ..ー
}
