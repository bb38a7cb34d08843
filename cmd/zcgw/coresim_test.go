package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
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
	}
	for _, args := range cases {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"--data", t.TempDir()}, args...), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}
