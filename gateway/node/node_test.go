package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"github.com/zcgw/zcgw/gateway/filedrop"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/formats/zengin"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

func scratch(t testing.TB) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "node-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

func start(t testing.TB) *Node {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	n, err := Start(context.Background(), Options{DataDir: scratch(t), Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return n
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) field(k string) string {
	var m map[string]any
	json.Unmarshal(a.body, &m)
	s, _ := m[k].(string)
	return s
}

func (n *Node) do(t testing.TB, method, path, key string, hdr map[string]string, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, n.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, res.Header, b}
}

func transferBody(key string, amount int64, payer, payee string) string {
	return fmt.Sprintf(`{"lane":"EXPRESS","amount":{"value":%d,"currency":"JPY"},"payer":{"bank_id":"001","account_hash":"%s"},`+
		`"payee":{"bank_id":"002","account_hash":"%s"},"purpose":"P2P","participant_ref":"ref-%s","schema_version":"1.1","idempotency_key":"%s"}`,
		amount, payer, payee, key, key)
}

func (n *Node) waitState(t testing.TB, txid string, want string, within time.Duration) answer {
	t.Helper()
	deadline := time.Now().Add(within)
	var a answer
	for time.Now().Before(deadline) {
		a = n.do(t, "GET", "/api/transactions/"+txid, n.Config.KeyFor("001"), map[string]string{"X-Purpose-Code": "P01"}, "")
		if a.field("state") == want {
			return a
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not reach %s: %s", txid, want, a.body)
	return a
}

func (n *Node) coreBalance(t testing.TB, bank, acct string) int64 {
	t.Helper()
	b, err := n.Banks[bank].Core.Balance(context.Background(), acct)
	if err != nil || !b.Found {
		t.Fatalf("core balance %s/%s: %v", bank, acct, err)
	}
	return b.Balance
}

// waitBalances polls the cores until the expected balances are reached
// (the outboxes drain asynchronously after SETTLED).
func (n *Node) waitBalances(t testing.TB, want map[[2]string]int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for k, v := range want {
			if n.coreBalance(t, k[0], k[1]) != v {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			for k, v := range want {
				t.Errorf("core %s/%s = %d, want %d", k[0], k[1], n.coreBalance(t, k[0], k[1]), v)
			}
			t.FailNow()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An EXPRESS transfer posted over HTTP settles through the orchestrator,
// the signed bank ingress and the simulated cores: payer -amount, payee
// +amount; its replay returns the same answer and leaves one row; its
// hash chain verifies.
func TestTransferSettlesOverHTTP(t *testing.T) {
	n := start(t)
	payerCore, payeeCore := n.Config.Banks[0].Accounts[0].CoreAccount, n.Config.Banks[1].Accounts[0].CoreAccount
	p0, q0 := n.coreBalance(t, "001", payerCore), n.coreBalance(t, "002", payeeCore)
	body := transferBody("e2e-1", 1200, "h:001-0001", "h:002-0001")
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, body)
	if a.status != 201 || a.field("txid") == "" {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	txid := a.field("txid")
	q := n.waitState(t, txid, "SETTLED", 20*time.Second)
	var qr map[string]any
	json.Unmarshal(q.body, &qr)
	if qr["freshness_level"] != "GREEN" || qr["watermark"].(float64) <= 0 || qr["execution"].(map[string]any)["a"] != "OK" ||
		qr["execution"].(map[string]any)["payer_bank_proof_ref"].(map[string]any)["proof_type"] != "PAYER_EXEC_PROOF" {
		t.Errorf("query response %s", q.body)
	}
	n.waitBalances(t, map[[2]string]int64{{"001", payerCore}: p0 - 1200, {"002", payeeCore}: q0 + 1200})
	again := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, body)
	if again.status != 200 || !bytes.Equal(again.body, a.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %d %s (first %s)", again.status, again.body, a.body)
	}
	var rows int
	n.DB.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM Transactions`).Scan(&rows)
	})
	if rows != 1 {
		t.Errorf("%d Transactions rows after a replay, want 1", rows)
	}
	v := n.do(t, "GET", "/api/transactions/"+txid+"/verify", n.Config.KeyFor("002"), map[string]string{"X-Purpose-Code": "P01"}, "")
	var vr map[string]any
	json.Unmarshal(v.body, &vr)
	if v.status != 200 || vr["intact"] != true || vr["entries"].(float64) < 2 {
		t.Errorf("verify: %d %s", v.status, v.body)
	}
	rep, _ := finality.VerifyChain(context.Background(), n.DB, txid)
	if int(vr["entries"].(float64)) != rep.Entries {
		t.Errorf("verify entries %v, chain has %d", vr["entries"], rep.Entries)
	}
}

// Read-only modes refuse new transfers with their codes while queries and
// metrics keep working.
func TestReadOnlyModesRefuseTransfersKeepQueries(t *testing.T) {
	n := start(t)
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("ro-0", 500, "h:001-0002", "h:002-0002"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	txid := a.field("txid")
	n.waitState(t, txid, "SETTLED", 20*time.Second)
	ctl := sysmode.NewController(n.DB, finality.New(n.clk), n.clk, nil)
	ctx := context.Background()
	check := func(mode, code string, i int) {
		t.Helper()
		r := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody(fmt.Sprintf("ro-%d", i), 500, "h:001-0002", "h:002-0002"))
		if r.status != 502 || r.field("reason_code") != code || r.header.Get("Retry-After") == "" {
			t.Errorf("%s: POST %d %s", mode, r.status, r.body)
		}
		if q := n.do(t, "GET", "/api/transactions/"+txid, n.Config.KeyFor("002"), map[string]string{"X-Purpose-Code": "P01"}, ""); q.status != 200 || q.field("state") != "SETTLED" {
			t.Errorf("%s: GET %d %s", mode, q.status, q.body)
		}
		if m := n.do(t, "GET", "/internal/metrics", "", map[string]string{"X-Cron-Secret": n.Config.CronSecret}, ""); m.status != 200 {
			t.Errorf("%s: metrics %d", mode, m.status)
		}
	}
	if _, _, err := ctl.ActivateBCP(ctx, "ops", "vendor outage drill"); err != nil {
		t.Fatal(err)
	}
	check("BCP_READONLY", "SYSTEM_BCP_READ_ONLY", 1)
	if _, _, err := ctl.ReconcileQuorum(ctx, 1, 3); err != nil {
		t.Fatal(err)
	}
	check("QUORUM_LOSS_READONLY (with BCP)", "SYSTEM_QUORUM_LOSS_READ_ONLY", 2)
	if _, _, err := ctl.DeactivateBCP(ctx, "ops", "drill over"); err != nil {
		t.Fatal(err)
	}
	check("QUORUM_LOSS_READONLY", "SYSTEM_QUORUM_LOSS_READ_ONLY", 3)
	if _, _, err := ctl.ReconcileQuorum(ctx, 3, 3); err != nil {
		t.Fatal(err)
	}
	if r := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("ro-4", 500, "h:001-0002", "h:002-0002")); r.status != 201 {
		t.Errorf("after recovery: %d %s", r.status, r.body)
	}
}

// /internal/cron/{job} runs a registered job through the jobs runner, only
// with the cron secret.
func TestInternalCronTriggersJobs(t *testing.T) {
	n := start(t)
	if a := n.do(t, "POST", "/internal/cron/jobs-ledger-prune", "", nil, ""); a.status != 403 {
		t.Errorf("without secret: %d %s", a.status, a.body)
	}
	a := n.do(t, "POST", "/internal/cron/jobs-ledger-prune", "", map[string]string{"X-Cron-Secret": n.Config.CronSecret}, "")
	if a.status != 200 || !strings.Contains(string(a.body), "COMPLETED") {
		t.Errorf("with secret: %d %s", a.status, a.body)
	}
	if a := n.do(t, "POST", "/internal/cron/timeout-sweep", "", map[string]string{"X-Cron-Secret": n.Config.CronSecret}, ""); a.status != 200 {
		t.Errorf("timeout sweep: %d %s", a.status, a.body)
	}
	if a := n.do(t, "POST", "/internal/cron/no-such-job", "", map[string]string{"X-Cron-Secret": n.Config.CronSecret}, ""); a.status != 404 {
		t.Errorf("unknown job: %d %s", a.status, a.body)
	}
}

// Two lanes at once, both directions, over HTTP: every transfer settles,
// every account moves by exactly its net amount, and the money in the
// system is conserved.
func TestTwoLanesConcurrentlyConserveMoney(t *testing.T) {
	n := start(t)
	type tr struct {
		lane, from, to string
		amount         int64
	}
	var trs []tr
	for i := 0; i < 12; i++ {
		lane := []string{"EXPRESS", "STANDARD"}[i%2]
		a, b := "001", "002"
		if i%3 == 0 {
			a, b = b, a
		}
		trs = append(trs, tr{lane, fmt.Sprintf("h:%s-%04d", a, i%3+1), fmt.Sprintf("h:%s-%04d", b, (i+1)%3+1), int64(100 + i)})
	}
	core := map[string]string{}
	before := map[string]int64{}
	var total0 int64
	for _, bc := range n.Config.Banks {
		for _, a := range bc.Accounts {
			core[a.Hash] = bc.BankID + "|" + a.CoreAccount
			before[a.Hash] = n.coreBalance(t, bc.BankID, a.CoreAccount)
			total0 += before[a.Hash]
		}
	}
	want := map[[2]string]int64{}
	for h, v := range before {
		bank, acct, _ := strings.Cut(core[h], "|")
		want[[2]string{bank, acct}] = v
	}
	txids := make([]string, len(trs))
	errs := make(chan error, len(trs))
	for i, x := range trs {
		fromBank, toBank := x.from[2:5], x.to[2:5]
		fb, fa, _ := strings.Cut(core[x.from], "|")
		tb, ta, _ := strings.Cut(core[x.to], "|")
		want[[2]string{fb, fa}] -= x.amount
		want[[2]string{tb, ta}] += x.amount
		go func() {
			body := fmt.Sprintf(`{"lane":"%s","amount":{"value":%d,"currency":"JPY"},"payer":{"bank_id":"%s","account_hash":"%s"},`+
				`"payee":{"bank_id":"%s","account_hash":"%s"},"purpose":"P2P","participant_ref":"lanes-%d","schema_version":"1.0","idempotency_key":"lanes-%d"}`,
				x.lane, x.amount, fromBank, x.from, toBank, x.to, i, i)
			a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor(fromBank), nil, body)
			if a.status != 201 {
				errs <- fmt.Errorf("%s %d: %d %s", x.lane, i, a.status, a.body)
				return
			}
			txids[i] = a.field("txid")
			errs <- nil
		}()
	}
	for range trs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range txids {
		n.waitState(t, id, "SETTLED", 30*time.Second)
	}
	n.waitBalances(t, want)
	var total1 int64
	for _, bc := range n.Config.Banks {
		for _, a := range bc.Accounts {
			total1 += n.coreBalance(t, bc.BankID, a.CoreAccount)
		}
	}
	if total1 != total0 {
		t.Fatalf("money not conserved: %d -> %d", total0, total1)
	}
}

// TestServeWatchesBankFolders: with WatchFiles on, a corrupt Zengin file
// dropped (with its done-marker) in a bank's inbound folder is taken by the
// node itself, moved to error/ with its report, and nothing is applied.
func TestServeWatchesBankFolders(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	dir := scratch(t)
	n, err := Start(context.Background(), Options{DataDir: dir, Config: &cfg, WatchFiles: true, WatchEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	bank := cfg.Banks[0].BankID
	in := filepath.Join(dir, "banks", bank, "inbound")
	bad := []byte("1210000000001TRUNCATED\r\n")
	if err := os.WriteFile(filepath.Join(in, "pay.txt"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "pay.txt.done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var report []byte
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		matches, _ := filepath.Glob(filepath.Join(dir, "banks", bank, "error", "*.errors.txt"))
		if len(matches) == 1 {
			report, _ = os.ReadFile(matches[0])
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(string(report), "record 1") {
		t.Fatalf("no error report for the dropped file; report %q", report)
	}
	if _, err := os.Stat(filepath.Join(in, "pay.txt")); !os.IsNotExist(err) {
		t.Fatalf("the file is still in inbound: %v", err)
	}
	var txs int
	if err := n.DB.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM Transactions").Scan(&txs)
	}); err != nil || txs != 0 {
		t.Fatalf("transactions after a rejected file: %d %v", txs, err)
	}
}

// A bank's zengin_names in node.json reaches its file-drop folder
// (long-vowel here); an unknown set is refused by Validate.
func TestZenginNamesPerBankFromConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Banks[0].ZenginNames = "loose"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "not strict or long-vowel") {
		t.Fatalf("Validate: %v", err)
	}
	cfg.Banks[0].ZenginNames = "long-vowel"
	n, err := Start(context.Background(), Options{DataDir: scratch(t), Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if b, ok := n.Files.Bank(cfg.Banks[0].BankID); !ok || b.Names != zengin.NamesLongVowel {
		t.Fatalf("bank %s names %v", cfg.Banks[0].BankID, b.Names)
	}
	if b, _ := n.Files.Bank(cfg.Banks[1].BankID); b.Names != zengin.NamesStrict {
		t.Fatalf("bank %s names %v, want strict", cfg.Banks[1].BankID, b.Names)
	}
}

// TestDNSJobsRunThroughTheNode: after a transfer settles over HTTP, the
// node's own dns-kick and dns-settle jobs (triggered on /internal/cron)
// net it into a cycle whose positions sum to zero, settle it, and the BOJ
// positions are visible on /internal/boj-positions behind the cron secret.
func TestDNSJobsRunThroughTheNode(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	dir := scratch(t)
	n, err := Start(context.Background(), Options{DataDir: dir, Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			n.Close()
		}
	}()
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("dns-1", 1500, "h:001-0001", "h:002-0001"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	txid := a.field("txid")
	n.waitState(t, txid, "SETTLED", 20*time.Second)
	// A cycle takes a settled transfer once its work is finished (the
	// payee's credit-notify and the payer's debit-settled after SETTLED).
	deadline := time.Now().Add(20 * time.Second)
	for open := 1; open > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("queue work of %s still open", txid)
		}
		if err := n.DB.Read(context.Background(), func(tx *store.Tx) error {
			return tx.QueryRowContext(context.Background(),
				"SELECT COUNT(*) FROM OrchestratorQueue WHERE txid = ? AND status NOT IN ('DONE', 'ACKED')", txid).Scan(&open)
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	secret := map[string]string{"X-Cron-Secret": n.Config.CronSecret}
	for _, job := range []string{"dns-kick", "dns-settle"} {
		r := n.do(t, "POST", "/internal/cron/"+job, "", secret, "")
		if r.status != 200 || !strings.Contains(string(r.body), "COMPLETED") {
			t.Fatalf("%s: %d %s", job, r.status, r.body)
		}
	}
	// watermark_detail names the DNS cycle's chain beside the TX chain,
	// with the cycle chain's MAX(event_seq) (kick and settle appended to it).
	var cycle string
	var cycleSeq int64
	if err := n.DB.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT t.dns_cycle_id, (SELECT MAX(event_seq) FROM FinalityLog
			WHERE gtid = t.dns_cycle_id AND txid IS NULL) FROM Transactions t WHERE t.txid = ?`, txid).Scan(&cycle, &cycleSeq)
	}); err != nil {
		t.Fatal(err)
	}
	if _, shards := n.freshness(t, txid); len(shards) != 2 || shards["DNS:"+cycle] != cycleSeq || cycleSeq == 0 || shards["TX:"+txid] == 0 {
		t.Errorf("watermark_detail.shards %v, want TX:%s and DNS:%s = %d", shards, txid, cycle, cycleSeq)
	}
	net := map[string]int64{}
	var settled int
	err = n.DB.Read(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), "SELECT bank_id, net_position, is_settled FROM DnsNetPositions")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var bank string
			var pos int64
			var s int
			if err := rows.Scan(&bank, &pos, &s); err != nil {
				return err
			}
			net[bank] += pos
			settled += s
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if net["001"] != -1500 || net["002"] != 1500 || settled != 2 {
		t.Fatalf("net positions %v (settled rows %d), want 001 -1500, 002 +1500, both settled", net, settled)
	}
	if r := n.do(t, "GET", "/internal/boj-positions", "", nil, ""); r.status != 403 {
		t.Errorf("boj-positions without the cron secret: %d", r.status)
	}
	if r := n.do(t, "GET", "/internal/boj-positions", "", secret, ""); r.status != 200 || !strings.Contains(string(r.body), `"positions"`) {
		t.Errorf("boj-positions: %d %s", r.status, r.body)
	}
	boj := func(n *Node) map[string]int64 {
		ps, err := n.Orchestrator.Positions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, p := range ps {
			if p.Venue == "BOJ" {
				out[p.BankID] = p.Balance
			}
		}
		return out
	}
	want := map[string]int64{"001": bankapi.DefaultBOJPrefund - 1500, "002": bankapi.DefaultBOJPrefund + 1500}
	if got := boj(n); got["001"] != want["001"] || got["002"] != want["002"] {
		t.Fatalf("BOJ accounts after settle %v, want %v", got, want)
	}
	// A restart opens no account again: settled money stays where it is.
	closed = true
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2, err := Start(context.Background(), Options{DataDir: dir, Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	if got := boj(n2); got["001"] != want["001"] || got["002"] != want["002"] {
		t.Fatalf("BOJ accounts after restart %v, want %v", got, want)
	}
}

// TestNodeJobsRunThroughCron: every job body the node registers runs from
// /internal/cron; EOD closes the day, reconciles both banks with drift 0
// and writes the reconciliation workbook, whose Summary sheet names both
// banks.
func TestNodeJobsRunThroughCron(t *testing.T) {
	n := start(t)
	a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("eod-1", 900, "h:001-0001", "h:002-0001"))
	if a.status != 201 {
		t.Fatalf("POST: %d %s", a.status, a.body)
	}
	n.waitState(t, a.field("txid"), "SETTLED", 20*time.Second)
	payerCore, payeeCore := n.Config.Banks[0].Accounts[0].CoreAccount, n.Config.Banks[1].Accounts[0].CoreAccount
	n.waitBalances(t, map[[2]string]int64{{"001", payerCore}: n.Config.Banks[0].Accounts[0].Balance - 900,
		{"002", payeeCore}: n.Config.Banks[1].Accounts[0].Balance + 900})
	secret := map[string]string{"X-Cron-Secret": n.Config.CronSecret}
	for _, job := range []string{"outbox-drain", "idempotency-ttl-cleanup", "case-sla-escalation", "eod"} {
		r := n.do(t, "POST", "/internal/cron/"+job, "", secret, "")
		if r.status != 200 || !strings.Contains(string(r.body), "COMPLETED") {
			t.Fatalf("%s: %d %s", job, r.status, r.body)
		}
	}
	date := clock.BusinessDate(time.Now())
	f, err := excelize.OpenFile(filepath.Join(n.DataDir, "reports", "recon-"+date+".xlsx"))
	if err != nil {
		t.Fatalf("EOD workbook: %v", err)
	}
	defer f.Close()
	rows, err := f.GetRows("Summary")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		for _, c := range r {
			if c == "001" || c == "002" {
				seen[c] = true
			}
		}
	}
	if !seen["001"] || !seen["002"] {
		t.Fatalf("Summary sheet does not list both banks: %v", rows)
	}
	var drifts int
	if err := n.DB.Read(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM Cases WHERE reason_code LIKE '%DRIFT%'").Scan(&drifts)
	}); err != nil || drifts != 0 {
		t.Fatalf("drift cases after a clean day: %d %v", drifts, err)
	}
}

