package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"github.com/zcgw/zcgw/gateway/node"
)

// The commands on a data folder whose node.json puts the store in
// PostgreSQL read and write the schemas zcgw serve uses, found through the
// same node.json: after a node settled a transfer there and stopped,
// `mode show`, `outbox list`, `events status`, `jobs run eod` and `jobs
// history` see its rows, say where they read (the password masked), and
// no database file appears in the folder.
func TestCommandsFindThePostgresStoreOfTheFolder(t *testing.T) {
	pg, ok := storetest.Postgres(t)
	if !ok {
		t.Skip("no PostgreSQL server")
	}
	ctx := context.Background()
	dir := t.TempDir()
	l := storetest.Locator(t, pg, dir)
	cfg := node.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Store = &node.StoreConfig{Kind: string(store.Postgres), URL: l.URL, SchemaPrefix: l.Prefix}
	raw, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, node.ConfigFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}

	if code, out, errs := zcgwIn(ctx, "--data", dir, "mode", "show"); code != 0 || !strings.Contains(out, "(no schema "+l.Prefix+"zc in ") {
		t.Fatalf("mode show before any node: exit %d\n%s%s", code, out, errs)
	}
	n, err := node.Start(ctx, node.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	txid := postAndSettle(t, n, "cli-pg")
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	code, out, errs := zcgwIn(ctx, "--data", dir, "mode", "show")
	if code != 0 || !strings.Contains(out, "mode: NORMAL") || !strings.Contains(out, "search_path="+l.Prefix+"zc") || !strings.Contains(out, "(no node serves it)") {
		t.Errorf("mode show: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "outbox", "list", "--bank", "001")
	if code != 0 || !strings.Contains(out, txid) || !strings.Contains(out, "APPLIED") || !strings.Contains(out, "DEBIT") {
		t.Errorf("outbox list: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "outbox", "list", "--bank", "009"); code != 1 || !strings.Contains(errs, "schema "+l.Prefix+"adapter_009 in ") {
		t.Errorf("outbox list of an unknown bank: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "events", "status")
	if code != 0 || strings.HasPrefix(out, "events 0") {
		t.Errorf("events status: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "jobs", "run", "eod", "--date", "2026-12-01")
	if code != 0 || !strings.Contains(out, "COMPLETED") {
		t.Errorf("jobs run eod: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "jobs", "history")
	if code != 0 || !strings.Contains(out, "eod") || !strings.Contains(out, "2026-12-01") {
		t.Errorf("jobs history: exit %d\n%s%s", code, out, errs)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.db")); len(files) > 0 {
		t.Errorf("database files in a PostgreSQL folder: %v", files)
	}
}

// postAndSettle posts a transfer 001 -> 002 to n and waits for it to
// settle with its postings applied at both cores; it returns the txid.
func postAndSettle(t *testing.T, n *node.Node, key string) string {
	t.Helper()
	ctx := context.Background()
	code, body := postTransfer(t, n, key)
	var r struct {
		Txid string `json:"txid"`
	}
	if json.Unmarshal([]byte(body), &r); code != 201 || r.Txid == "" {
		t.Fatalf("POST: %d %s", code, body)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var state string
		if err := n.DB.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, `SELECT state FROM Transactions WHERE txid = ?`, r.Txid).Scan(&state)
		}); err != nil {
			t.Fatal(err)
		}
		payer, err1 := n.Banks["001"].Adapter.Shadow(ctx, "h:001-0001")
		payee, err2 := n.Banks["002"].Adapter.Shadow(ctx, "h:002-0001")
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if state == "SETTLED" && payer.PendingDebits == 0 && payee.PendingCredits == 0 {
			return r.Txid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s, payer %+v, payee %+v", r.Txid, state, payer, payee)
		}
	}
}
