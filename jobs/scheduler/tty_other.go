//go:build !linux

package scheduler

import "os"

// isTerminal falls back to "is a character device" where TCGETS is not
// available.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
