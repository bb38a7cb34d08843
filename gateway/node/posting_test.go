package node

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store"
)

// corePosting reads QueryResponse.core_posting of a transfer.
func (n *Node) corePosting(t *testing.T, txid string) (a, b string) {
	t.Helper()
	r := n.do(t, "GET", "/api/transactions/"+txid, n.Config.KeyFor("001"), map[string]string{"X-Purpose-Code": "P01"}, "")
	var q struct {
		CorePosting *struct{ A, B string } `json:"core_posting"`
	}
	if err := json.Unmarshal(r.body, &q); err != nil || r.status != 200 || q.CorePosting == nil {
		t.Fatalf("query %s: %d %s", txid, r.status, r.body)
	}
	return q.CorePosting.A, q.CorePosting.B
}

// waitPosting polls until both legs' core posting statuses are a and b.
func (n *Node) waitPosting(t *testing.T, txid, wantA, wantB string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, b := n.corePosting(t, txid)
		if a == wantA && b == wantB {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s core_posting a=%s b=%s, want a=%s b=%s", txid, a, b, wantA, wantB)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// QueryResponse.core_posting tells "settled at ZC" from "landed at the
// core": both legs APPLIED once the outboxes drained, and the payer's leg
// BLOCKED when its core refuses the debit (the core's balance was taken
// out of band, so ZC settles on the shadow ledger but the core says no).
func TestQueryShowsEachLegsCorePosting(t *testing.T) {
	n := start(t)
	ctx := context.Background()
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("post-1", 900, "h:001-0001", "h:002-0001"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	ok := a.field("txid")
	n.waitState(t, ok, "SETTLED", 20*time.Second)
	n.waitPosting(t, ok, "APPLIED", "APPLIED")

	payerCore := n.Config.Banks[0].Accounts[1].CoreAccount
	bal := n.coreBalance(t, "001", payerCore)
	if err := n.Banks["001"].Core.AdjustBalanceOutOfBand(ctx, payerCore, -bal); err != nil {
		t.Fatal(err)
	}
	a = n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("post-2", 900, n.Config.Banks[0].Accounts[1].Hash, "h:002-0001"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	refused := a.field("txid")
	n.waitState(t, refused, "SETTLED", 20*time.Second)
	n.waitPosting(t, refused, "BLOCKED", "APPLIED")
	if got := n.coreBalance(t, "001", payerCore); got != 0 {
		t.Errorf("refused payer core balance %d, want 0 (nothing posted)", got)
	}
	// Each leg's landing is an event on the transfer's chain, in the event
	// outbox (for Kafka), once per posting.
	n.waitPostingEvents(t, ok, map[string]string{"001/DEBIT": "CorePostingApplied", "002/CREDIT": "CorePostingApplied"})
	n.waitPostingEvents(t, refused, map[string]string{"001/DEBIT": "CorePostingBlocked", "002/CREDIT": "CorePostingApplied"})
	// The events do not make the read model look stale.
	if f, _ := n.freshness(t, ok); f != "GREEN" {
		t.Errorf("freshness after the posting events: %s", f)
	}
}

// waitPostingEvents polls until the txid's chain holds exactly the want
// core posting events ("bank/kind" -> event type), each also in the event
// outbox.
func (n *Node) waitPostingEvents(t *testing.T, txid string, want map[string]string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := map[string]string{}
		var rows, outboxed int
		if err := n.DB.Read(ctx, func(tx *store.Tx) error {
			rs, err := tx.QueryContext(ctx, `SELECT json_extract(f.payload_json, '$.bank_id') || '/' || json_extract(f.payload_json, '$.kind'),
				f.event_type, (SELECT COUNT(*) FROM EventOutbox e WHERE e.log_id = f.log_id)
				FROM FinalityLog f WHERE f.txid = ? AND f.event_type LIKE 'CorePosting%'`, txid)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				var k, typ string
				var in int
				if err := rs.Scan(&k, &typ, &in); err != nil {
					return err
				}
				got[k] = typ
				rows++
				outboxed += in
			}
			return rs.Err()
		}); err != nil {
			t.Fatal(err)
		}
		if rows == len(want) && outboxed == rows && fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s core posting events %v (%d rows, %d in the event outbox), want %v", txid, got, rows, outboxed, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
