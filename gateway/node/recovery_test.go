package node

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/store"
)

// TestRestartTakesBackItsWork: a node that died holding a work item (lease
// an hour away) and an in-progress name-check record is restarted on the
// same folder: the new start takes both back at once — the transfer
// settles and the record is answered — instead of waiting for the lease.
func TestRestartTakesBackItsWork(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	dir := scratch(t)
	n1, err := Start(ctx, Options{DataDir: dir, Config: &cfg, NoWorkers: true})
	if err != nil {
		t.Fatal(err)
	}
	a := n1.do(t, "POST", "/api/transfers", n1.Config.KeyFor("001"), nil, transferBody("restart-1", 1200, "h:001-0001", "h:002-0001"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	txid := a.field("txid")
	lease := clock.Stamp(time.Now().Add(time.Hour))
	if err := n1.DB.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE OrchestratorQueue SET status = 'CLAIMED', claimed_by = ?, next_attempt_at = ? WHERE txid = ?`,
			n1.ID.Owner("worker-1"), lease, txid)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	req := bankapi.NameCheckRequest{RequestIDValue: "TX:TX-9:name-check:ZC", TxID: "TX-9", AccountHash: "h:002-0001"}
	raw, _ := json.Marshal(req)
	key := "ZCREQ:002:" + req.RequestIDValue
	adb := n1.Banks["002"].Adapter.DB()
	if err := adb.Write(ctx, func(tx *store.Tx) error {
		if _, err := idem.New(clock.System{}, nil).Acquire(ctx, tx, key, append([]byte("name-check\n"), raw...)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO AdapterRequestClaims (key, command, body, owner, token, expires_at, created_at)
			VALUES (?, 'name-check', ?, ?, 'T-dead', ?, ?)`, key, string(raw), n1.ID.Owner("adapter-002"), lease, clock.Stamp(time.Now()))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := n1.Close(); err != nil {
		t.Fatal(err)
	}

	n2, err := Start(ctx, Options{DataDir: dir, Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	n2.waitState(t, txid, "SETTLED", 20*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var status string
		if err := n2.Banks["002"].Adapter.DB().Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, `SELECT status FROM IdempotencyKeys WHERE key = ?`, key).Scan(&status)
		}); err != nil {
			t.Fatal(err)
		}
		if status == idem.StatusDone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the earlier start's name-check record is still %s", status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
