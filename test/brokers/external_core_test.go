package brokers

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/gateway/node"
	"github.com/zcgw/zcgw/test/internal/proc"
)

// start runs zcgw with args and waits until it prints a line starting
// with ready; it is killed when t ends.
func start(t *testing.T, logDir, name, ready string, args ...string) *proc.Proc {
	t.Helper()
	return proc.StartReady(t, proc.Config{Bin: zcgwBin, Args: args, Log: filepath.Join(logDir, name+".log"), Ready: ready}, 60*time.Second)
}

// closeBrokerConnections closes, through rabbitmqctl, every broker
// connection of the given processes (their connection names carry their
// pid), and only those: the broker is shared.
func closeBrokerConnections(t *testing.T, pids ...int) int {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", "list_connections", "-q", "--no-table-headers", "pid", "client_properties").CombinedOutput()
	if err != nil {
		t.Fatalf("rabbitmqctl list_connections: %v\n%s", err, out)
	}
	closed := 0
	for _, line := range strings.Split(string(out), "\n") {
		for _, pid := range pids {
			if strings.Contains(line, fmt.Sprintf(" pid %d conn ", pid)) {
				conn := strings.Fields(line)[0]
				if out, err := exec.Command("rabbitmqctl", "close_connection", conn, "zcgw test: broker connection restart").CombinedOutput(); err != nil {
					t.Fatalf("rabbitmqctl close_connection %s: %v\n%s", conn, err, out)
				}
				closed++
			}
		}
	}
	return closed
}

const opening = 1_000_000

