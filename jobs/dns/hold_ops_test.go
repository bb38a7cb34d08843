package dns

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// heldCycle kicks and settles a cycle in which 001 (net -4000, BOJ 1000)
// is short: HOLD_ACTIVE with three transactions owned by the cycle.
func heldCycle(t *testing.T, e *env) (string, []string) {
	t.Helper()
	ctx := t.Context()
	txids := []string{
		e.settledTx(t, "EXPRESS", "001", "002", 5000, lane.Settled),
		e.settledTx(t, "EXPRESS", "003", "002", 2000, lane.Settled),
		e.settledTx(t, "EXPRESS", "002", "001", 1000, lane.Settled),
	}
	e.svc.Fund(ctx, "001", "JPY", 1000)
	e.svc.Fund(ctx, "003", "JPY", 5000)
	k, err := kickDay(ctx, e.svc, day)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := e.svc.Settle(ctx, k.Cycle.CycleID); err != nil || !s.Held {
		t.Fatalf("settle = %+v %v", s, err)
	}
	return k.Cycle.CycleID, txids
}

// TestHoldCycleCancelledReturnsTransactionsToZC: cancelling a held cycle
// (handoff #2's cancel path) moves no money, hands every transaction back
// to 'ZC' with dns_cycle_id cleared, records DnsCycleCancelled on the
// cycle's chain naming them, and the next cycle nets and settles them.
func TestHoldCycleCancelledReturnsTransactionsToZC(t *testing.T) {
	e := newEnv(t, 3)
	ctx := t.Context()
	id, txids := heldCycle(t, e)
	if _, err := e.svc.Cancel(ctx, id, "", "ops-1"); domainerr.Code(err) != "MISSING_FIELD" {
		t.Fatalf("cancel without reason: %v", err)
	}
	bojBefore := []int64{e.boj(t, "001"), e.boj(t, "002"), e.boj(t, "003")}
	r, err := e.svc.Cancel(ctx, id, "bridge liquidity refused", "ops-1")
	if err != nil || !r.Applied || r.Cycle.State != StateCancelled || r.Cycle.IgsMode != IgsNormal || r.Cycle.PublicMessageID != "" {
		t.Fatalf("cancel = %+v %v", r, err)
	}
	if len(r.Released) != 3 || r.Next.CycleID != "DNS-JPY-20261202-02" || r.Next.State != StateOpen {
		t.Fatalf("released %v next %+v", r.Released, r.Next)
	}
	for _, txid := range txids {
		if o, c := e.owner(t, txid); o != lane.OwnerZC || c != "" {
			t.Fatalf("%s after cancel: owner %s cycle %q", txid, o, c)
		}
	}
	if got := []int64{e.boj(t, "001"), e.boj(t, "002"), e.boj(t, "003")}; !reflect.DeepEqual(got, bojBefore) {
		t.Fatalf("cancel moved BOJ: %v -> %v", bojBefore, got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM DnsSettlementPostings WHERE cycle_id = ?`, id); n != 0 {
		t.Fatalf("%d postings for a cancelled cycle", n)
	}
	ev := e.events(t, id)
	if ev[len(ev)-1] != string(finality.DnsCycleCancelled) {
		t.Fatalf("chain of %s: %v", id, ev)
	}
	var payload string
	if err := e.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT payload_json FROM FinalityLog WHERE gtid = ? AND event_type = ?`, id, string(finality.DnsCycleCancelled)).Scan(&payload)
	}); err != nil {
		t.Fatal(err)
	}
	var p struct {
		TxIDs     []string `json:"txids"`
		OwnerFrom string   `json:"owner_from"`
		OwnerTo   string   `json:"owner_to"`
		Actor     string   `json:"actor"`
	}
	if err := json.Unmarshal([]byte(payload), &p); err != nil || len(p.TxIDs) != 3 || p.OwnerFrom != "CYCLE:"+id || p.OwnerTo != "ZC" || p.Actor != "ops-1" {
		t.Fatalf("DnsCycleCancelled payload %s (%v)", payload, err)
	}
	rep, err := finality.VerifyChain(ctx, e.db, id)
	if err != nil || !rep.OK() {
		t.Fatalf("chain %+v %v", rep, err)
	}

	before := e.dump(t)
	if again, err := e.svc.Cancel(ctx, id, "again", "ops-2"); err != nil || again.Applied {
		t.Fatalf("second cancel = %+v %v", again, err)
	}
	if e.dump(t) != before {
		t.Fatal("a second cancel changed rows")
	}
	if _, err := e.svc.Resume(ctx, id); domainerr.Code(err) != "INVALID_STATE" {
		t.Fatalf("resume of a cancelled cycle: %v", err)
	}

	// The next cycle takes them again and, funded, settles them.
	k, err := kickDay(ctx, e.svc, day)
	if err != nil || k.Cycle.CycleID != "DNS-JPY-20261202-02" || k.TxCount != 3 {
		t.Fatalf("next kick = %+v %v", k, err)
	}
	e.svc.Fund(ctx, "001", "JPY", 3000)
	if s, err := e.svc.Settle(ctx, k.Cycle.CycleID); err != nil || s.Held || s.Released != 3 {
		t.Fatalf("next settle = %+v %v", s, err)
	}
}

