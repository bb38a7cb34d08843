package adapter

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalizeName folds a holder name for comparison: full-width and
// half-width forms are unified (NFKC: ﾀﾞ == ダ, Ａ == A), letters are upper-cased and
// every kind of space is removed ("佐藤　花子" == "佐藤 花子" == "佐藤花子").
func normalizeName(s string) string {
	s = norm.NFKC.String(s)
	var b strings.Builder
	for _, r := range s {
		if unicode.IsSpace(r) {
			continue
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// MatchScore scores a provided name against the stored holder name: 1.0
// when equal after normalisation, 0.8 when one edit (insert, delete or
// substitute one character) apart, 0.0 otherwise (spec 004 account-verify).
func MatchScore(provided, stored string) float64 {
	p, s := []rune(normalizeName(provided)), []rune(normalizeName(stored))
	if len(p) == 0 || len(s) == 0 {
		return 0
	}
	switch editDistanceAtMost1(p, s) {
	case 0:
		return 1.0
	case 1:
		return 0.8
	}
	return 0
}

// editDistanceAtMost1 returns the Levenshtein distance of a and b when it
// is 0 or 1, and 2 for anything larger.
func editDistanceAtMost1(a, b []rune) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(b)-len(a) > 1 {
		return 2
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if i == len(a) {
		return len(b) - len(a)
	}
	if len(a) == len(b) {
		if string(a[i+1:]) == string(b[i+1:]) {
			return 1
		}
		return 2
	}
	if string(a[i:]) == string(b[i+1:]) {
		return 1
	}
	return 2
}
