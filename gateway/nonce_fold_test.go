package gateway

import (
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/store"
)

// TestIngressNonceFoldedIntoTheAdapter: in front of an adapter the nonce
// is consumed in the adapter's database, in the command's transaction.
// The same signed request from 16 goroutines is applied once: one 200,
// fifteen 401 INVALID_SIGNATURE with cause SIGNATURE_REPLAYED, one hold,
// one nonce row in the adapter's database and none in the verifier's.
// A command the adapter refuses still consumes its nonce, and a replay of
// it is refused as a replay.
func TestIngressNonceFoldedIntoTheAdapter(t *testing.T) {
	var a *adapter.Adapter
	f := newFixture(t, func(cfg *Config) {
		var err error
		a, err = adapter.Open(t.Context(), adapter.Config{BankID: "001", DBPath: filepath.Join(t.TempDir(), "adapter.db"),
			RealTime: true, Clock: cfg.Clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		cfg.Banks = map[string]http.Handler{"001": a.Handler()}
	})
	if _, err := a.InitializeBank(f.ctx, bankapi.InitializeBankRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := a.OpenAccount(f.ctx, adapter.Account{Hash: "h:a", CoreAccount: "0000001", HolderName: "A"}, 1_000_000); err != nil {
		t.Fatal(err)
	}
	count := func(db *store.DB, q string, args ...any) int {
		var n int
		if err := db.Read(f.ctx, func(tx *store.Tx) error { return tx.QueryRowContext(f.ctx, q, args...).Scan(&n) }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	body := `{"request_id":"r1","txid":"TX-1","amount":{"value":1200,"currency":"JPY"},"account_hash":"h:a"}`
	hdr := f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, body)
	const n = 16
	statuses := make([]resp, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = f.do("POST", "/bank/001/zc-ingress/reserve-funds", hdr, body)
		}()
	}
	wg.Wait()
	ok, replayed := 0, 0
	for _, r := range statuses {
		switch {
		case r.status == 200:
			ok++
		case r.status == 401 && r.code(t) == "INVALID_SIGNATURE" && r.json(t)["details"].(map[string]any)["cause"] == "SIGNATURE_REPLAYED":
			replayed++
		default:
			t.Errorf("unexpected answer %d %s", r.status, r.body)
		}
	}
	if ok != 1 || replayed != n-1 {
		t.Fatalf("%d accepted, %d refused as replays; want 1 and %d", ok, replayed, n-1)
	}
	if h := count(a.DB(), `SELECT COUNT(*) FROM AdapterHolds`); h != 1 {
		t.Fatalf("%d holds, want 1", h)
	}
	nonceKey := "sig:KEY-ZC-1:" + hdr["X-Zc-Sig-Nonce"]
	if c := count(a.DB(), `SELECT COUNT(*) FROM IdempotencyKeys WHERE key = ?`, nonceKey); c != 1 {
		t.Fatalf("%d nonce rows for %s in the adapter's database, want 1", c, nonceKey)
	}
	if c := count(f.db, `SELECT COUNT(*) FROM IdempotencyKeys WHERE key LIKE 'sig:%'`); c != 0 {
		t.Fatalf("%d nonce rows in the verifier's own store, want 0", c)
	}

	// A refused command (wrong currency) consumes its nonce all the same.
	bad := `{"request_id":"r2","txid":"TX-2","amount":{"value":1200,"currency":"USD"},"account_hash":"h:a"}`
	badHdr := f.ingressHeaders("KEY-ZC-1", f.zcPriv, t0, bad)
	if r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", badHdr, bad); r.status != 400 || r.code(t) != "INVALID_CURRENCY" {
		t.Fatalf("USD reserve: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/bank/001/zc-ingress/reserve-funds", badHdr, bad); r.status != 401 || r.json(t)["details"].(map[string]any)["cause"] != "SIGNATURE_REPLAYED" {
		t.Fatalf("replay of a refused command: %d %s", r.status, r.body)
	}
	if h := count(a.DB(), `SELECT COUNT(*) FROM AdapterHolds`); h != 1 {
		t.Fatalf("%d holds after the refusals, want 1", h)
	}
}
