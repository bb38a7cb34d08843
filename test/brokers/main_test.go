package brokers

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

var zcgwBin string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "zcgw-brokers-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "brokers: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	zcgwBin = filepath.Join(dir, "zcgw")
	_, here, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", zcgwBin, "./cmd/zcgw")
	build.Dir = filepath.Join(filepath.Dir(here), "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "brokers: go build ./cmd/zcgw: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

const brokerURL = "amqp://guest:guest@127.0.0.1:5672/"

// requireBroker skips when RabbitMQ is not reachable, except under
// CI=true, where it fails.
func requireBroker(t *testing.T) {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:5672", 2*time.Second)
	if err == nil {
		c.Close()
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("RabbitMQ is not reachable at 127.0.0.1:5672 and CI=true: %v", err)
	}
	t.Skipf("RabbitMQ is not reachable at 127.0.0.1:5672 (%v); start it with `rabbitmq-server -detached`", err)
}
