package fixed

import (
	"encoding/binary"
	"math"
)

// The primitives below work on canonical bytes, never allocate and never
// panic. They return ok=false on any invalid input; Check then says why and
// where.

// ParseDigits reads an unsigned zoned decimal: every byte must be '0'–'9'.
// Empty input, a non-digit or a value above math.MaxUint64 gives ok=false.
func ParseDigits(b []byte) (v uint64, ok bool) {
	n := len(b)
	if n == 0 {
		return 0, false
	}
	if n < 20 {
		// Eight digits at a time (SWAR), then the rest one by one. 19 digits
		// cannot overflow a uint64.
		for len(b) >= 8 {
			x := binary.LittleEndian.Uint64(b)
			if x&0xF0F0F0F0F0F0F0F0 != 0x3030303030303030 ||
				(x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0 != 0x3030303030303030 {
				return 0, false
			}
			x &= 0x0F0F0F0F0F0F0F0F
			x = (x * 2561) >> 8
			x = ((x & 0x00FF00FF00FF00FF) * 6553601) >> 16
			x = ((x & 0x0000FFFF0000FFFF) * 42949672960001) >> 32
			v = v*100000000 + x
			b = b[8:]
		}
		for _, c := range b {
			d := c - '0'
			if d > 9 {
				return 0, false
			}
			v = v*10 + uint64(d)
		}
		return v, true
	}
	for _, c := range b {
		d := c - '0'
		if d > 9 {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(d))/10 {
			return 0, false
		}
		v = v*10 + uint64(d)
	}
	return v, true
}

// FirstNonDigit returns the index of the first byte that is not '0'–'9',
// or -1.
func FirstNonDigit(b []byte) int {
	for i, c := range b {
		if c-'0' > 9 {
			return i
		}
	}
	return -1
}

// PutDigits writes v right-justified and zero-padded into all of dst. It
// returns false (dst unspecified) when v has more digits than len(dst).
func PutDigits(dst []byte, v uint64) bool {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = byte('0' + v%10)
		v /= 10
	}
	return v == 0
}

// Overpunch sign bytes in canonical (ASCII) form: positive '{','A'..'I',
// negative '}','J'..'R' (EBCDIC 0xC0–0xC9 and 0xD0–0xD9).
var (
	posPunch = [10]byte{'{', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I'}
	negPunch = [10]byte{'}', 'J', 'K', 'L', 'M', 'N', 'O', 'P', 'Q', 'R'}
)

// overpunch decodes a last byte: digit d, neg, ok.
var overpunch = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for d := 0; d < 10; d++ {
		t['0'+d] = int8(d)
		t[posPunch[d]] = int8(d)
		t[negPunch[d]] = int8(d) | 0x10
	}
	return t
}()

// ParseOverpunch reads a signed zoned decimal with a trailing overpunch
// sign (see S). A plain digit in the last byte reads as positive. Values
// outside int64 give ok=false.
func ParseOverpunch(b []byte) (v int64, ok bool) {
	n := len(b)
	if n == 0 {
		return 0, false
	}
	last := overpunch[b[n-1]]
	if last < 0 {
		return 0, false
	}
	var u uint64
	if n > 1 {
		var ok bool
		if u, ok = ParseDigits(b[:n-1]); !ok {
			return 0, false
		}
	}
	if u > (math.MaxUint64-9)/10 {
		return 0, false
	}
	mag := u*10 + uint64(last&0x0F)
	if last&0x10 != 0 {
		if mag > 1<<63 {
			return 0, false
		}
		return -int64(mag), true
	}
	if mag > math.MaxInt64 {
		return 0, false
	}
	return int64(mag), true
}

// PutOverpunch writes v as a signed zoned decimal filling dst, the sign
// overpunched on the last byte ('{'/'A'..'I' positive, '}'/'J'..'R'
// negative). It returns false when v does not fit.
func PutOverpunch(dst []byte, v int64) bool {
	n := len(dst)
	if n == 0 {
		return false
	}
	neg := v < 0
	mag := uint64(v)
	if neg {
		mag = uint64(-v) // -MinInt64 wraps to itself, which as uint64 is 2^63: correct
	}
	d := mag % 10
	if neg {
		dst[n-1] = negPunch[d]
	} else {
		dst[n-1] = posPunch[d]
	}
	return PutDigits(dst[:n-1], mag/10)
}

