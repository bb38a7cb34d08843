package charset

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
)

// Span is a byte range of a record that transcoding copies unchanged,
// typically a packed-decimal (COMP-3) field. Off is 0-based.
type Span struct {
	Off, Len int
}

// Charset is one supported single-byte record encoding. Values are
// immutable and safe for concurrent use; use the package variables.
type Charset struct {
	name   string
	ccsid  int
	ebcdic bool
	// toCanon maps an encoded byte to its canonical byte; 0 means the byte
	// has no canonical form (0x00 is never canonical).
	toCanon [256]byte
	// unmapped is 1 where toCanon is 0.
	unmapped [256]byte
	// fromCanon maps a canonical byte to its encoded byte; valid only where
	// fromOK is true.
	fromCanon [256]byte
	fromOK    [256]bool
	// runes maps an encoded byte to Unicode for DecodeString; -1 = unmapped.
	// Unused when enc is set (Shift_JIS is multi-byte).
	runes    [256]rune
	fromRune map[rune]byte
	enc      encoding.Encoding
}

// The supported charsets.
var (
	// ShiftJIS is Shift_JIS (コード区分 0 in Zengin files). Its single-byte
	// half is the canonical form itself, so record transcoding only
	// validates. String conversions go through golang.org/x/text.
	ShiftJIS = newShiftJIS()
	// CP037 is IBM EBCDIC code page 037 (US/Canada), from golang.org/x/text.
	CP037 = newCharmap("IBM037", 37, charmap.CodePage037)
	// CP1047 is IBM EBCDIC code page 1047 (Latin-1 open systems), from
	// golang.org/x/text.
	CP1047 = newCharmap("IBM1047", 1047, charmap.CodePage1047)
	// EBCDIC290 is Japanese EBCDIC katakana, CCSID 290 as the single-byte
	// half of CCSID 930 (Zengin コード区分 1), from this package's table.
	EBCDIC290 = newTable("IBM290", 290, &ibm290)
)

// All lists the supported charsets.
func All() []*Charset { return []*Charset{ShiftJIS, CP037, CP1047, EBCDIC290} }

// ByName finds a charset by a common name, case-insensitively:
// "shift_jis"/"sjis", "cp037"/"ibm037"/"037", "cp1047"/"ibm1047"/"1047",
// "ibm290"/"cp290"/"290"/"ibm930"/"930"/"ebcdic290".
func ByName(name string) (*Charset, bool) {
	switch strings.ToLower(strings.ReplaceAll(name, "-", "")) {
	case "shift_jis", "shiftjis", "sjis", "cp932", "ms932":
		return ShiftJIS, true
	case "cp037", "ibm037", "037", "37", "ebcdic037":
		return CP037, true
	case "cp1047", "ibm1047", "1047", "ebcdic1047":
		return CP1047, true
	case "ibm290", "cp290", "290", "ibm930", "cp930", "930", "ebcdic290":
		return EBCDIC290, true
	}
	return nil, false
}

// Name is the charset's IANA/IBM style name, e.g. "IBM290".
func (c *Charset) Name() string { return c.name }

// String returns Name.
func (c *Charset) String() string { return c.name }

// CCSID is the IBM coded character set id (932 for Shift_JIS).
func (c *Charset) CCSID() int { return c.ccsid }

// IsEBCDIC reports whether the charset is an EBCDIC code page.
func (c *Charset) IsEBCDIC() bool { return c.ebcdic }

// Space is the encoded byte for a space (0x20 or 0x40).
func (c *Charset) Space() byte { return c.fromCanon[' '] }

// ToCanonicalByte maps one encoded byte; ok is false when it has no
// canonical form.
func (c *Charset) ToCanonicalByte(b byte) (canon byte, ok bool) {
	v := c.toCanon[b]
	return v, v != 0
}

// FromCanonicalByte maps one canonical byte to this charset.
func (c *Charset) FromCanonicalByte(b byte) (enc byte, ok bool) {
	return c.fromCanon[b], c.fromOK[b]
}

// ErrShortBuffer is returned when dst is shorter than src.
var ErrShortBuffer = errors.New("charset: destination shorter than source")