// TestOneNodeServesAFolder: a second node on a served data folder is
// refused with an error naming the holder (it would be a second consumer of
// every core queue); once the first stops, the folder can be served again
// and keeps its node id.
func TestOneNodeServesAFolder(t *testing.T) {
	n := start(t)
	cfg := n.Config
	_, err := Start(context.Background(), Options{DataDir: n.DataDir, Config: &cfg})
	if !errors.Is(err, procid.ErrServed) || !strings.Contains(err.Error(), strings.TrimPrefix(n.URL, "http://")) {
		t.Fatalf("second Start: err = %v, want ErrServed naming %s", err, n.URL)
	}
	info, ok, err := procid.Running(n.DataDir)
	if err != nil || !ok || "http://"+info.Addr != n.URL || info.Node != n.ID.Node {
		t.Fatalf("Running = %+v %v %v, want the node at %s", info, ok, err, n.URL)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Start(context.Background(), Options{DataDir: n.DataDir, Config: &cfg})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	defer again.Close()
	if again.ID.Node != n.ID.Node || again.ID.Epoch == n.ID.Epoch {
		t.Fatalf("restart identity %v after %v: want same node, new epoch", again.ID, n.ID)
	}
}

// TestFailedStartUndoesItsParts: a Start that fails in a late part (an
// unreadable jobs.json, after the banks' cores are serving) undoes what
// the earlier parts opened: the folder lock, the databases and each core's
// claim on its request queue are released, so the next Start on the folder
// starts at once; one that fails in the listener does the same.
func TestFailedStartUndoesItsParts(t *testing.T) {
	dir := scratch(t)
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	jobsFile := filepath.Join(dir, scheduler.ConfigFileName)
	if err := os.WriteFile(jobsFile, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := Start(context.Background(), Options{DataDir: dir, Config: &cfg}); err == nil || n != nil {
		t.Fatalf("Start with a broken jobs.json: node %v, err %v", n, err)
	}
	if err := os.Remove(jobsFile); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := cfg
	taken.Addr = busy.Addr().String()
	if n, err := Start(context.Background(), Options{DataDir: dir, Config: &taken}); err == nil || n != nil {
		t.Fatalf("Start on a taken address: node %v, err %v", n, err)
	}
	// A lock left behind fails this Start at once (ErrServed); a core's
	// queue claim left behind fails it after the claim's retry (mq.ErrInUse:
	// the holder, this process, is alive).
	n, err := Start(context.Background(), Options{DataDir: dir, Config: &cfg})
	if err != nil {
		t.Fatalf("Start after the failed ones: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}

// A default node.json names its accounts by hashes of its own
// (h:001-0001 ...), and a Zengin file names accounts by bank, branch,
// type and number. A file paying the configured accounts must reach them:
// its transfers carry the configured hashes, so the adapters find the
// accounts (before, every record of a drop on a default node was
// cancelled with ACCOUNT_NOT_FOUND).
func TestFileDropOnADefaultNodeNamesTheConfiguredAccounts(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	dir := scratch(t)
	n, err := Start(context.Background(), Options{DataDir: dir, Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	payer, payee := cfg.Banks[0], cfg.Banks[1]
	pk, err := coreacct.Parse(payer.Accounts[0].CoreAccount)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := zengin.NewWriter(&buf)
	if err := w.WriteHeader(&zengin.Header{Kind: zengin.KindTransfer, ClientCode: "0000012345", ClientName: "ﾃｽﾄ",
		Date: zengin.Date{Month: 12, Day: 3}, BankCode: filedrop.DefaultZenginCode(payer.BankID), BankName: "ｼﾑｹ",
		BranchCode: pk.Branch, BranchName: "ﾎﾝﾃﾝ", AccountType: pk.Type, AccountNumber: pk.Number}); err != nil {
		t.Fatal(err)
	}
	for i, a := range payee.Accounts {
		k, err := coreacct.Parse(a.CoreAccount)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteData(&zengin.TransferData{Account: zengin.Account{BankCode: filedrop.DefaultZenginCode(payee.BankID), BankName: "ﾋｼﾑｹ",
			BranchCode: k.Branch, BranchName: "ﾎﾝﾃﾝ", AccountType: k.Type, AccountNumber: k.Number, Name: "ﾃｽﾄ"}, Amount: int64(1000 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []func() error{w.WriteTrailer, w.WriteEnd, w.Flush} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(t.TempDir(), "pay.txt")
	if err := os.WriteFile(src, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Files.SubmitFile(context.Background(), payer.BankID, src); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // payee hash -> payer hash
	if err := n.DB.Read(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), "SELECT payer_account_hash, payee_account_hash FROM Transactions")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var from, to string
			if err := rows.Scan(&from, &to); err != nil {
				return err
			}
			got[to] = from
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(payee.Accounts) {
		t.Fatalf("%d transfers %v, want one per record (%d)", len(got), got, len(payee.Accounts))
	}
	for _, a := range payee.Accounts {
		if from, ok := got[a.Hash]; !ok || from != payer.Accounts[0].Hash {
			t.Fatalf("no transfer from %s to %s: %v", payer.Accounts[0].Hash, a.Hash, got)
		}
	}
}
