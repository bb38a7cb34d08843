package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/signing"
)

// serve runs f's server on a loopback port until the test ends.
func (f *fixture) serve(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func (f *fixture) signedIngress(t *testing.T, client *http.Client, addr, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+"/bank/001/zc-ingress/reserve-funds", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h, err := signing.Ed25519Signer{KeyID: "KEY-ZC-1", PrivateKey: f.zcPriv, Clock: f.clk}.Sign("POST", "/bank/001/zc-ingress/reserve-funds", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for k := range h {
		req.Header.Set(k, h.Get(k))
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("signed ingress request: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Slow bodies (issue 10 item 1): many connections send the headers and
// most of a 1 MB ingress body, then stall. The server holds at most
// MaxUnauthenticatedBodies of them (the rest are answered 503 at once and
// closed), each for at most BodyReadTimeout: heap and goroutines stay
// bounded, return to the baseline while the stalled clients still hold
// their sockets, and a normal signed request still succeeds.
func TestSlowBodiesAreBounded(t *testing.T) {
	const (
		conns    = 150
		declared = 1 << 20
		sent     = 900 << 10
		slots    = 8
	)
	f := newFixture(t, func(c *Config) {
		c.BodyReadTimeout = 300 * time.Millisecond
		c.MaxUnauthenticatedBodies = slots
	})
	addr := f.serve(t)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if st, b := f.signedIngress(t, client, addr, `{"request_id":"warm"}`); st != 200 {
		t.Fatalf("warm-up: %d %s", st, b)
	}
	baseG, baseHeap := runtime.NumGoroutine(), heapInuse()

	// Headers pass every header-only check (a real key id, a fresh time,
	// a well-formed signature); the body never completes.
	sigBody := `{"request_id":"stalled"}`
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "POST /bank/001/zc-ingress/reserve-funds HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", addr, declared)
	for k, v := range f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, sigBody) {
		fmt.Fprintf(&hdr, "%s: %s\r\n", k, v)
	}
	hdr.WriteString("\r\n")
	payload := append([]byte(hdr.String()), bytes.Repeat([]byte("a"), sent)...)
	var (
		mu      sync.Mutex
		sockets []net.Conn
		wg      sync.WaitGroup
	)
	t.Cleanup(func() {
		for _, c := range sockets {
			c.Close()
		}
	})
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			mu.Lock()
			sockets = append(sockets, c)
			mu.Unlock()
			c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			c.Write(payload) // a shed connection may be reset mid-write
		}()
	}
	wg.Wait()

	// Poll (not a speed assertion: the bound is generous) until the
	// server has let go of every stalled connection, tracking the peak
	// live heap on the way.
	var peak uint64
	deadline := time.Now().Add(15 * time.Second)
	for {
		if h := heapInuse(); h > baseHeap && h-baseHeap > peak {
			peak = h - baseHeap
		}
		g := runtime.NumGoroutine()
		if g <= baseG+10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines (baseline %d) still held by %d stalled connections; peak heap +%d MiB", g, baseG, conns, peak>>20)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// At most `slots` bodies of ~1 MiB are ever held at once.
	if limit := uint64(4*slots) << 20; peak > limit {
		t.Fatalf("peak heap +%d MiB with %d stalled connections, want ≤ %d MiB", peak>>20, conns, limit>>20)
	}
	if f.srv.metrics.bodiesShed.Load() == 0 {
		t.Errorf("no request shed with %d stalled connections and %d slots", conns, slots)
	}
	// The stalled clients still hold their sockets; the coordinator's
	// next signed request is served.
	if st, b := f.signedIngress(t, client, addr, `{"request_id":"after"}`); st != 200 || !strings.Contains(b, "RESERVED") {
		t.Fatalf("normal request during the attack: %d %s", st, b)
	}
}

// A shed request is 503 RATE_LIMITED with Retry-After, in the catalog shape.
func TestIngressShedsWhenBodySlotsAreFull(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxUnauthenticatedBodies = 1 })
	f.srv.bodySlots <- struct{}{} // one body is being read
	body := `{"request_id":"r1"}`
	r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, body), body)
	if r.status != 503 || r.code(t) != "RATE_LIMITED" || r.header.Get("Retry-After") != "1" || f.bank.count() != 0 {
		t.Fatalf("full: %d %v %s", r.status, r.header, r.body)
	}
	<-f.srv.bodySlots
	if r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, body), body); r.status != 200 {
		t.Fatalf("slot free again: %d %s", r.status, r.body)
	}
	if len(f.srv.bodySlots) != 0 {
		t.Fatalf("%d body slots still held after the request", len(f.srv.bodySlots))
	}
	// Refused from the headers alone: no slot is taken, no body read.
	f.srv.bodySlots <- struct{}{}
	if r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", map[string]string{"X-ZC-Key-Id": "KEY-ZC-1", "X-ZC-Sig-Nonce": "n",
		"X-ZC-Sig-Time": "2026-12-02T01:00:00Z", "X-ZC-Signature": "AAAA"}, body); r.status != 401 || r.code(t) != "INVALID_SIGNATURE" {
		t.Fatalf("malformed signature header: %d %s", r.status, r.body)
	}
}