// ByteError reports a byte that has no mapping. Offset is 0-based within
// the slice that was converted.
type ByteError struct {
	Charset string
	Offset  int
	Byte    byte
	// ToCanonical is true when decoding into the canonical form, false when
	// encoding out of it.
	ToCanonical bool
}

func (e *ByteError) Error() string {
	if e.ToCanonical {
		return fmt.Sprintf("charset %s: byte 0x%02X at offset %d has no canonical (JIS X 0201) form", e.Charset, e.Byte, e.Offset)
	}
	return fmt.Sprintf("charset %s: canonical byte 0x%02X at offset %d cannot be encoded", e.Charset, e.Byte, e.Offset)
}

// ToCanonical transcodes src from c into dst (len(dst) >= len(src); dst may
// be src for in-place conversion). Bytes inside skip spans are copied
// unchanged. It stops at the first unmappable byte with a *ByteError. It
// does not allocate.
func (c *Charset) ToCanonical(dst, src []byte, skip []Span) error {
	if len(dst) < len(src) {
		return ErrShortBuffer
	}
	pos := 0
	for _, s := range skip {
		lo, hi := clip(s, len(src))
		if lo < pos {
			continue
		}
		if err := c.toCanonRange(dst, src, pos, lo); err != nil {
			return err
		}
		copy(dst[lo:hi], src[lo:hi])
		pos = hi
	}
	return c.toCanonRange(dst, src, pos, len(src))
}

func (c *Charset) toCanonRange(dst, src []byte, lo, hi int) error {
	t := &c.toCanon
	s := src[lo:hi]
	d := dst[lo:hi]
	d = d[:len(s)]
	// Branch-free main loop: unmapped bytes raise a flag from a second
	// table; the exact offset is looked for only when the flag is set.
	bad := &c.unmapped
	var flag byte
	i := 0
	for ; i+4 <= len(s); i += 4 {
		b0, b1, b2, b3 := s[i], s[i+1], s[i+2], s[i+3]
		d[i], d[i+1], d[i+2], d[i+3] = t[b0], t[b1], t[b2], t[b3]
		flag |= bad[b0] | bad[b1] | bad[b2] | bad[b3]
	}
	for ; i < len(s); i++ {
		d[i] = t[s[i]]
		flag |= bad[s[i]]
	}
	if flag == 0 {
		return nil
	}
	for i, v := range d {
		if v == 0 {
			return &ByteError{Charset: c.name, Offset: lo + i, Byte: s[i], ToCanonical: true}
		}
	}
	return nil
}

// FromCanonical transcodes canonical src into c (len(dst) >= len(src); dst
// may be src). Bytes inside skip spans are copied unchanged. A byte outside
// the canonical form, or one c cannot encode, gives a *ByteError.
func (c *Charset) FromCanonical(dst, src []byte, skip []Span) error {
	if len(dst) < len(src) {
		return ErrShortBuffer
	}
	pos := 0
	for _, s := range skip {
		lo, hi := clip(s, len(src))
		if lo < pos {
			continue
		}
		if err := c.fromCanonRange(dst, src, pos, lo); err != nil {
			return err
		}
		copy(dst[lo:hi], src[lo:hi])
		pos = hi
	}
	return c.fromCanonRange(dst, src, pos, len(src))
}

func (c *Charset) fromCanonRange(dst, src []byte, lo, hi int) error {
	s := src[lo:hi]
	d := dst[lo:hi]
	for i, b := range s {
		if !c.fromOK[b] {
			return &ByteError{Charset: c.name, Offset: lo + i, Byte: b}
		}
		d[i] = c.fromCanon[b]
	}
	return nil
}

