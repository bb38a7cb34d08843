package coreacct

import (
	"fmt"
	"strings"
)

// Key is a parsed core account key.
type Key struct {
	Branch string // 3 digits
	Type   uint8  // 1 普通, 2 当座, 4 貯蓄, 9 その他
	Number string // 7 digits
}

// String is the key as stored and sent: "BBB-T-NNNNNNN".
func (k Key) String() string { return Format(k.Branch, k.Type, k.Number) }

// Masked is the key as it may appear in errors and logs (see Mask).
func (k Key) Masked() string { return Mask(k.String()) }

// Format writes "BBB-T-NNNNNNN", zero-padding branch and number.
func Format(branch string, typ uint8, number string) string {
	return fmt.Sprintf("%03s-%d-%07s", branch, typ, number)
}

// Error says why a string is not a core account key. Its text never holds
// the full input: Value is the masked form.
type Error struct {
	Value string // Mask of the input
	Why   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("account %s: %s (want BBB-T-NNNNNNN: branch, type 1/2/4/9, number digits)", e.Value, e.Why)
}

// Parse splits "BBB-T-NNNNNNN" into its fields. The account type must be
// 1, 2, 4 or 9 (the core's 預金種目). A refusal is an *Error.
func Parse(s string) (Key, error) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 || len(parts[0]) != 3 || len(parts[1]) != 1 || len(parts[2]) != 7 {
		return Key{}, &Error{Value: Mask(s), Why: "wrong shape"}
	}
	for _, p := range parts {
		if !digits(p) {
			return Key{}, &Error{Value: Mask(s), Why: "not digits"}
		}
	}
	switch parts[1] {
	case "1", "2", "4", "9":
	default:
		return Key{}, &Error{Value: Mask(s), Why: "account type " + parts[1] + " is not 1, 2, 4 or 9"}
	}
	return Key{Branch: parts[0], Type: parts[1][0] - '0', Number: parts[2]}, nil
}

// Mask is how an account key may appear in text for people: the branch and
// type stay, the number keeps its last 4 digits ("100-1-***0001"). Input
// that is not a key keeps at most its last 4 bytes, each other byte a '*'
// (at most 16 of them), so a malformed value leaks no more than a good one.
func Mask(s string) string {
	parts := strings.Split(s, "-")
	if len(parts) == 3 && len(parts[0]) == 3 && len(parts[1]) == 1 && len(parts[2]) == 7 &&
		digits(parts[0]) && digits(parts[1]) && digits(parts[2]) {
		return parts[0] + "-" + parts[1] + "-***" + parts[2][3:]
	}
	if len(s) <= 4 {
		return strings.Repeat("*", len(s))
	}
	stars := min(len(s)-4, 16)
	tail := s[len(s)-4:]
	for i := 0; i < len(tail); i++ {
		if tail[i] < 0x21 || tail[i] > 0x7e {
			return strings.Repeat("*", stars+4)
		}
	}
	return strings.Repeat("*", stars) + tail
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