// A 900 KiB header block is refused (431), a normal one served.
func TestHeaderSizeIsBounded(t *testing.T) {
	f := newFixture(t, nil)
	addr := f.serve(t)
	status := func(extra int) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		req := fmt.Sprintf("GET /api/banks HTTP/1.1\r\nHost: %s\r\nX-Api-Key: %s\r\nX-Pad: %s\r\nConnection: close\r\n\r\n", addr, key001, strings.Repeat("p", extra))
		go c.Write([]byte(req))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatalf("reading the status line: %v", err)
		}
		return strings.TrimSpace(line)
	}
	if got := status(900 << 10); !strings.HasPrefix(got, "HTTP/1.1 431") {
		t.Errorf("900 KiB header: %q", got)
	}
	if got := status(8 << 10); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Errorf("8 KiB header: %q", got)
	}
}

// Strict JSON and 415 on every JSON write route (issue 10 item 3).
func TestStrictJSONAndMediaType(t *testing.T) {
	f := newFixture(t, nil)
	p1 := map[string]string{"X-Api-Key": key001}
	valid := `{"lane":"EXPRESS","amount":{"value":1200,"currency":"JPY"},"payer":{"bank_id":"001","account_hash":"h:a"},` +
		`"payee":{"bank_id":"002","account_hash":"h:b"},"purpose":"P2P","schema_version":"1.1","idempotency_key":"KEY"}`
	for _, c := range []struct {
		name, body, problem, field string
	}{
		{"duplicate key, last would win", strings.Replace(valid, `"lane":"EXPRESS"`, `"lane":"EXPRESS","lane":"NORMAL"`, 1), "duplicate_key", "/lane"},
		{"duplicate nested key", strings.Replace(valid, `"value":1200`, `"value":1,"value":1200`, 1), "duplicate_key", "/amount/value"},
		{"field name in another case", strings.Replace(valid, `"amount"`, `"Amount"`, 1), "key_case_mismatch", "/Amount"},
		{"nested field name in another case", strings.Replace(valid, `"payer":{"bank_id"`, `"payer":{"Bank_ID"`, 1), "key_case_mismatch", "/payer/Bank_ID"},
		{"invalid UTF-8", strings.Replace(valid, `"P2P"`, "\"P2\xffP\"", 1), "invalid_utf8", ""},
		{"unpaired surrogate", strings.Replace(valid, `"P2P"`, `"\ud800"`, 1), "unpaired_surrogate", ""},
		{"trailing data", valid + `{}`, "trailing_data", ""},
	} {
		r := f.do("POST", "/api/transfers", p1, c.body)
		d, _ := r.json(t)["details"].(map[string]any)
		if r.status != 400 || r.code(t) != "INVALID_REQUEST" || d["problem"] != c.problem || d["field"] != c.field || d["byte_offset"] == nil {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
	}
	if len(f.coord.submits) != 0 {
		t.Fatalf("refused bodies reached the coordinator: %v", f.coord.submits)
	}
	ops := map[string]string{"X-Api-Key": keyOps}
	part := `{"bank_id":"009","bank_name":"Bank 009","is_active":true}`
	ingressBody := `{"request_id":"r1"}`
	routes := []struct {
		method, path string
		hdr          map[string]string
		body         string
	}{
		{"POST", "/api/transfers", p1, valid},
		{"POST", "/api/participants", ops, part},
		{"PUT", "/api/participants/001", ops, part},
		{"POST", "/bank/001/zc-ingress/reserve-funds", nil, ingressBody},
	}
	for _, rt := range routes {
		for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded", "application/json; charset=latin-1", "application/jsonp"} {
			hdr := merge(rt.hdr, map[string]string{"Content-Type": ct})
			if strings.HasPrefix(rt.path, "/bank/") {
				hdr = merge(hdr, f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, rt.body))
			}
			r := f.do(rt.method, rt.path, hdr, rt.body)
			if r.status != 415 || r.code(t) != "INVALID_REQUEST" || r.json(t)["details"].(map[string]any)["accepted"] != "application/json" {
				t.Errorf("%s %s with Content-Type %q: %d %s", rt.method, rt.path, ct, r.status, r.body)
			}
		}
	}
	if len(f.coord.submits) != 0 || f.bank.count() != 0 {
		t.Fatalf("a 415 reached the coordinator or the bank: %v / %d", f.coord.submits, f.bank.count())
	}
	// charset=utf-8 is JSON.
	if r := f.do("POST", "/api/transfers", merge(p1, map[string]string{"Content-Type": "application/json; charset=UTF-8"}), valid); r.status != 201 {
		t.Errorf("charset=utf-8: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", merge(f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, ingressBody),
		map[string]string{"Content-Type": "application/json;charset=utf-8"}), ingressBody); r.status != 200 {
		t.Errorf("ingress charset=utf-8: %d %s", r.status, r.body)
	}
	// A signed ingress body with a repeated key is refused before the adapter.
	dup := `{"request_id":"r2","request_id":"r3"}`
	if r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, `{"request_id":"r3"}`), dup); r.status != 401 || f.bank.count() != 1 {
		t.Errorf("ingress duplicate key: %d %s", r.status, r.body)
	}
}

