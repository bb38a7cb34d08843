package bench

import (
	"strings"
	"testing"
)

func TestParseLanes(t *testing.T) {
	ls, err := ParseLanes("express=100")
	if err != nil || len(ls) != 1 || ls[0] != (LaneShare{"EXPRESS", 100}) {
		t.Fatalf("ParseLanes(express=100) = %v, %v", ls, err)
	}
	ls, err = ParseLanes("STANDARD=20,EXPRESS=80")
	if err != nil || len(ls) != 2 || ls[0] != (LaneShare{"EXPRESS", 80}) || ls[1] != (LaneShare{"STANDARD", 20}) {
		t.Fatalf("ParseLanes(STANDARD=20,EXPRESS=80) = %v, %v", ls, err)
	}
	for _, n := range []int{10, 40, 100, 1000} {
		count := map[string]int{}
		for i := 0; i < n; i++ {
			count[laneOf(ls, i)]++
		}
		if count["EXPRESS"] != n*80/100 || count["STANDARD"] != n-n*80/100 {
			t.Errorf("first %d transfers: %v, want %d EXPRESS", n, count, n*80/100)
		}
	}
	for in, want := range map[string]string{
		"EXPRESS=80":            "sum to 80",
		"EXPRESS":               "is not LANE=PERCENT",
		"EXPRESS=x":             `percent "x"`,
		"EXPRESS=101":           `percent "101"`,
		"EXPRESS=80,BULK=20":    "lane BULK is not supported",
		"EXPRESS=50,EXPRESS=50": "lane EXPRESS is given twice",
		"EXPRESS=50,X=":         "percent \"\"",
	} {
		if _, err := ParseLanes(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLanes(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}

func TestConfigHasKFundedBanksWithKeys(t *testing.T) {
	c := Config(5)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Banks) != 5 || c.Banks[4].BankID != "005" || len(c.Banks[4].Accounts) != accountsPerBank || c.Banks[4].Accounts[0].Balance != openingBalance {
		t.Fatalf("banks: %+v", c.Banks)
	}
	seen := map[string]bool{}
	for _, b := range c.Banks {
		k := c.KeyFor(b.BankID)
		if k == "" || seen[k] {
			t.Errorf("bank %s: API key %q missing or shared", b.BankID, k)
		}
		seen[k] = true
	}
}
