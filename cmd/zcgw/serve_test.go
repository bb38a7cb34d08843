package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/gateway/node"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// zcgw serve starts a node, answers over HTTP with the credentials it wrote
// to node.json, and exits 0 after draining when its context ends.
func TestServeStartsAndDrains(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuf{}, &syncBuf{}
	code := make(chan int, 1)
	go func() { code <- run(ctx, []string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, out, errOut) }()
	re := regexp.MustCompile(`serving on (http://[0-9.:]+)`)
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %s %s", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cfg, err := node.LoadOrInitConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", url+"/api/banks", nil)
	req.Header.Set("X-Api-Key", cfg.KeyFor("001"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("X-Request-Id") == "" {
		t.Fatalf("GET /api/banks: %d", res.StatusCode)
	}
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d: %s", c, errOut.String())
	}
	for _, f := range []string{node.ConfigFile, node.SigningKeyFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v: secrets must be 0600", f, st.Mode())
		}
	}
}