// Revocation through the ingress (issue 10 item 5): a key revoked at R
// does not verify a request received after R whose signing time was set
// back before R.
func TestIngressRevocationAtReceiveTime(t *testing.T) {
	f := newFixture(t, nil)
	body := `{"request_id":"r1"}`
	if err := f.reg.Revoke(f.ctx, "KEY-ZC-1", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	f.clk.Set(t0.Add(2 * time.Minute))
	r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, body), body)
	if r.status != 401 || r.json(t)["details"].(map[string]any)["cause"] != "KEY_REVOKED" || f.bank.count() != 0 {
		t.Fatalf("backdated signature after revocation: %d %s", r.status, r.body)
	}
}

// ZC_ALLOW_UNAUTHENTICATED_UI (issue 10 item 7): loopback peers only, the
// Host must be this node's address (DNS rebinding), reads only.
func TestUnauthenticatedUIIsLocalAndReadOnly(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.AllowUnauthenticatedUI = true
		c.UIHosts = []string{"127.0.0.1:8080", "localhost:8080"}
	})
	site := map[string]string{"Sec-Fetch-Site": "same-origin"}
	read := merge(site, map[string]string{"X-Purpose-Code": "P01"})
	transfer := `{"lane":"EXPRESS","amount":{"value":1200,"currency":"JPY"},"payer":{"bank_id":"001","account_hash":"h:a"},` +
		`"payee":{"bank_id":"002","account_hash":"h:b"},"purpose":"P2P","schema_version":"1.1","idempotency_key":"ui-1"}`
	for _, c := range []struct {
		name, remote, method, url string
		hdr                       map[string]string
		body                      string
		status                    int
	}{
		{"Sec-Fetch-Site from a remote peer", "198.51.100.7:40000", "GET", "http://127.0.0.1:8080/api/banks", site, "", 401},
		{"Sec-Fetch-Site from a remote peer, Host spoofed too", "198.51.100.7:40000", "GET", "http://localhost:8080/api/transactions/TX-1", read, "", 401},
		{"DNS rebinding: loopback peer, foreign Host", "127.0.0.1:40000", "GET", "http://rebind.example:8080/api/banks",
			map[string]string{"Origin": "http://rebind.example:8080"}, "", 401},
		{"loopback peer, Host of another port", "127.0.0.1:40000", "GET", "http://127.0.0.1:9999/api/banks", site, "", 401},
		{"transfer through the UI", "127.0.0.1:40000", "POST", "http://127.0.0.1:8080/api/transfers", site, transfer, 401},
		{"participant write through the UI", "127.0.0.1:40000", "POST", "http://localhost:8080/api/participants", site, `{"bank_id":"009","bank_name":"x"}`, 401},
		{"local read", "127.0.0.1:40000", "GET", "http://127.0.0.1:8080/api/banks", site, "", 200},
		{"local operator read", "[::1]:40000", "GET", "http://localhost:8080/api/transactions/TX-1", read, "", 200},
	} {
		r := f.doFrom(c.remote, c.method, c.url, c.hdr, c.body)
		if r.status != c.status || (c.status == 401 && r.code(t) != "UNAUTHORIZED") {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
		}
	}
	if len(f.coord.submits) != 0 {
		t.Fatalf("the UI originated a transfer: %v", f.coord.submits)
	}
	// Serve derives the hosts from its listener.
	for addr, want := range map[string]string{"127.0.0.1:8080": "localhost:8080", "0.0.0.0:18080": "127.0.0.1:18080", "[::1]:80": "[::1]:80", "10.0.0.5:8080": ""} {
		a, _ := net.ResolveTCPAddr("tcp", addr)
		got := strings.Join(loopbackHosts(a), " ")
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("loopbackHosts(%s) = %q, want it to hold %q", addr, got, want)
		}
	}
}

