package node

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway"
)

// globalEvents lists the GLOBAL chain's event types and how many of them
// have their EventOutbox row (the Kafka fan-out).
func globalEvents(t *testing.T, db *store.DB) (types []string, inOutbox int) {
	t.Helper()
	ctx := context.Background()
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT event_type FROM FinalityLog WHERE txid IS NULL AND gtid IS NULL ORDER BY event_seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return err
			}
			types = append(types, s)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM EventOutbox WHERE chain_id = 'GLOBAL'`).Scan(&inOutbox)
	})
	if err != nil {
		t.Fatal(err)
	}
	return types, inOutbox
}

// BCP on then off through the operator routes: transfers are refused with
// SYSTEM_BCP_READ_ONLY and then accepted again, queries keep working, and
// the two GLOBAL-chain events exist (with their outbox rows) and verify.
func TestBCPThroughTheRoutesRefusesThenAcceptsWrites(t *testing.T) {
	n := start(t)
	sec := map[string]string{gateway.HeaderCronSecret: n.Config.CronSecret}
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("bcp-0", 700, "h:001-0001", "h:002-0001"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	txid := a.field("txid")
	n.waitState(t, txid, "SETTLED", 20*time.Second)

	if r := n.do(t, "POST", "/internal/system-mode/bcp-activate", "", sec, `{"operator":"ops-1"}`); r.status != 400 || r.field("reason_code") != "MISSING_FIELD" {
		t.Fatalf("activate without reason: %d %s", r.status, r.body)
	}
	if r := n.do(t, "POST", "/internal/system-mode/bcp-activate", "", sec, `{"operator":"ops-1","reason":"core vendor outage"}`); r.status != 200 {
		t.Fatalf("activate: %d %s", r.status, r.body)
	}
	r := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("bcp-1", 700, "h:001-0001", "h:002-0001"))
	if r.status != 502 || r.field("reason_code") != "SYSTEM_BCP_READ_ONLY" {
		t.Fatalf("POST in BCP: %d %s", r.status, r.body)
	}
	if q := n.do(t, "GET", "/api/transactions/"+txid, n.Config.KeyFor("001"), map[string]string{"X-Purpose-Code": "P01"}, ""); q.status != 200 || q.field("state") != "SETTLED" {
		t.Fatalf("GET in BCP: %d %s", q.status, q.body)
	}
	m := n.do(t, "GET", "/internal/system-mode", "", sec, "")
	if m.status != 200 || !strings.Contains(string(m.body), `"actor":"ops-1"`) || !strings.Contains(string(m.body), `"reason":"core vendor outage"`) {
		t.Fatalf("GET system-mode: %d %s", m.status, m.body)
	}
	if r := n.do(t, "POST", "/internal/system-mode/bcp-deactivate", "", sec, `{"operator":"ops-2","reason":"vendor back"}`); r.status != 200 {
		t.Fatalf("deactivate: %d %s", r.status, r.body)
	}
	if r := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("bcp-2", 700, "h:001-0001", "h:002-0001")); r.status != 201 {
		t.Fatalf("POST after BCP: %d %s", r.status, r.body)
	}
	types, outboxed := globalEvents(t, n.DB)
	if strings.Join(types, " ") != "SystemBcpActivated SystemBcpDeactivated" || outboxed != 2 {
		t.Fatalf("GLOBAL chain %v (%d in EventOutbox)", types, outboxed)
	}
	if v, err := finality.VerifyChain(context.Background(), n.DB, finality.GlobalChain); err != nil || !v.OK() || v.Entries != 2 {
		t.Fatalf("GLOBAL verify %+v %v", v, err)
	}
}

// /readyz on a running node lists every dependency; /healthz is alive.
func TestNodeReadiness(t *testing.T) {
	n := start(t)
	if h := n.do(t, "GET", "/healthz", "", nil, ""); h.status != 200 {
		t.Fatalf("healthz %d %s", h.status, h.body)
	}
	a := n.do(t, "GET", "/readyz", "", nil, "")
	var body gateway.Readiness
	if err := json.Unmarshal(a.body, &body); err != nil || a.status != 200 || !body.Ready || !body.Writable {
		t.Fatalf("readyz %d %s", a.status, a.body)
	}
	var names []string
	for _, c := range body.Checks {
		names = append(names, c.Name)
	}
	want := "db:zc.db db:adapter-001.db mq:001 db:adapter-002.db mq:002 db:ingress-nonces.db db:jobs ledger mode"
	if strings.Join(names, " ") != want {
		t.Fatalf("checks %q, want %q", strings.Join(names, " "), want)
	}
	// A bank's adapter database gone: 503 naming it.
	n.Banks["002"].Adapter.DB().Close()
	a = n.do(t, "GET", "/readyz", "", nil, "")
	if a.status != 503 || !strings.Contains(string(a.body), `{"name":"db:adapter-002.db","ok":false,"error":"store: database is closed"}`) {
		t.Fatalf("readyz with a closed adapter database: %d %s", a.status, a.body)
	}
}

// OpenModes on an unserved folder writes the same events as the node
// (EventOutbox included); a node restarts on a folder in BCP (writes stay
// refused); on a served folder OpenModes is refused.
func TestOpenModesUnservedAndServed(t *testing.T) {
	ctx := context.Background()
	dir := scratch(t)
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	n, err := Start(ctx, Options{DataDir: dir, Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	ctl, closeFn, err := OpenModes(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, changed, err := ctl.ActivateBCP(ctx, "ops", "drill"); err != nil || !changed {
		t.Fatalf("activate: %v %v", changed, err)
	}
	if err := closeFn(); err != nil {
		t.Fatal(err)
	}
	if n, err = Start(ctx, Options{DataDir: dir, Config: &cfg}); err != nil {
		t.Fatalf("restart in BCP: %v", err)
	}
	defer n.Close()
	if types, outboxed := globalEvents(t, n.DB); strings.Join(types, " ") != "SystemBcpActivated" || outboxed != 1 {
		t.Fatalf("GLOBAL chain %v (%d in EventOutbox)", types, outboxed)
	}
	if r := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("om-1", 700, "h:001-0001", "h:002-0001")); r.status != 502 || r.field("reason_code") != "SYSTEM_BCP_READ_ONLY" {
		t.Fatalf("POST after the restart in BCP: %d %s", r.status, r.body)
	}
	if _, _, err := OpenModes(ctx, dir, nil); !errors.Is(err, procid.ErrServed) {
		t.Fatalf("OpenModes on a served folder: %v", err)
	}
}
