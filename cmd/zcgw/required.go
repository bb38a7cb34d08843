package main

import (
	"fmt"
	"strings"
)

// requiredFlag is a flag a command cannot run without: its name, the
// value given, and why it is needed (shown to the user).
type requiredFlag struct{ name, value, why string }

// missingFlags writes one line naming every required flag left empty,
// each with why, so that one retry is enough, and reports whether any
// was missing.
func missingFlags(e *env, cmd string, flags ...requiredFlag) bool {
	var missing []string
	for _, f := range flags {
		if strings.TrimSpace(f.value) == "" {
			missing = append(missing, fmt.Sprintf("%s is required (%s)", f.name, f.why))
		}
	}
	if len(missing) == 0 {
		return false
	}
	fmt.Fprintf(e.Stderr, "%s: %s\n", cmd, strings.Join(missing, "; "))
	return true
}