// ParsePacked reads a packed decimal (COMP-3): digit nibbles 0–9, the last
// nibble a sign C (+), D (-) or F (unsigned, +). Values outside int64 give
// ok=false.
func ParsePacked(b []byte) (v int64, ok bool) {
	n := len(b)
	if n == 0 {
		return 0, false
	}
	var u uint64
	digits := 0
	for i := 0; i < n; i++ {
		hi, lo := b[i]>>4, b[i]&0x0F
		if hi > 9 {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(hi)
		digits++
		if i == n-1 {
			switch lo {
			case 0x0C, 0x0F:
				if u > math.MaxInt64 {
					return 0, false
				}
				return int64(u), true
			case 0x0D:
				if u > 1<<63 {
					return 0, false
				}
				return -int64(u), true
			}
			return 0, false
		}
		if lo > 9 {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(lo)
		digits++
	}
	return 0, false
}

// PutPacked writes v as packed decimal filling dst. The sign nibble is D
// for negative values, F when unsigned is true (v must then be >= 0) and C
// otherwise. It returns false when v does not fit in 2*len(dst)-1 digits.
func PutPacked(dst []byte, v int64, unsigned bool) bool {
	n := len(dst)
	if n == 0 {
		return false
	}
	neg := v < 0
	if neg && unsigned {
		return false
	}
	mag := uint64(v)
	if neg {
		mag = uint64(-v)
	}
	sign := byte(0x0C)
	switch {
	case neg:
		sign = 0x0D
	case unsigned:
		sign = 0x0F
	}
	dst[n-1] = byte(mag%10)<<4 | sign
	mag /= 10
	for i := n - 2; i >= 0; i-- {
		lo := mag % 10
		mag /= 10
		hi := mag % 10
		mag /= 10
		dst[i] = byte(hi<<4 | lo)
	}
	return mag == 0
}

// textAlnum marks bytes allowed in X fields; textKana in K fields.
var textAlnum, textKana = func() (x, k [256]bool) {
	for c := 0x20; c <= 0x7E; c++ {
		x[c] = true
	}
	for c := 0xA1; c <= 0xDF; c++ {
		x[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		k[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		k[c] = true
	}
	for _, c := range " ()-./" {
		k[c] = true
	}
	k[0xA6] = true                  // ｦ
	for c := 0xB0; c <= 0xDF; c++ { // ｰ ｱ..ﾝ ﾞ ﾟ
		k[c] = true
	}
	return x, k
}()

// IsAlnum reports whether c is allowed in an X field.
func IsAlnum(c byte) bool { return textAlnum[c] }

// IsKana reports whether c is allowed in a K field (the Zengin set).
func IsKana(c byte) bool { return textKana[c] }

// FirstInvalidAlnum returns the index of the first byte not allowed in an X
// field (printable JIS X 0201), or -1.
func FirstInvalidAlnum(b []byte) int { return firstFlagged(&badAlnum, b) }

// FirstInvalidKana returns the index of the first byte not allowed in a K
// field (Zengin set: ｦ ｰ ｱ–ﾝ ﾞ ﾟ A–Z 0–9 space ( ) - . /), or -1. Lower-case
// letters and small kana are refused.
func FirstInvalidKana(b []byte) int { return firstFlagged(&badKana, b) }

var badAlnum, badKana = func() (x, k [256]byte) {
	for c := range 256 {
		if !textAlnum[c] {
			x[c] = 1
		}
		if !textKana[c] {
			k[c] = 1
		}
	}
	return x, k
}()

// firstFlagged returns the index of the first byte flagged in bad, or -1.
// (A plain loop: byte-indexed [256] tables need no bounds checks, and it
// measured faster than unrolled OR-accumulating variants.)
func firstFlagged(bad *[256]byte, b []byte) int {
	for i, c := range b {
		if bad[c] != 0 {
			return i
		}
	}
	return -1
}

// FirstNonBlank returns the index of the first byte that is not a space,
// or -1.
func FirstNonBlank(b []byte) int {
	for i, c := range b {
		if c != ' ' {
			return i
		}
	}
	return -1
}

// PutText writes s left-justified into dst and pads with spaces. It returns
// false (dst unspecified) when s is longer than dst. s must already be
// canonical bytes.
func PutText[T ~string | ~[]byte](dst []byte, s T) bool {
	if len(s) > len(dst) {
		return false
	}
	n := copy(dst, s)
	for i := n; i < len(dst); i++ {
		dst[i] = ' '
	}
	return true
}

// TrimText returns b without trailing spaces (the value of an X or K field).
func TrimText(b []byte) []byte {
	n := len(b)
	for n > 0 && b[n-1] == ' ' {
		n--
	}
	return b[:n]
}

// Check validates one field's canonical bytes for type t. It returns 0 and
// -1 when valid, otherwise the reason and the 0-based index of the first
// offending byte in b. Check allocates nothing.
func Check(t Type, b []byte) (Reason, int) {
	switch t {
	case X:
		if i := FirstInvalidAlnum(b); i >= 0 {
			return BadChar, i
		}
	case K:
		if i := FirstInvalidKana(b); i >= 0 {
			return BadChar, i
		}
	case Filler:
		if i := FirstNonBlank(b); i >= 0 {
			return NotBlank, i
		}
	case N:
		if len(b) == 0 {
			return 0, -1
		}
		if _, ok := ParseDigits(b); ok { // fast path
			return 0, -1
		}
		if i := FirstNonDigit(b); i >= 0 {
			return NotNumeric, i
		}
		return Overflow, 0
	case S:
		if _, ok := ParseOverpunch(b); ok { // fast path
			return 0, -1
		}
		if len(b) == 0 {
			return NotNumeric, 0
		}
		if i := FirstNonDigit(b[:len(b)-1]); i >= 0 {
			return NotNumeric, i
		}
		if overpunch[b[len(b)-1]] < 0 {
			return BadSign, len(b) - 1
		}
		return Overflow, 0
	case P:
		if _, ok := ParsePacked(b); ok { // fast path
			return 0, -1
		}
		if len(b) == 0 {
			return BadPacked, 0
		}
		for i, c := range b {
			if c>>4 > 9 {
				return BadPacked, i
			}
			if i < len(b)-1 && c&0x0F > 9 {
				return BadPacked, i
			}
		}
		switch b[len(b)-1] & 0x0F {
		case 0x0C, 0x0D, 0x0F:
		default:
			return BadSign, len(b) - 1
		}
		return Overflow, 0
	}
	return 0, -1
}
