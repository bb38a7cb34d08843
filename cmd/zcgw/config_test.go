package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/gateway/node"
)

// `zcgw config check`: a misspelt kafka block is refused naming its path
// (exit 1), nothing is created, the corrected file passes (exit 0, one
// line), and serve refuses the same file at start.
func TestConfigCheckMisspeltKafka(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if code, out, errs := zcgwIn(ctx, "config", "check", "--data", dir); code != 0 ||
		out != dir+": configuration OK: node.json absent (zcgw serve writes the default: 2 banks, 001 and 002); jobs.json absent (default schedules)\n" {
		t.Fatalf("fresh folder: exit %d\n%s%s", code, out, errs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("config check wrote into the folder: %v", ents)
	}
	path := filepath.Join(dir, node.ConfigFile)
	good := `{
  "cron_secret": "s",
  "banks": [{"bank_id": "001", "name": "Bank 001", "accounts": [{"hash": "h:1", "core_account": "100-1-0000001", "name": "A", "opening_balance": 5}]}],
  "kafka": {"brokers": ["127.0.0.1:9092"]}
}
`
	bad := strings.Replace(good, `"kafka"`, `"kafak"`, 1)
	os.WriteFile(path, []byte(bad), 0o600)
	code, out, errs := zcgwIn(ctx, "--data", dir, "config", "check")
	want := "zcgw config check: " + path + `:4:3: kafak: unknown field: did you mean "kafka"? (known: addr, allow_unauthenticated_ui, api_keys, banks, cron_secret, files_root, hmac, kafka, mq, store, workers)` + "\n"
	if code != 1 || out != "" || errs != want {
		t.Fatalf("misspelt kafka: exit %d\nstdout:\n%s\nstderr:\n%s\nwant stderr:\n%s", code, out, errs, want)
	}
	if code, _, errs := zcgwIn(ctx, "--data", dir, "serve", "--addr", "127.0.0.1:0"); code != 1 || !strings.Contains(errs, "kafak: unknown field") {
		t.Fatalf("serve with the misspelt key: exit %d %s", code, errs)
	}
	os.WriteFile(path, []byte(good), 0o600)
	os.WriteFile(filepath.Join(dir, "jobs.json"), []byte(`{"jobs":{"eod":{"enabled":false}}}`), 0o600)
	code, out, errs = zcgwIn(ctx, "--data", dir, "config", "check")
	if code != 0 || !strings.HasPrefix(out, dir+": configuration OK: node.json 1 bank(s) (001), 1 account(s), 0 api key(s), addr 127.0.0.1:8080 (default), kafka 127.0.0.1:9092, store sqlite (files in "+dir+"); jobs.json ") ||
		strings.Count(out, "\n") != 1 || errs != "" {
		t.Fatalf("good config: exit %d\n%s%s", code, out, errs)
	}
	os.WriteFile(filepath.Join(dir, "jobs.json"), []byte(`{"jobs":{"eod":{"enabld":false}}}`), 0o600)
	if code, _, errs := zcgwIn(ctx, "--data", dir, "config", "check"); code != 1 ||
		!strings.HasPrefix(errs, `zcgw config check: jobs.json:1:17: job "eod": field "enabld": unknown field: did you mean "enabled"?`) {
		t.Fatalf("bad jobs.json: exit %d %s", code, errs)
	}
	if code, _, _ := zcgwIn(ctx, "--data", dir, "config"); code != 2 {
		t.Fatalf("config without check: exit %d", code)
	}
}

// `zcgw config check` on a PostgreSQL store block: it names the database
// and every component's schema, the password masked, and refuses a block
// without its url by its path.
func TestConfigCheckPostgresStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, node.ConfigFile)
	doc := `{
  "cron_secret": "s",
  "banks": [{"bank_id": "001", "name": "Bank 001", "accounts": []}],
  "store": {"kind": "postgres", "url": "postgres://zc:hunter2@db.example:5432/zcgw?sslmode=disable"}
}
`
	os.WriteFile(path, []byte(doc), 0o600)
	code, out, errs := zcgwIn(ctx, "--data", dir, "config", "check")
	if code != 0 || strings.Contains(out, "hunter2") ||
		!strings.Contains(out, "store postgres postgres://zc:xxxxx@db.example:5432/zcgw?sslmode=disable (schemas zc, ingress_nonces, mq, adapter_001, core_001); jobs.json absent") {
		t.Fatalf("postgres store: exit %d\n%s%s", code, out, errs)
	}
	os.WriteFile(path, []byte(strings.Replace(doc, `, "url": "postgres://zc:hunter2@db.example:5432/zcgw?sslmode=disable"`, "", 1)), 0o600)
	if code, out, errs := zcgwIn(ctx, "--data", dir, "config", "check"); code != 1 || out != "" || errs != "zcgw config check: "+path+": store.url: missing\n" {
		t.Fatalf("store without url: exit %d\n%s%s", code, out, errs)
	}
}
