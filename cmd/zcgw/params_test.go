package main

import (
	"context"
	"encoding/json"
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

// laneOf posts an EXPRESS transfer 001 -> 002 of amount and returns the
// lane the coordinator gave it.
func laneOf(t *testing.T, n *node.Node, key string, amount int64) string {
	t.Helper()
	body := fmt.Sprintf(`{"lane":"EXPRESS","amount":{"value":%d,"currency":"JPY"},"payer":{"bank_id":"001","account_hash":"h:001-0001"},`+
		`"payee":{"bank_id":"002","account_hash":"h:002-0001"},"purpose":"P2P","schema_version":"1.1","idempotency_key":"%s"}`, amount, key)
	req, _ := http.NewRequest("POST", n.URL+"/api/transfers", strings.NewReader(body))
	req.Header.Set("X-Api-Key", n.Config.KeyFor("001"))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m struct{ Lane string }
	if res.StatusCode != 201 || json.Unmarshal(b, &m) != nil {
		t.Fatalf("POST %s: %d %s", key, res.StatusCode, b)
	}
	return m.Lane
}

// paramChanges lists the GLOBAL chain's ParameterChanged entries as
// "parameter:old->new:evidence_ref:actor" and verifies the chain.
func paramChanges(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	db, err := store.OpenCoordinator(ctx, dir+"/zc.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got []string
	err = db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT json_extract(payload_json, '$.parameter') || ':' || COALESCE(json_extract(payload_json, '$.old'), 'none') || '->' ||
			COALESCE(json_extract(payload_json, '$.new'), 'none') || ':' || json_extract(payload_json, '$.evidence_ref') || ':' || json_extract(payload_json, '$.actor')
			FROM FinalityLog WHERE txid IS NULL AND gtid IS NULL AND event_type = ? ORDER BY event_seq`, string(finality.ParameterChanged))
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
	if err != nil {
		t.Fatal(err)
	}
	if v, err := finality.VerifyChain(ctx, db, finality.GlobalChain); err != nil || !v.OK() {
		t.Fatalf("GLOBAL chain verify %+v %v", v, err)
	}
	return strings.Join(got, " | ")
}

// zcgw params set on a served folder goes through the node; the next
// transfer uses the new PR-HV-THRESHOLD: at it EXPRESS, above it HIGH_VALUE.
func TestParamsSetHVThresholdOnServedFolder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := startNode(t, dir)
	if got := laneOf(t, n, "p-0", 2001); got != "EXPRESS" {
		t.Fatalf("2001 before: %s", got)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "params", "set", "PR-HV-THRESHOLD", "2000", "--reason", "drill", "--by", "alice"); code != 2 || !strings.Contains(errs, "--evidence-ref is required") {
		t.Fatalf("set without evidence: exit %d %s%s", code, out, errs)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "params", "set", "PR-HV-THRESHOLD", "2000"); code != 2 || !strings.Contains(errs, "--evidence-ref is required (recorded with the change on the GLOBAL chain); --reason is required (recorded with the change on the GLOBAL chain); --by is required") {
		t.Fatalf("set without any of the three: exit %d %s%s (want all three named at once)", code, out, errs)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "params", "set", "PR-HV-THRESHOLD", "0", "--evidence-ref", "CAB-7", "--reason", "drill", "--by", "alice"); code != 1 || !strings.Contains(errs, "INVALID_REQUEST: PR-HV-THRESHOLD: 0 is outside its bounds") {
		t.Fatalf("set out of bounds: exit %d %s%s", code, out, errs)
	}
	code, out, errs := zcgwIn(ctx, "--data", dir, "params", "set", "PR-HV-THRESHOLD", "2000", "--evidence-ref", "CAB-7", "--reason", "drill", "--by", "alice")
	if code != 0 || !regexp.MustCompile(`^PR-HV-THRESHOLD: 100000000 -> 2000 \(by alice, evidence CAB-7\); the change is on the GLOBAL chain \(entry \S+\)`).MatchString(out) {
		t.Fatalf("set: exit %d\n%s%s", code, out, errs)
	}
	if got := laneOf(t, n, "p-1", 2000); got != "EXPRESS" {
		t.Fatalf("2000 at the threshold: %s", got)
	}
	if got := laneOf(t, n, "p-2", 2001); got != "HIGH_VALUE" {
		t.Fatalf("2001 above the threshold: %s", got)
	}
	code, out, errs = zcgwIn(ctx, "--data", dir, "params", "list")
	if code != 0 || !regexp.MustCompile(`\nPR-HV-THRESHOLD +2000 +JPY +100000000 +1\.\.\d+ +\S+Z +alice +CAB-7\n`).MatchString(out) ||
		!regexp.MustCompile(`\nPR-CASE-SLA +4h0m0s +s +4h0m0s +`).MatchString(out) || !strings.Contains(out, "[node ") {
		t.Fatalf("list: exit %d\n%s%s", code, out, errs)
	}
	// The node's lease is 30s: a 30s exec timeout is refused.
	if code, out, errs := zcgwIn(ctx, "--data", dir, "params", "set", "PR-EXEC-TIMEOUT", "30s", "--evidence-ref", "CAB-8", "--reason", "faster", "--by", "alice"); code != 1 || !strings.Contains(errs, "work-item lease 30s") {
		t.Fatalf("exec timeout = lease: exit %d %s%s", code, out, errs)
	}
	// A bank's limit: --bank, from none.
	code, out, errs = zcgwIn(ctx, "--data", dir, "params", "set", "PR-TX-AMOUNT-LIMIT", "2500", "--bank", "001", "--evidence-ref", "CAB-9", "--reason", "limit review", "--by", "bob")
	if code != 0 || !strings.HasPrefix(out, "PR-TX-AMOUNT-LIMIT of bank 001: none -> 2500 (by bob, evidence CAB-9)") {
		t.Fatalf("set --bank: exit %d\n%s%s", code, out, errs)
	}
	if st, body := postTransfer(t, n, "p-3"); st != 201 {
		t.Fatalf("500 under the limit: %d %s", st, body)
	}
	if lane := laneOf(t, n, "p-4", 2500); lane != "HIGH_VALUE" { // at the bank limit, above the HV threshold
		t.Fatalf("2500: %s", lane)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "params", "list", "--bank", "001"); code != 0 || !regexp.MustCompile(`\nPR-TX-AMOUNT-LIMIT +2500 +JPY`).MatchString(out) ||
		!regexp.MustCompile(`\nPR-DAILY-AMOUNT-LIMIT +none +JPY`).MatchString(out) {
		t.Fatalf("list --bank: exit %d\n%s%s", code, out, errs)
	}
	if got := paramChanges(t, dir); got != "PR-HV-THRESHOLD:100000000->2000:CAB-7:alice | PR-TX-AMOUNT-LIMIT:none->2500:CAB-9:bob" {
		t.Fatalf("chain: %s", got)
	}
}

// On an unserved folder the CLI changes zc.db itself and a node started
// afterwards uses the value; a fresh folder lists the defaults, refuses a
// change and is left untouched.
func TestParamsOnUnservedAndFreshFolders(t *testing.T) {
	ctx := context.Background()
	fresh := t.TempDir()
	if code, out, errs := zcgwIn(ctx, "--data", fresh, "params", "show", "PR-CASE-SLA"); code != 0 || !strings.Contains(out, "PR-CASE-SLA = 4h0m0s (the default)") || !strings.Contains(out, "no zc.db yet") {
		t.Fatalf("show on a fresh folder: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := zcgwIn(ctx, "--data", fresh, "params", "set", "PR-CASE-SLA", "2h", "--evidence-ref", "E", "--reason", "r", "--by", "a"); code != 1 || !strings.Contains(errs, "has no zc.db") {
		t.Fatalf("set on a fresh folder: exit %d %s", code, errs)
	}
	if ents, _ := os.ReadDir(fresh); len(ents) != 0 {
		t.Fatalf("params on a fresh folder created %v", ents)
	}

	dir := t.TempDir()
	n := startNode(t, dir)
	n.Close()
	if code, out, errs := zcgwIn(ctx, "--data", dir, "params", "set", "PR-HV-THRESHOLD", "3000", "--evidence-ref", "CAB-9", "--reason", "offline change", "--by", "bob"); code != 0 || !strings.Contains(out, "100000000 -> 3000") {
		t.Fatalf("set offline: exit %d\n%s%s", code, out, errs)
	}
	// A second set from the same (now stale) old value loses the CAS.
	if code, _, errs := zcgwIn(ctx, "--data", dir, "params", "set", "PR-HV-THRESHOLD", "4000", "--old", "100000000", "--evidence-ref", "CAB-10", "--reason", "late", "--by", "carol"); code != 1 || !strings.Contains(errs, "CONCURRENCY_CONFLICT") {
		t.Fatalf("stale set: exit %d %s", code, errs)
	}
	if code, out, errs := zcgwIn(ctx, "--data", dir, "params", "show", "PR-HV-THRESHOLD"); code != 0 || !strings.Contains(out, "PR-HV-THRESHOLD = 3000\n") || !strings.Contains(out, "evidence:  CAB-9") {
		t.Fatalf("show: exit %d\n%s%s", code, out, errs)
	}
	n = startNode(t, dir)
	if got := laneOf(t, n, "u-1", 3001); got != "HIGH_VALUE" {
		t.Fatalf("3001 after the offline change: %s", got)
	}
	n.Close()
	if got := paramChanges(t, dir); got != "PR-HV-THRESHOLD:100000000->3000:CAB-9:bob" {
		t.Fatalf("chain: %s", got)
	}
}