// A node whose two banks' cores are separate `zcgw coresim --mq URL`
// processes settles every transfer exactly once over RabbitMQ while one
// core is SIGKILLed and restarted and while the broker closes every
// connection of the node and the cores.
func TestExternalCoresOverRabbitMQExactlyOnce(t *testing.T) {
	requireBroker(t)
	if _, err := exec.LookPath("rabbitmqctl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("rabbitmqctl not found and CI=true")
		}
		t.Skip("rabbitmqctl not found: cannot restart broker connections")
	}
	root := t.TempDir()
	dataDir, logDir := filepath.Join(root, "node"), filepath.Join(root, "logs")
	for _, d := range []string{dataDir, logDir} {
		os.MkdirAll(d, 0o755)
	}
	// Queue names of this run only: the broker is shared.
	prefix := "T" + mq.NewID().String()[:8] + ".{bank}."
	banks := []string{"001", "002"}
	cfg := node.Config{CronSecret: "brokers-cron", Workers: 2,
		MQ: &node.MQConfig{Kind: node.MQRabbitMQ, URL: brokerURL, Queues: &node.MQQueues{Prefix: prefix}}}
	cfg.APIKeys = append(cfg.APIKeys, node.APIKey{Scope: signing.ScopeOperator, Name: "operator", Secret: node.Secret{Current: "brokers-operator"}})
	accounts := map[string][]string{}
	for _, id := range banks {
		b := node.BankConfig{BankID: id, Name: "Bank " + id, HLimit: 10_000_000_000_000, RealTime: true, Core: node.CoreExternal}
		for n := 1; n <= 2; n++ {
			core := fmt.Sprintf("100-1-%07d", n)
			accounts[id] = append(accounts[id], core)
			b.Accounts = append(b.Accounts, node.Account{Hash: fmt.Sprintf("h:%s-%04d", id, n), CoreAccount: core, Name: fmt.Sprintf("ｺｷｬｸ %s %d", id, n), Balance: opening})
		}
		cfg.Banks = append(cfg.Banks, b)
		cfg.APIKeys = append(cfg.APIKeys, node.APIKey{Scope: signing.ScopeParticipant, BankID: id, Name: "bank-" + id, Secret: node.Secret{Current: "brokers-key-" + id}})
	}
	raw, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(filepath.Join(dataDir, node.ConfigFile), raw, 0o600)
	os.WriteFile(filepath.Join(dataDir, "jobs.json"), []byte(`{"catch_up_max_days": 0, "jobs": {}}`), 0o600)

	coreArgs := func(id string) []string {
		args := []string{"--data", filepath.Join(root, "core-"+id), "coresim", "--bank", id, "--mq", brokerURL, "--queue-prefix", prefix}
		for i, a := range accounts[id] {
			args = append(args, "--open", fmt.Sprintf("%s:ｺｷｬｸ %s %d:%d", a, id, i+1, opening))
		}
		return args
	}
	cores := map[string]*proc.Proc{}
	for _, id := range banks {
		os.MkdirAll(filepath.Join(root, "core-"+id), 0o755)
		cores[id] = start(t, logDir, "core-"+id, "coresim "+id+": serving", coreArgs(id)...)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	nd := start(t, logDir, "node", "zcgw serving on", "serve", "--data", dataDir, "--addr", addr)

	client := &http.Client{Timeout: 15 * time.Second}
	post := func(i int) {
		t.Helper()
		key := fmt.Sprintf("brokers-%03d", i)
		pi := orchestrator.PaymentInitiated{Lane: orchestrator.LaneExpress, Purpose: "P2P", ClientRef: key, SchemaVersion: gateway.SchemaCurrent,
			Amount: bankapi.Amount{Value: int64(100 + i), Currency: "JPY"},
			Payer:  orchestrator.Party{BankID: "001", AccountHash: fmt.Sprintf("h:001-%04d", 1+i%2)},
			Payee:  orchestrator.Party{BankID: "002", AccountHash: fmt.Sprintf("h:002-%04d", 1+(i/2)%2)}}
		body, _ := json.Marshal(gateway.TransferRequest{PaymentInitiated: pi, IdempotencyKey: key})
		for try := 0; ; try++ {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/transfers", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Api-Key", "brokers-key-001")
			req.Header.Set("X-Request-Id", key)
			resp, err := client.Do(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					return
				}
				if resp.StatusCode/100 == 4 && resp.StatusCode != 409 && resp.StatusCode != 429 {
					t.Fatalf("transfer %s refused: %d %s", key, resp.StatusCode, b)
				}
				err = fmt.Errorf("%d %s", resp.StatusCode, b)
			}
			if try == 60 {
				t.Fatalf("transfer %s: no definitive answer: %v\nnode:\n%s", key, err, nd.Tail(40))
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	const total = 24
	for i := 0; i < total; i++ {
		switch i {
		case 8: // SIGKILL bank 002's core and start it again.
			cores["002"].Signal(syscall.SIGKILL)
			cores["002"] = start(t, logDir, "core-002", "coresim 002: serving", coreArgs("002")...)
		case 16: // The broker drops every connection of the node and the cores.
			if n := closeBrokerConnections(t, nd.Pid(), cores["001"].Pid(), cores["002"].Pid()); n < 3 {
				t.Fatalf("closed %d broker connections, want the node's and both cores'", n)
			}
		}
		post(i)
	}

	// Every transfer settles.
	zc, err := sql.Open("sqlite3", "file:"+filepath.Join(dataDir, "zc.db")+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	settled := map[string]int64{}
	for deadline := time.Now().Add(90 * time.Second); ; {
		rows, err := zc.Query(`SELECT txid, state, amount_value FROM Transactions`)
		if err != nil {
			t.Fatal(err)
		}
		open := 0
		clear(settled)
		for rows.Next() {
			var id, state string
			var amount int64
			rows.Scan(&id, &state, &amount)
			if state == "SETTLED" {
				settled[id] = amount
			} else {
				open++
			}
		}
		rows.Close()
		if open == 0 && len(settled) == total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d transfers settled, %d not\nnode:\n%s\ncore 002:\n%s", len(settled), total, open, nd.Tail(40), cores["002"].Tail(40))
		}
		time.Sleep(300 * time.Millisecond)
	}
	// And every core posting of the adapters' outboxes is applied (the
	// coordinator settles first; the outbox drains to the cores after).
	for _, id := range banks {
		ob, err := sql.Open("sqlite3", "file:"+filepath.Join(dataDir, "adapter-"+id+".db")+"?mode=ro&_busy_timeout=5000")
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(90 * time.Second); ; {
			var left int
			if err := ob.QueryRow(`SELECT COUNT(*) FROM AdapterOutbox WHERE status != 'APPLIED'`).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("bank %s: %d outbox postings not applied\nnode:\n%s", id, left, nd.Tail(40))
			}
			time.Sleep(300 * time.Millisecond)
		}
		ob.Close()
	}
	nd.Signal(syscall.SIGTERM)
	for _, id := range banks {
		cores[id].Signal(syscall.SIGTERM)
	}

	// The broker connections were really lost and taken up again.
	for name, want := range map[string]string{"node": "corelink.reconnected", "core-001": "coresim.reconnected", "core-002": "coresim.reconnected"} {
		if b, _ := os.ReadFile(filepath.Join(logDir, name+".log")); !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s log has no %s line", name, want)
		}
	}

	// Each core applied each posting exactly once: one debit at 001 and
	// one credit at 002 per settled transfer, nothing else, and balances
	// that add up.
	var moved int64
	for _, a := range settled {
		moved += a
	}
	for _, id := range banks {
		core, err := coresim.Open(context.Background(), coresim.Config{Bank: id, DBPath: filepath.Join(root, "core-"+id, "core-"+id+".db")})
		if err != nil {
			t.Fatal(err)
		}
		lines, err := core.Journal(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, ln := range lines {
			if ln.Source == coresim.SourceSeed {
				continue
			}
			seen[ln.TxID]++
			if want, ok := settled[ln.TxID]; !ok || ln.Amount != want {
				t.Errorf("core %s: journal line %+v is not one of the settled transfers", id, ln)
			}
		}
		for tx := range settled {
			if seen[tx] != 1 {
				t.Errorf("core %s: transfer %s applied %d times, want exactly once", id, tx, seen[tx])
			}
		}
		var sum int64
		for _, a := range accounts[id] {
			b, err := core.Balance(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			sum += b.Balance
		}
		want := int64(2*opening) - moved
		if id == "002" {
			want = int64(2*opening) + moved
		}
		if sum != want {
			t.Errorf("core %s: balances sum to %s, want %s", id, strconv.FormatInt(sum, 10), strconv.FormatInt(want, 10))
		}
		core.Close()
	}
}
