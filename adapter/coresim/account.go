package coresim

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/zcgw/zcgw/formats/charset"
)

// AccountKey is the core's account identifier as zcgw writes it:
// "BBB-T-NNNNNNN" (branch 3 digits, account type 1 digit, number 7 digits),
// the three fields every coremsg body carries.
func AccountKey(branch string, typ uint8, number string) string {
	return fmt.Sprintf("%03s-%d-%07s", branch, typ, number)
}

// ParseAccountKey splits "BBB-T-NNNNNNN" into its fields.
func ParseAccountKey(s string) (branch string, typ uint8, number string, err error) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 || len(parts[0]) != 3 || len(parts[1]) != 1 || len(parts[2]) != 7 ||
		!digits(parts[0]) || !digits(parts[1]) || !digits(parts[2]) {
		return "", 0, "", fmt.Errorf("account %q: want BBB-T-NNNNNNN (branch, type, number digits)", s)
	}
	switch parts[1] {
	case "1", "2", "4", "9":
	default:
		return "", 0, "", fmt.Errorf("account %q: account type %s is not 1, 2, 4 or 9", s, parts[1])
	}
	return parts[0], parts[1][0] - '0', parts[2], nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// kanaKey folds a holder name to the Zengin half-width form with single
// spaces, so "ヤマダ タロウ" and "ﾔﾏﾀﾞ ﾀﾛｳ" compare equal.
func kanaKey(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	canon, err := charset.AppendHalfWidth(nil, s)
	if err != nil {
		return strings.ToUpper(s)
	}
	out, err := charset.CanonicalString(canon)
	if err != nil {
		return strings.ToUpper(s)
	}
	return out
}

// editDistance is the Levenshtein distance over runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if utf8.RuneCountInString(a) == 0 {
		return len(rb)
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
