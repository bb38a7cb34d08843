package fixed

import (
	"fmt"
	"strings"
)

// Type is the storage type of a field.
type Type uint8

// Field types.
const (
	// X is printable single-byte text (JIS X 0201: ASCII 0x20–0x7E and
	// half-width katakana 0xA1–0xDF), left-justified and space-padded.
	X Type = iota + 1
	// N ("9") is an unsigned zoned decimal: digits only, right-justified,
	// zero-padded.
	N
	// S ("S9") is a signed zoned decimal whose last byte carries the sign as
	// an overpunch: '{' 'A'–'I' for +0..+9, '}' 'J'–'R' for -0..-9 (EBCDIC
	// zones C and D). A plain digit in the last byte reads as positive
	// (zone F); encoding always writes the overpunch.
	S
	// K is Zengin text: half-width katakana ｦ and ｰ–ﾟ (no small kana, no
	// ｡｢｣､･), A–Z, 0–9, space and ( ) - . /. Left-justified, space-padded.
	// Marshal converts full-width input with a unique half-width form.
	K
	// P is packed decimal (COMP-3): two digits per byte, the last nibble is
	// the sign (C positive, D negative, F unsigned). Len bytes hold 2*Len-1
	// digits. P fields are binary and are never transcoded.
	P
	// Filler is unused space: written as spaces, must read as spaces.
	Filler
)

// String gives the COBOL-style picture letter: X, 9, S9, K, P or FILLER.
func (t Type) String() string {
	switch t {
	case X:
		return "X"
	case N:
		return "9"
	case S:
		return "S9"
	case K:
		return "K"
	case P:
		return "P"
	case Filler:
		return "FILLER"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Numeric reports whether the type holds a number (9, S9, P).
func (t Type) Numeric() bool { return t == N || t == S || t == P }

// ParseType reads a type name as used in struct tags: X, 9 or N, S9 or S,
// K, P, FILLER or "-" (case-insensitive).
func ParseType(s string) (Type, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "X":
		return X, nil
	case "9", "N":
		return N, nil
	case "S9", "S":
		return S, nil
	case "K":
		return K, nil
	case "P", "COMP-3":
		return P, nil
	case "FILLER", "-":
		return Filler, nil
	}
	return 0, fmt.Errorf("fixed: unknown field type %q", s)
}

// MaxDigits is the number of decimal digits a field of this type and byte
// length holds.
func (t Type) MaxDigits(length int) int {
	switch t {
	case N, S:
		return length
	case P:
		return 2*length - 1
	}
	return 0
}

// Reason says why a record or field was refused.
type Reason uint8

// Reasons.
const (
	// NotNumeric: a byte other than '0'–'9' in a 9 or S9 field.
	NotNumeric Reason = iota + 1
	// BadSign: an S9 field's last byte is not a digit or overpunch, or a P
	// field's sign nibble is not C, D or F, or a negative value for an
	// unsigned target.
	BadSign
	// BadPacked: a P field digit nibble above 9.
	BadPacked
	// BadChar: a byte outside the field's character set, or a character
	// that cannot be encoded in the record's charset.
	BadChar
	// NotBlank: a filler that is not all spaces.
	NotBlank
	// ShortRecord: fewer bytes than the layout length.
	ShortRecord
	// LongRecord: more bytes than the layout length.
	LongRecord
	// ConstMismatch: a field that must hold a literal holds something else.
	ConstMismatch
	// Overflow: a value does not fit the field or the Go type.
	Overflow
	// UnknownRecordType: a record or message type that no layout describes.
	UnknownRecordType
	// LengthMismatch: a declared length (body length, record count) differs
	// from the actual one.
	LengthMismatch
	// Invalid: a value that is well-formed but not allowed (date, code).
	Invalid
)

var reasonNames = [...]string{
	NotNumeric:        "not numeric",
	BadSign:           "bad sign",
	BadPacked:         "bad packed decimal",
	BadChar:           "character not allowed",
	NotBlank:          "filler not blank",
	ShortRecord:       "short record",
	LongRecord:        "long record",
	ConstMismatch:     "constant mismatch",
	Overflow:          "overflow",
	UnknownRecordType: "unknown record type",
	LengthMismatch:    "length mismatch",
	Invalid:           "invalid value",
}

// String is a short English description, e.g. "not numeric".
func (r Reason) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Error makes a Reason usable as an errors.Is target:
// errors.Is(err, fixed.NotNumeric).
func (r Reason) Error() string { return r.String() }
