package adapter

import (
	"fmt"
	"testing"
)

func TestMatchScore(t *testing.T) {
	cases := []struct {
		provided, stored string
		want             float64
	}{
		{"ヤマダ タロウ", "ヤマダ タロウ", 1.0},
		{"ﾔﾏﾀﾞ ﾀﾛｳ", "ヤマダ タロウ", 1.0}, // half-width kana compose under NFKC
		{"yamada taro", "YAMADA TARO", 1.0},
		{"ＹＡＭＡＤＡ", "YAMADA", 1.0},
		{"YAMADA TARO", "YAMADA TAROU", 0.8},
		{"YAMADA TARO", "YAMADA JIRO", 0.0},
		{"", "YAMADA", 0.0},
		{"A", "B", 0.8},
		{"AB", "BA", 0.0},
	}
	for _, c := range cases {
		if got := MatchScore(c.provided, c.stored); got != c.want {
			t.Errorf("MatchScore(%q, %q) = %v, want %v", c.provided, c.stored, got, c.want)
		}
	}
}

func TestWindowContains(t *testing.T) {
	w := Window{From: 23 * 60, To: 60}
	for m, want := range map[int]bool{0: true, 59: true, 60: false, 600: false, 1379: false, 1380: true} {
		if w.Contains(m) != want {
			t.Errorf("Contains(%d) = %v", m, !want)
		}
	}
}

func ExampleMatchScore() {
	fmt.Println(MatchScore("佐藤 花子", "佐藤　花子"), MatchScore("佐藤 花", "佐藤 花子"), MatchScore("鈴木 一郎", "佐藤 花子"))
	// Output: 1 0.8 0
}
