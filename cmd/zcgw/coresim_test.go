package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/outbox"
)

// TestCoresimCommandServesItsQueue runs `zcgw coresim` and talks to it
// only through the embedded MQ file under the data folder.
func TestCoresimCommandServesItsQueue(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--data", dir, "coresim", "--bank", "001", "--open", "001-1-0000001:ﾔﾏﾀﾞ ﾀﾛｳ:1000"}, &out, &errb)
	}()
	link, err := corelink.Open(context.Background(), corelink.Config{Bank: "001",
		Transport: embedded.New(filepath.Join(dir, "mq.db"), embedded.Options{PollInterval: 10 * time.Millisecond}),
		Timeout:   10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	res, err := link.Apply(context.Background(), outbox.Posting{Ref: "CLI-1", TxID: "TX-CLI", Bank: "001",
		Account: "001-1-0000001", Kind: outbox.Debit, Amount: 300})
	if err != nil || res.BalanceAfter != 700 {
		t.Fatalf("apply: %+v %v (stderr %s)", res, err, errb.String())
	}
	if b, err := link.Balance(context.Background(), "001-1-0000001"); err != nil || b.Ledger != 700 {
		t.Fatalf("balance: %+v %v", b, err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("serving CORE.001.REQUEST")) {
		t.Fatalf("stdout: %s", out.String())
	}
}

func TestCoresimCommandFlags(t *testing.T) {
	cases := [][]string{
		{"coresim"},
		{"coresim", "--bank", "001", "--online", "8:00-17:00"},
		{"coresim", "--bank", "001", "--run-batch", "x.dat"},
		{"coresim", "--bank", "001", "--open", "nope"},
		{"coresim", "--bank", "001", "--mq", "amqp://guest:guest@127.0.0.1:5672/", "--mq-kind", "ibmmq"},
		{"coresim", "--bank", "001", "--queue-prefix", "CORE."},
	}
	for _, args := range cases {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"--data", t.TempDir()}, args...), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

// TestCoresimRefusedOnAServedFolder: on a folder a node serves, `zcgw
// coresim` would be a second consumer of the core's request queue; it is
// refused, naming the node. Without the node, a second coresim on the same
// queue file is refused by the queue's consumer claim, naming the first.
func TestCoresimRefusedOnAServedFolder(t *testing.T) {
	dir := t.TempDir()
	lock, err := procid.Acquire(dir, procid.Info{PID: 4242, Node: "node-test", Epoch: "e1", Addr: "127.0.0.1:18999", Started: "2026-12-03T00:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--data", dir, "coresim", "--bank", "001"}, &out, &errb)
	for _, want := range []string{"refused", "node-test", "pid 4242", "127.0.0.1:18999"} {
		if code != 1 || !strings.Contains(errb.String(), want) {
			t.Fatalf("exit %d, stderr %q: want exit 1 naming the node (%s)", code, errb.String(), want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "core-001.db")); !os.IsNotExist(err) {
		t.Fatalf("refused coresim touched the folder: %v", err)
	}
	lock.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out1, err1 lockedBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--data", dir, "coresim", "--bank", "001"}, &out1, &err1) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out1.String(), "serving") {
		if time.Now().After(deadline) {
			t.Fatalf("first coresim did not start: %s", err1.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var out2, err2 bytes.Buffer
	code = run(context.Background(), []string{"--data", dir, "coresim", "--bank", "001"}, &out2, &err2)
	if code != 1 || !strings.Contains(err2.String(), "MQRC 2042") || !strings.Contains(err2.String(), `"zcgw coresim --bank 001"`) ||
		!strings.Contains(err2.String(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second coresim: exit %d, stderr %q: want refused naming the first", code, err2.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("first coresim exit %d: %s", code, err1.String())
	}
}
