package chaos_test

import (
	"os"
	"testing"

	"github.com/zcgw/zcgw/test/internal/proc"
)

// zcgwBin is the zcgw binary built once for the whole suite.
var zcgwBin string

func TestMain(m *testing.M) { os.Exit(proc.Main(m, "chaos", &zcgwBin)) }
