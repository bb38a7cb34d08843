package procid

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
)

func TestLoadNodeKeepsNodeIDAndChangesEpoch(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	a, err := LoadNode(dir, clk)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadNode(dir, clk)
	if err != nil {
		t.Fatal(err)
	}
	if a.Node != b.Node || !strings.HasPrefix(a.Node, "node-") {
		t.Fatalf("node ids %q %q: want one persisted id", a.Node, b.Node)
	}
	if a.Epoch == b.Epoch {
		t.Fatalf("two starts share epoch %q", a.Epoch)
	}
	owner := a.Owner("worker-3")
	if !b.IsEarlierSelf(owner) {
		t.Fatalf("%q is an earlier start of %v", owner, b)
	}
	if a.IsEarlierSelf(owner) {
		t.Fatalf("%q is a's own claim, not an earlier start's", owner)
	}
	if Ephemeral("cli", clk).IsEarlierSelf(owner) {
		t.Fatalf("another node's process must not take back %q", owner)
	}
	node, epoch, worker, ok := ParseOwner(owner)
	if !ok || node != a.Node || epoch != a.Epoch || worker != "worker-3" {
		t.Fatalf("ParseOwner(%q) = %q %q %q %v", owner, node, epoch, worker, ok)
	}
	if _, _, _, ok := ParseOwner("drain-1"); ok {
		t.Fatal("a bare worker name is not an owner string")
	}
}

func TestLoadNodeRefusesCorruptNodeID(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "node-id"), []byte("a/b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadNode(dir, clock.System{}); err == nil || !strings.Contains(err.Error(), "node-id") {
		t.Fatalf("err = %v, want one naming node-id", err)
	}
}

func TestLockIsExclusiveAndRunningSeesIt(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := Running(dir); err != nil || ok {
		t.Fatalf("fresh folder: running=%v err=%v", ok, err)
	}
	l, err := Acquire(dir, Info{PID: os.Getpid(), Node: "node-a", Addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Update(Info{PID: os.Getpid(), Node: "node-a", Addr: "127.0.0.1:8080"}); err != nil {
		t.Fatal(err)
	}
	info, ok, err := Running(dir)
	if err != nil || !ok || info.Addr != "127.0.0.1:8080" || info.Node != "node-a" {
		t.Fatalf("Running = %+v %v %v", info, ok, err)
	}
	if _, err := Acquire(dir, Info{}); !errors.Is(err, ErrServed) || !strings.Contains(err.Error(), "127.0.0.1:8080") {
		t.Fatalf("second Acquire err = %v, want ErrServed naming the holder", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := Running(dir); ok {
		t.Fatal("lock released, still reported running")
	}
	l2, err := Acquire(dir, Info{})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.Close()
}

// TestLockDiesWithItsProcess holds the lock in a child process, kills it
// with SIGKILL and takes the lock: the kernel releases a flock on death.
func TestLockDiesWithItsProcess(t *testing.T) {
	if os.Getenv("PROCID_CHILD") != "" {
		if _, err := Acquire(os.Getenv("PROCID_CHILD"), Info{PID: os.Getpid(), Addr: "child"}); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDiesWithItsProcess$")
	cmd.Env = append(os.Environ(), "PROCID_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	if info, ok, _ := Running(dir); !ok || info.Addr != "child" {
		t.Fatalf("child holds the lock: Running = %+v %v", info, ok)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	l, err := Acquire(dir, Info{})
	if err != nil {
		t.Fatalf("after SIGKILL: %v", err)
	}
	l.Close()
}
