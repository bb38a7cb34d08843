package brokers

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/zcgw/zcgw/test/internal/proc"
)

var zcgwBin string

func TestMain(m *testing.M) { os.Exit(proc.Main(m, "brokers", &zcgwBin)) }

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
