package filedrop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bank id names the bank's folder and is the payer of every derived
// transfer: one that is not a coordinator/ident bank_id ("../x", a
// newline, a separator) is refused before any folder is made.
func TestBankIDFollowsTheIdentifierGrammar(t *testing.T) {
	f := newFixture(t, nil)
	for _, id := range []string{"../../x", "00\n1", "0-01", strings.Repeat("9", 17)} {
		cfg := f.cfg
		cfg.Banks = []Bank{{ID: id, ZenginCode: "0001"}}
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "bank id") {
			t.Errorf("bank id %q: %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("a folder was made outside the data folder: %v", err)
	}
}
