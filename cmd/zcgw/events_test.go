package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox/events"
)

func appendEvents(t *testing.T, dir string, evs ...finality.Event) {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenCoordinator(ctx, filepath.Join(dir, "zc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Signed by a ZC key registered in the data folder's KeyRegistry.
	at := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	reg := signing.NewRegistry(db, clock.NewManual(at))
	if _, err := reg.Get(ctx, "KEY-ZC-TEST"); err != nil {
		if err := reg.Register(ctx, signing.Key{KeyID: "KEY-ZC-TEST", OwnerType: signing.OwnerZC, OwnerRef: "ZC",
			PublicKey: priv.Public().(ed25519.PublicKey), ValidFrom: at.Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	l := finality.New(clock.NewManual(at))
	events.Install(l, events.Producer{}, &events.Signer{KeyID: "KEY-ZC-TEST", PrivateKey: priv})
	if err := db.Write(ctx, func(tx *store.Tx) error {
		for _, ev := range evs {
			if _, err := l.Append(ctx, tx, ev); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestEventsTailAndStatus(t *testing.T) {
	dir := t.TempDir()
	appendEvents(t, dir,
		finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"},
		finality.Event{TxID: "TX-1", Type: finality.PreCheckPassed, StateFrom: "RECEIVED", StateTo: "PRECHECKED"},
		finality.Event{Type: finality.DnsIntradayCutoff, StateTo: "CUTOFF"},
	)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--data", dir, "events", "tail", "--from", "2"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("tail --from 2 printed %d lines:\n%s", len(lines), out.String())
	}
	var got []string
	for _, ln := range lines {
		var l struct {
			OutboxSeq int64          `json:"outbox_seq"`
			Sent      *bool          `json:"sent"`
			Signature string         `json:"signature"`
			Message   events.Message `json:"message"`
		}
		if err := json.Unmarshal([]byte(ln), &l); err != nil {
			t.Fatalf("%q: %v", ln, err)
		}
		if l.Sent == nil || *l.Sent {
			t.Errorf("outbox_seq %d: sent %v, want false (no publisher ran)", l.OutboxSeq, l.Sent)
		}
		if l.Signature != "valid" {
			t.Errorf("outbox_seq %d: signature %q, want valid", l.OutboxSeq, l.Signature)
		}
		got = append(got, l.Message.Name+"/"+l.Message.ChainID+"/"+strings.Repeat("#", int(l.Message.EventSeq)))
		if l.OutboxSeq != l.Message.Body.FinalitySeq {
			t.Errorf("outbox_seq %d, message finality seq %d", l.OutboxSeq, l.Message.Body.FinalitySeq)
		}
	}
	if strings.Join(got, " ") != "PreCheckPassed/TX-1/## DnsIntradayCutoff/GLOBAL/#" {
		t.Fatalf("tail printed %v", got)
	}

	out.Reset()
	if code := run(context.Background(), []string{"--data", dir, "events", "status"}, &out, &errb); code != 0 ||
		out.String() != "events 3, sent 0, unsent 3\nno publisher holds the lease, acknowledged through outbox_seq 0\n" {
		t.Fatalf("status exit %d: %q %s", code, out.String(), errb.String())
	}
}

// lockedBuffer is a bytes.Buffer the command writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls buf until it has n lines (or fails after 10 s).
func waitFor(t *testing.T, buf *lockedBuffer, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); strings.Count(buf.String(), "\n") < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited for %d lines, got:\n%s", n, buf.String())
		}
	}
}

func TestEventsTailFollow(t *testing.T) {
	dir := t.TempDir()
	appendEvents(t, dir, finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"})
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb lockedBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--data", dir, "events", "tail", "--follow", "--poll", "5ms"}, &out, &errb)
	}()
	waitFor(t, &out, 1)
	appendEvents(t, dir, finality.Event{TxID: "TX-1", Type: finality.Settled, StateTo: "SETTLED"})
	waitFor(t, &out, 2)
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if n := strings.Count(out.String(), "\n"); n != 2 || !strings.Contains(out.String(), `"name":"Settled"`) {
		t.Fatalf("follow printed:\n%s", out.String())
	}
}

func TestEventsUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"events"}, {"events", "nope"}, {"events", "publish"}, {"events", "tail", "extra"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"--data", dir}, args...), &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage: zcgw events") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

// publish against a broker without the topics stops at once, exit 1,
// naming the topic and --create-topics; with --create-topics it publishes
// the outbox (stopped by its context).
func TestEventsPublishMissingTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	broker := c.ListenAddrs()[0]
	dir := t.TempDir()
	appendEvents(t, dir, finality.Event{TxID: "TX-1", Type: finality.PaymentInitiated, StateTo: "RECEIVED"})
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if code := run(ctx, []string{"--data", dir, "events", "publish", "--brokers", broker, "--topic", "zc.cli"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "topic zc.cli does not exist") || !strings.Contains(errb.String(), "--create-topics") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx2, []string{"--data", dir, "events", "publish", "--brokers", broker, "--topic", "zc.cli", "--create-topics", "2"}, &out, &errb)
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var st, e bytes.Buffer
		run(context.Background(), []string{"--data", dir, "events", "status"}, &st, &e)
		if strings.Contains(st.String(), "unsent 0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not published: %s %s %s", st.String(), e.String(), errb.String())
		}
	}
	cancel2()
	if code := <-done; code != 0 || !strings.Contains(out.String(), "published 1 events") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
