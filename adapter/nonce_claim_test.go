package adapter

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
)

// serveClaimed serves one ingress request carrying a nonce claim of
// (KEY-ZC-1, nonce) and returns the answer and the claim.
func serveClaimed(t *testing.T, h *harness, nonce, path, body string) (*httptest.ResponseRecorder, *signing.NonceClaim) {
	t.Helper()
	c, err := signing.NewNonceClaim("KEY-ZC-1", nonce, h.clk)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req = req.WithContext(signing.WithNonceClaim(req.Context(), c))
	w := httptest.NewRecorder()
	h.a.Handler().ServeHTTP(w, req)
	return w, c
}

func nonceRows(t *testing.T, h *harness, nonce string) int {
	t.Helper()
	var n int
	if err := h.a.DB().Read(h.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(h.ctx, `SELECT COUNT(*) FROM IdempotencyKeys WHERE key = ?`, "sig:KEY-ZC-1:"+nonce).Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNonceClaimSharesTheCommandsCommit: a folding command consumes its
// nonce in its own transaction (one commit for both); every other answer
// (a non-folding command, a body that does not decode, a refused command)
// consumes it before answering, and a second use of the nonce runs nothing
// and answers nothing (the claim is refused back to the verifier).
func TestNonceClaimSharesTheCommandsCommit(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "佐藤 花子", 10_000)
	reserve := `{"request_id":"r1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"account_hash":"h:a"}`

	before := h.a.DB().Stats().Commits
	w, c := serveClaimed(t, h, "n-1", "/bank/001/zc-ingress/reserve-funds", reserve)
	if w.Code != 200 || !c.IsUsed() || c.Refused() != nil {
		t.Fatalf("reserve: %d %s, used %v, refused %v", w.Code, w.Body, c.IsUsed(), c.Refused())
	}
	if commits := h.a.DB().Stats().Commits - before; commits != 1 {
		t.Fatalf("reserve with its nonce took %d commits, want 1", commits)
	}
	if nonceRows(t, h, "n-1") != 1 {
		t.Fatal("the nonce is not in the adapter's database")
	}
	held := h.shadow("h:a").Holds

	// The same nonce again, even for another request_id: nothing runs,
	// nothing is answered, the claim comes back SIGNATURE_REPLAYED.
	again := strings.Replace(reserve, `"r1"`, `"r9"`, 1)
	w, c = serveClaimed(t, h, "n-1", "/bank/001/zc-ingress/reserve-funds", again)
	if w.Body.Len() != 0 || domainerr.Code(c.Refused()) != "SIGNATURE_REPLAYED" {
		t.Fatalf("replay: answered %d %q, refused %v", w.Code, w.Body, c.Refused())
	}
	if got := h.shadow("h:a").Holds; got != held {
		t.Fatalf("the replay changed the held amount %d -> %d", held, got)
	}

	for _, c := range []struct {
		name, nonce, path, body string
		status                  int
	}{
		{"non-folding command (name-check)", "n-2", "/bank/001/zc-ingress/name-check", `{"request_id":"r2","txid":"TX-1","account_hash":"h:a"}`, 200},
		{"body that does not decode", "n-3", "/bank/001/zc-ingress/reserve-funds", `{"request_id":"r3",`, 400},
		{"refused command (unknown account)", "n-4", "/bank/001/zc-ingress/execute-debit", `{"request_id":"r4","txid":"TX-4","amount":{"value":1,"currency":"JPY"},"decision_proof_ref":"DP","h_reservation":{"reservation_id":"RSV-NONE","mode":"RESERVED"},"lane":"EXPRESS"}`, 0},
		{"unknown command", "n-5", "/bank/001/zc-ingress/no-such-command", `{}`, 400},
	} {
		w, cl := serveClaimed(t, h, c.nonce, c.path, c.body)
		if (c.status != 0 && w.Code != c.status) || (c.status == 0 && w.Code < 400) || !cl.IsUsed() || cl.Refused() != nil {
			t.Errorf("%s: %d %s, used %v, refused %v", c.name, w.Code, w.Body, cl.IsUsed(), cl.Refused())
		}
		if nonceRows(t, h, c.nonce) != 1 {
			t.Errorf("%s: the nonce was not consumed", c.name)
		}
		w, cl = serveClaimed(t, h, c.nonce, c.path, c.body)
		if w.Body.Len() != 0 || domainerr.Code(cl.Refused()) != "SIGNATURE_REPLAYED" {
			t.Errorf("%s, replayed: answered %d %q, refused %v", c.name, w.Code, w.Body, cl.Refused())
		}
	}
}

// TestHandlerWithoutClaimIsUnchanged: called without a verifier in front
// (no claim), the handler consumes no nonce and answers as before.
func TestHandlerWithoutClaimIsUnchanged(t *testing.T) {
	h := newHarness(t)
	h.account("h:a", "0000001", "佐藤 花子", 10_000)
	req := httptest.NewRequest("POST", "/bank/001/zc-ingress/reserve-funds",
		strings.NewReader(`{"request_id":"r1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"account_hash":"h:a"}`))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.a.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var n int
	if err := h.a.DB().Read(h.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(h.ctx, `SELECT COUNT(*) FROM IdempotencyKeys WHERE key LIKE 'sig:%'`).Scan(&n)
	}); err != nil || n != 0 {
		t.Fatalf("%d nonce rows, err %v", n, err)
	}
	if _, ok := h.a.Handler().(signing.NonceConsumer); !ok {
		t.Fatal("the adapter's handler does not declare that it consumes nonce claims")
	}
}
