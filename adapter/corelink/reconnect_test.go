package corelink

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
)

// A connection that broke under the link (the broker closed it) is
// replaced on the next session, once, with the core's queues declared
// again; after Close the link does not connect again.
func TestLinkReconnectsABrokenConnection(t *testing.T) {
	ctx := context.Background()
	l, err := Open(ctx, Config{Bank: "001", Transport: embedded.New(filepath.Join(t.TempDir(), "mq.db"), embedded.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	old := l.connection()
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := l.session(ctx)
	if err != nil {
		t.Fatalf("session after the connection broke: %v", err)
	}
	if l.connection() == old {
		t.Fatal("the link kept its broken connection")
	}
	req := &mq.Message{Body: []byte("x")}
	if err := s.Put(ctx, l.cfg.RequestQueue, req); err != nil {
		t.Fatalf("put on the new connection: %v", err)
	}
	if err := s.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.session(ctx); err == nil {
		t.Fatal("a closed link opened a session")
	}
}
