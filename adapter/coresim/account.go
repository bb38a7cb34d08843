package coresim

import (
	"strings"
	"unicode/utf8"

	"github.com/zcgw/zcgw/formats/charset"
)

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
