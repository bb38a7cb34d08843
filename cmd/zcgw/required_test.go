package main

import (
	"context"
	"testing"
)

// A command missing several required flags names all of them in one line
// and exits 2 before it touches the data folder.
func TestMissingRequiredFlagsAreNamedAtOnce(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cases", "resolve", "CASE-1"},
			"zcgw cases resolve: --by is required (who decides; recorded); --note is required (why; recorded)\n"},
		{[]string{"cases", "close", "CASE-1", "--by", "sato"},
			"zcgw cases close: --note is required (why; recorded)\n"},
		{[]string{"params", "set", "PR-HV-THRESHOLD", "2000", "--by", "alice"},
			"zcgw params set: --evidence-ref is required (recorded with the change on the GLOBAL chain); --reason is required (recorded with the change on the GLOBAL chain)\n"},
	} {
		code, out, errs := zcgwIn(context.Background(), append([]string{"--data", dir}, tc.args...)...)
		if code != 2 || errs != tc.want || out != "" {
			t.Errorf("zcgw %v: exit %d\nstdout %q\nstderr %q\nwant   %q", tc.args, code, out, errs, tc.want)
		}
	}
}