// Existence (issue 10 item 9): for an unverified request the ingress
// answers a bank no adapter serves exactly like a served bank: same
// status, same body bytes.
func TestIngressHidesWhichBanksExist(t *testing.T) {
	f := newFixture(t, nil)
	body := `{"request_id":"r1","txid":"TX-1"}`
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	sign := func(path string, priv ed25519.PrivateKey, keyID string, at time.Time) map[string]string {
		h, err := signing.Ed25519Signer{KeyID: keyID, PrivateKey: priv, Clock: clock.NewManual(at)}.Sign("POST", path, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for k := range h {
			m[k] = h.Get(k)
		}
		return m
	}
	for _, c := range []struct {
		name string
		hdr  func(path string) map[string]string
	}{
		{"unsigned", func(string) map[string]string { return nil }},
		{"forged signature", func(p string) map[string]string { return sign(p, otherPriv, "KEY-ZC-1", t0) }},
		{"malformed signature header", func(p string) map[string]string {
			return merge(sign(p, otherPriv, "KEY-ZC-1", t0), map[string]string{"X-ZC-Signature": "AAAA"})
		}},
		{"unknown key", func(p string) map[string]string { return sign(p, otherPriv, "KEY-NOPE", t0) }},
		{"skewed", func(p string) map[string]string { return sign(p, f.zcPriv, "KEY-ZC-1", t0.Add(-time.Hour)) }},
		{"wrong media type", func(p string) map[string]string {
			return merge(sign(p, f.zcPriv, "KEY-ZC-1", t0), map[string]string{"Content-Type": "text/plain"})
		}},
	} {
		var answers [2]resp
		for i, bank := range []string{"001", "999"} {
			path := "/bank/" + bank + "/zc-ingress/reserve-funds"
			answers[i] = f.do("POST", path, merge(c.hdr(path), map[string]string{"X-Request-Id": "probe-1"}), body)
		}
		known, unknown := answers[0], answers[1]
		if known.status < 400 || known.status != unknown.status || !bytes.Equal(known.body, unknown.body) {
			t.Errorf("%s: served bank %d %s / unknown bank %d %s", c.name, known.status, known.body, unknown.status, unknown.body)
		}
		if bytes.Contains(unknown.body, []byte("PARTICIPANT_NOT_FOUND")) {
			t.Errorf("%s: the unknown bank is named: %s", c.name, unknown.body)
		}
	}
}

// The body deadline covers the body only: a bank handler that runs longer
// than BodyReadTimeout after its body was read keeps a live context and
// its answer reaches the coordinator (a deadline on the whole request, or
// a context timeout, would cut it).
func TestBodyDeadlineDoesNotReachLongHandlers(t *testing.T) {
	var ctxErr error
	f := newFixture(t, func(c *Config) {
		c.BodyReadTimeout = 100 * time.Millisecond
		c.Banks = map[string]http.Handler{"001": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			time.Sleep(400 * time.Millisecond)
			ctxErr = r.Context().Err()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"result":"RESERVED","reservation_ref":"H-1"}`)
		})}
	})
	addr := f.serve(t)
	client := &http.Client{Timeout: 10 * time.Second}
	if st, b := f.signedIngress(t, client, addr, `{"request_id":"slow-handler"}`); st != 200 || ctxErr != nil {
		t.Fatalf("long handler: %d %s, context %v", st, b, ctxErr)
	}
}
