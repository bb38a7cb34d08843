package bankapi

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// MaxEDILength bounds edi_ref, a transfer's remittance information
// (送金内容, spec 003 Transactions.edi_ref), in characters: the 全銀 EDI情報
// of a 総合振込 record is 20, a ZEDI (XML 全銀EDI) remittance reference up
// to 140.
const MaxEDILength = 140

// CheckEDI refuses an edi_ref that is not valid UTF-8, holds a control
// character or is longer than MaxEDILength characters: INVALID_REQUEST
// naming the field and the character where it goes wrong. "" is allowed
// (no remittance information).
func CheckEDI(field, v string) error {
	n := 0
	for i, r := range v {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(v[i:]); size <= 1 {
				return domainerr.New("INVALID_REQUEST", field+" is not valid UTF-8",
					map[string]any{"field": field, "byte_offset": i})
			}
		}
		if unicode.IsControl(r) {
			return domainerr.New("INVALID_REQUEST", fmt.Sprintf("%s holds a control character (U+%04X)", field, r),
				map[string]any{"field": field, "byte_offset": i, "char_offset": n})
		}
		n++
	}
	if n > MaxEDILength {
		return domainerr.New("INVALID_REQUEST", fmt.Sprintf("%s is %d characters; at most %d", field, n, MaxEDILength),
			map[string]any{"field": field, "length": n, "max_length": MaxEDILength})
	}
	return nil
}
