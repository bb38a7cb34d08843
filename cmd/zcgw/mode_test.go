package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway/node"
)

// postTransfer posts an EXPRESS transfer 001 -> 002 to the node and returns
// the status and body.
func postTransfer(t *testing.T, n *node.Node, key string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"lane":"EXPRESS","amount":{"value":500,"currency":"JPY"},"payer":{"bank_id":"001","account_hash":"h:001-0001"},`+
		`"payee":{"bank_id":"002","account_hash":"h:002-0001"},"purpose":"P2P","schema_version":"1.1","idempotency_key":"%s"}`, key)
	req, _ := http.NewRequest("POST", n.URL+"/api/transfers", strings.NewReader(body))
	req.Header.Set("X-Api-Key", n.Config.KeyFor("001"))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func getStatus(t *testing.T, n *node.Node, path string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", n.URL+path, nil)
	req.Header.Set("X-Api-Key", n.Config.KeyFor("001"))
	req.Header.Set("X-Purpose-Code", "P01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func checkGlobalChain(t *testing.T, dir, want string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenCoordinator(ctx, dir+"/zc.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got []string
	err = db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT event_type || ':' || json_extract(payload_json, '$.actor') || ':' || json_extract(payload_json, '$.reason')
			FROM FinalityLog WHERE txid IS NULL AND gtid IS NULL ORDER BY event_seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return err
			}
			got = append(got, s)
		}
		return rows.Err()
	})
	if err != nil || strings.Join(got, " | ") != want {
		t.Fatalf("GLOBAL chain %q %v, want %q", strings.Join(got, " | "), err, want)
	}
	if v, err := finality.VerifyChain(ctx, db, finality.GlobalChain); err != nil || !v.OK() || v.Entries != len(got) {
		t.Fatalf("GLOBAL chain verify %+v %v", v, err)
	}
}

// BCP on then off through the CLI on a served folder: the CLI goes through
// the node; writes are refused with SYSTEM_BCP_READ_ONLY and accepted
// again, reads keep working, and the two GLOBAL-chain events exist with
// who and why.
func TestModeBCPOnServedFolder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := startNode(t, dir)
	st, body := postTransfer(t, n, "m-0")
	txid := regexp.MustCompile(`"txid":"([^"]+)"`).FindStringSubmatch(body)
	if st != 201 || txid == nil {
		t.Fatalf("POST: %d %s", st, body)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "mode", "bcp", "on", "--by", "alice"); code != 2 || !strings.Contains(errs, "--reason is required") {
		t.Fatalf("bcp on without reason: exit %d %s%s", code, out, errs)
	}
	code, out, errs := zcgwIn(ctx, "--data", dir, "mode", "bcp", "on", "--reason", "core vendor outage", "--by", "alice")
	if code != 0 || !regexp.MustCompile(`^BCP_READONLY is now on \(\S+Z by alice: core vendor outage\); the change is on the GLOBAL chain\nmode: BCP_READONLY \(read-only: writes refused, reads served\)\n$`).MatchString(out) {
		t.Fatalf("bcp on: exit %d\n%s%s", code, out, errs)
	}
	if st, body := postTransfer(t, n, "m-1"); st != 502 || !strings.Contains(body, `"reason_code":"SYSTEM_BCP_READ_ONLY"`) {
		t.Fatalf("POST in BCP: %d %s", st, body)
	}
	if st := getStatus(t, n, "/api/transactions/"+txid[1]); st != 200 {
		t.Fatalf("GET in BCP: %d", st)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "mode", "show")
	addr := strings.TrimPrefix(n.URL, "http://")
	if code != 0 || !strings.Contains(out, "mode: BCP_READONLY (read-only: writes refused, reads served)   [node ") || !strings.Contains(out, "addr "+addr+")]") ||
		!regexp.MustCompile(`\nBCP_READONLY +ON +\S+Z +alice +core vendor outage\n`).MatchString(out) {
		t.Fatalf("mode show: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "mode", "bcp", "on", "--reason", "again", "--by", "bob"); code != 0 || !regexp.MustCompile(`^BCP_READONLY was already on \(since \S+Z by alice: core vendor outage\): nothing changed\n`).MatchString(out) {
		t.Fatalf("second bcp on: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "mode", "bcp", "off", "--reason", "vendor back", "--by", "bob"); code != 0 || !strings.Contains(out, "mode: NORMAL (writes accepted)") {
		t.Fatalf("bcp off: exit %d\n%s%s", code, out, errs)
	}
	if st, body := postTransfer(t, n, "m-2"); st != 201 {
		t.Fatalf("POST after BCP: %d %s", st, body)
	}
	checkGlobalChain(t, dir, "SystemBcpActivated:alice:core vendor outage | SystemBcpDeactivated:bob:vendor back")
}

// On an unserved folder the CLI changes zc.db itself; a node started
// afterwards refuses writes until `bcp off`. A fresh folder has no mode to
// change (and show creates nothing).
func TestModeBCPOnUnservedFolder(t *testing.T) {
	ctx := context.Background()
	fresh := t.TempDir()
	if code, out, errs := zcgwIn(ctx, "--data", fresh, "mode", "show"); code != 0 || !strings.Contains(out, "mode: NORMAL (writes accepted)") || !strings.Contains(out, "no zc.db yet") {
		t.Fatalf("show on a fresh folder: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := zcgwIn(ctx, "--data", fresh, "mode", "bcp", "on", "--reason", "x", "--by", "a"); code != 1 || !strings.Contains(errs, "has no zc.db") {
		t.Fatalf("bcp on on a fresh folder: exit %d %s", code, errs)
	}
	if ents, _ := os.ReadDir(fresh); len(ents) != 0 {
		t.Fatalf("mode on a fresh folder created %v", ents)
	}

	dir := t.TempDir()
	n, err := node.Start(ctx, node.Options{DataDir: dir, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	if code, out, errs := zcgwIn(ctx, "--data", dir, "mode", "bcp", "off", "--reason", "x", "--by", "carol"); code != 0 ||
		out != "BCP_READONLY was already off (never declared): nothing changed\nmode: NORMAL (writes accepted)\n" {
		t.Fatalf("bcp off never declared: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "mode", "bcp", "on", "--reason", "weekend drill", "--by", "carol"); code != 0 || !strings.Contains(out, "BCP_READONLY is now on") {
		t.Fatalf("bcp on: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "mode", "show"); code != 0 || !strings.Contains(out, "(no node serves it)]") || !strings.Contains(out, "carol") {
		t.Fatalf("show: exit %d\n%s%s", code, out, errs)
	}
	n = startNode(t, dir)
	if st, body := postTransfer(t, n, "u-1"); st != 502 || !strings.Contains(body, "SYSTEM_BCP_READ_ONLY") {
		t.Fatalf("POST on a node started in BCP: %d %s", st, body)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "mode", "bcp", "off", "--reason", "drill over", "--by", "carol"); code != 0 {
		t.Fatalf("bcp off through the node: exit %d\n%s%s", code, out, errs)
	}
	if st, body := postTransfer(t, n, "u-2"); st != 201 {
		t.Fatalf("POST after bcp off: %d %s", st, body)
	}
	checkGlobalChain(t, dir, "SystemBcpActivated:carol:weekend drill | SystemBcpDeactivated:carol:drill over")
}
