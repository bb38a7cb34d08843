// Package fixed is zcgw's strict fixed-length record codec.
//
// A record layout is declared once, either as a table (NewLayout with
// Field values) or as Go struct tags read by LayoutOf:
//
//	type Transfer struct {
//		Kind   uint8    `fixed:"1,1,9,const=2" label:"データ区分"`
//		Bank   string   `fixed:"2,4,9" label:"被仕向銀行番号"`
//		Name   string   `fixed:"6,30,K" label:"受取人名"`
//		Amount int64    `fixed:"36,10,9" label:"振込金額"`
//		_      struct{} `fixed:"46,5,FILLER"`
//	}
//
// Struct tags:
//
//	`fixed:"START,LEN,TYPE[,const=VALUE][,name=NAME]" label:"MEANING"`
//
// START is 1-based, TYPE is X, 9 (or N), S9 (or S), K, P or FILLER. Go
// types: string for X and K (and for 9 when leading zeros matter: the value
// must then be digits only); int, int8..int64 and uint..uint64 for 9, S9
// and P (S9 and negative P values need a signed type). Fillers are blank
// fields of type struct{}. Every other field needs a tag; `fixed:"-"` skips
// one. The layout is named after the Go type unless the type has a
// LayoutName() string method; its length is the end of the last field
// unless the type has a RecordLength() int method (then a mismatch is an
// error).
//
// Field types: X (printable single-byte text, left-justified,
// space-padded), 9 (unsigned zoned decimal, right-justified, zero-padded),
// S9 (signed zoned decimal, trailing overpunch sign), K (Zengin katakana
// set), P (packed decimal COMP-3) and FILLER (spaces).
//
// The codec works on canonical bytes (see formats/charset): Marshal and
// Unmarshal transcode whole records from and to a *charset.Charset,
// skipping packed fields. Hot paths can use the zero-allocation primitives
// (ParseDigits, PutDigits, ParseOverpunch, ParsePacked, FirstInvalidKana,
// PutText, ...) directly on canonical bytes.
//
// Strictness: a non-numeric byte in a numeric field, a bad sign, a bad
// packed nibble, a byte outside a text field's set, a short or long record,
// a filler that is not blank and a constant mismatch are all *Error values
// naming record, field, byte offset, column and the offending bytes. Nothing
// is silently zeroed, padded or truncated, and no input makes a decoder
// panic (fuzzed).
//
// This package imports only formats/charset of zcgw and does no I/O.
package fixed
