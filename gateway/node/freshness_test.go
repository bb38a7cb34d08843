package node

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// freshness reads a transfer's QueryResponse freshness_level and shards.
func (n *Node) freshness(t *testing.T, txid string) (string, map[string]int64) {
	t.Helper()
	a := n.do(t, "GET", "/api/transactions/"+txid, n.Config.KeyFor("001"), map[string]string{"X-Purpose-Code": "P01"}, "")
	var q struct {
		Freshness string `json:"freshness_level"`
		Detail    struct {
			Shards map[string]int64 `json:"shards"`
		} `json:"watermark_detail"`
	}
	if err := json.Unmarshal(a.body, &q); err != nil || a.status != 200 {
		t.Fatalf("query %s: %d %s", txid, a.status, a.body)
	}
	return q.Freshness, q.Detail.Shards
}

// freshness_level measures how far the derived row lags its chain's tip
// (001 §13.6): a settled transfer is GREEN however old; a FinalityLog
// entry the Transactions row has not caught up with makes it YELLOW at
// 10s of lag and RED at PR-FRESHNESS-RED (60s).
func TestFreshnessComesFromReadModelLag(t *testing.T) {
	n := start(t)
	ctx := context.Background()
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("fresh-1", 700, "h:001-0001", "h:002-0001"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	txid := a.field("txid")
	n.waitState(t, txid, "SETTLED", 20*time.Second)
	if f, _ := n.freshness(t, txid); f != "GREEN" {
		t.Fatalf("settled transfer: %s, want GREEN", f)
	}
	// Each leg's CorePostingApplied entry touches the row's updated_at:
	// wait for both, so the lag below is measured from the row's last
	// update.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var landed int
		if err := n.DB.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND event_type = ?`,
				txid, string(finality.CorePostingApplied)).Scan(&landed)
		}); err != nil {
			t.Fatal(err)
		}
		if landed == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 CorePostingApplied entries after 20s", landed)
		}
	}
	var updated string
	if err := n.DB.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT updated_at FROM Transactions WHERE txid = ?`, txid).Scan(&updated)
	}); err != nil {
		t.Fatal(err)
	}
	u, err := clock.ParseStamp(updated)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lag  time.Duration
		want string
	}{{9 * time.Second, "GREEN"}, {10 * time.Second, "YELLOW"}, {59 * time.Second, "YELLOW"}, {60 * time.Second, "RED"}} {
		// The authoritative log gains an entry the derived row has not
		// seen, stamped lag after the row's updated_at.
		log := finality.New(clock.NewManual(u.Add(c.lag)))
		if err := n.DB.Write(ctx, func(tx *store.Tx) error {
			_, err := log.Append(ctx, tx, finality.Event{TxID: txid, Type: finality.ClosedDomainAccessGranted, StateFrom: "SETTLED",
				StateTo: "SETTLED", Payload: map[string]any{"test": "lag"}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if f, _ := n.freshness(t, txid); f != c.want {
			t.Errorf("lag %s: %s, want %s", c.lag, f, c.want)
		}
	}
}
