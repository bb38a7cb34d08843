package chaos_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// zcgwBin is the zcgw binary built once for the whole suite.
var zcgwBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "zcgw-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	zcgwBin = filepath.Join(dir, "zcgw")
	_, here, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", zcgwBin, "./cmd/zcgw")
	build.Dir = filepath.Join(filepath.Dir(here), "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: go build ./cmd/zcgw: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