// TestHoldCycleFundedResumesAndSettles through the HTTP handler: fund
// without a bank covers each short debtor's gap and resumes (DnsResumed,
// DnsSettled, rows back to ZC); a settled or unknown-state cycle is
// refused and nothing is funded.
func TestHoldCycleFundedResumesAndSettles(t *testing.T) {
	e := newEnv(t, 3)
	id, txids := heldCycle(t, e)
	h := e.svc.Handler()
	call := func(path, body string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(body)))
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s: %s", path, rec.Body.String())
		}
		return rec.Code, out
	}
	if code, out := call("/internal/dns/fund", `{"cycle_id":"`+id+`","bank_id":"001"}`); code != 400 || out["reason_code"] != "MISSING_FIELD" {
		t.Fatalf("fund with a bank and no amount = %d %v", code, out)
	}
	code, out := call("/internal/dns/fund", `{"cycle_id":"`+id+`"}`)
	if code != 200 || out["state"] != "SETTLED" || out["applied"] != true {
		t.Fatalf("fund = %d %v", code, out)
	}
	if f, _ := json.Marshal(out["fundings"]); string(f) != `[{"amount":3000,"balance_after":4000,"bank_id":"001"}]` {
		t.Fatalf("fundings %s", f)
	}
	if got := e.boj(t, "001"); got != 0 {
		t.Fatalf("001 BOJ after settling its 4000 net debit: %d", got)
	}
	for _, txid := range txids {
		if o, _ := e.owner(t, txid); o != lane.OwnerZC {
			t.Fatalf("%s owner %s after resume", txid, o)
		}
	}
	ev := e.events(t, id)
	if !reflect.DeepEqual(ev[len(ev)-2:], []string{string(finality.DnsResumed), string(finality.DnsSettled)}) {
		t.Fatalf("chain %v", ev)
	}
	if code, out := call("/internal/dns/fund", `{"cycle_id":"`+id+`","bank_id":"001","amount":5}`); code != 409 && code != 400 || out["reason_code"] != "INVALID_STATE" {
		t.Fatalf("fund of a settled cycle = %d %v", code, out)
	}
	if got := e.boj(t, "001"); got != 0 {
		t.Fatalf("a refused fund moved BOJ: %d", got)
	}
	if code, out := call("/internal/dns/cancel", `{"cycle_id":"`+id+`","reason":"x","actor":"ops"}`); out["reason_code"] != "INVALID_STATE" {
		t.Fatalf("cancel of a settled cycle = %d %v", code, out)
	}
}