func clip(s Span, n int) (lo, hi int) {
	lo, hi = s.Off, s.Off+s.Len
	if lo < 0 {
		lo = 0
	}
	if hi > n {
		hi = n
	}
	if lo > n {
		lo = n
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// DecodeString converts encoded bytes to UTF-8. Every byte must have a
// Unicode mapping (for EBCDIC this includes ¥ £ ¢ ¬ ‾, which have no
// canonical form); controls are refused with a *ByteError.
func (c *Charset) DecodeString(b []byte) (string, error) {
	if c.enc != nil {
		for i, x := range b {
			if x < 0x20 || x == 0x7F {
				return "", &ByteError{Charset: c.name, Offset: i, Byte: x, ToCanonical: true}
			}
		}
		out, err := c.enc.NewDecoder().Bytes(b)
		if err != nil {
			return "", fmt.Errorf("charset %s: %w", c.name, err)
		}
		if i := strings.IndexRune(string(out), '\uFFFD'); i >= 0 {
			return "", fmt.Errorf("charset %s: invalid byte sequence (replacement character at output offset %d)", c.name, i)
		}
		return string(out), nil
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for i, x := range b {
		r := c.runes[x]
		if r < 0 {
			return "", &ByteError{Charset: c.name, Offset: i, Byte: x, ToCanonical: true}
		}
		sb.WriteRune(r)
	}
	return sb.String(), nil
}

// EncodeString converts UTF-8 to encoded bytes. A rune c cannot encode gives
// a *RuneError; nothing is replaced or dropped.
func (c *Charset) EncodeString(s string) ([]byte, error) {
	if c.enc != nil {
		pos := 0
		for _, r := range s {
			pos++
			if r < 0x20 || r == 0x7F || r == '\uFFFD' {
				return nil, &RuneError{Rune: r, Pos: pos, Reason: "control or invalid character"}
			}
		}
		out, err := c.enc.NewEncoder().Bytes([]byte(s))
		if err != nil {
			pos = 0
			for _, r := range s {
				pos++
				if _, e := c.enc.NewEncoder().Bytes([]byte(string(r))); e != nil {
					return nil, &RuneError{Rune: r, Pos: pos, Reason: "not in " + c.name}
				}
			}
			return nil, fmt.Errorf("charset %s: %w", c.name, err)
		}
		return out, nil
	}
	out := make([]byte, 0, len(s))
	pos := 0
	for _, r := range s {
		pos++
		b, ok := c.encodeRune(r)
		if !ok {
			return nil, &RuneError{Rune: r, Pos: pos, Reason: "not in " + c.name}
		}
		out = append(out, b)
	}
	return out, nil
}

func (c *Charset) encodeRune(r rune) (byte, bool) {
	b, ok := c.fromRune[r]
	return b, ok
}

func newShiftJIS() *Charset {
	c := &Charset{name: "Shift_JIS", ccsid: 932, enc: japanese.ShiftJIS}
	for i := range c.runes {
		c.runes[i] = -1
	}
	for b := 0; b < 256; b++ {
		if IsCanonical(byte(b)) {
			c.toCanon[b] = byte(b)
			c.fromCanon[b] = byte(b)
			c.fromOK[b] = true
			c.runes[b] = CanonicalRune(byte(b))
		}
	}
	c.fillUnmapped()
	return c
}

func (c *Charset) fillUnmapped() {
	for i, v := range c.toCanon {
		if v == 0 {
			c.unmapped[i] = 1
		}
	}
}

func newCharmap(name string, ccsid int, cm *charmap.Charmap) *Charset {
	var runes [256]rune
	for b := 0; b < 256; b++ {
		r := cm.DecodeByte(byte(b))
		if r == '\uFFFD' || r < 0x20 || (r >= 0x7F && r < 0xA0) {
			r = -1
		}
		runes[b] = r
	}
	return build(name, ccsid, &runes)
}

func newTable(name string, ccsid int, t *[256]rune) *Charset { return build(name, ccsid, t) }

func build(name string, ccsid int, runes *[256]rune) *Charset {
	c := &Charset{name: name, ccsid: ccsid, ebcdic: true, runes: *runes, fromRune: map[rune]byte{}}
	for b, r := range runes {
		if r < 0 {
			continue
		}
		c.fromRune[r] = byte(b)
		cb, ok := canonicalByte(r)
		if !ok {
			continue
		}
		c.toCanon[b] = cb
		c.fromCanon[cb] = byte(b)
		c.fromOK[cb] = true
	}
	c.fillUnmapped()
	return c
}
