package multinode_test

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
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/gateway/node"
	"github.com/zcgw/zcgw/test/internal/proc"
)

const (
	transfers = 120              // posted over the run, round robin over the nodes
	clients   = 6                // concurrent senders
	killAfter = transfers / 3    // the victim is SIGKILLed once this many are answered
	victim    = 0                // node 1: started first, it holds the drain leases and consumes the core queues
	settle    = 90 * time.Second // bound on "never" for every transfer to be terminal
)

// TestThreeNodesSurviveASIGKILL: three nodes on one PostgreSQL database,
// transfers posted to all three, node 1 — the first started, so the holder
// of both banks' drain leases and the consumer of both core queues —
// SIGKILLed a third of the way in (its requests then go to the others
// with the same key and body) and restarted once two thirds are answered:
// the others take its leases and queues over. Then every transfer is SETTLED,
// every posting is APPLIED in its outbox and journalled exactly once at
// its core, every FinalityLog chain verifies, and every job ran once per
// business date and slot.
func TestThreeNodesSurviveASIGKILL(t *testing.T) {
	pg, ok := storetest.Postgres(t) // CI=true: a missing server fails here
	if !ok {
		t.Skip("the three-node test needs PostgreSQL (ZCGW_TEST_POSTGRES, default 127.0.0.1:5432): skipped")
	}
	ctx := context.Background()
	root := t.TempDir()
	shared := storetest.Locator(t, pg, root) // fresh schemas under one prefix, dropped when the test ends
	prefix := shared.Prefix
	logDir := filepath.Join(root, "logs")
	if d := os.Getenv("ZCGW_MULTINODE_LOGS"); d != "" { // keep the nodes' logs past the test
		logDir = d
	}
	must(t, os.MkdirAll(logDir, 0o755))
	cfg := node.DefaultConfig()
	cfg.Store = &node.StoreConfig{Kind: "postgres", URL: shared.URL, SchemaPrefix: prefix}
	cfg.FilesRoot = filepath.Join(root, "files") // one drop folder for the three
	raw, err := json.MarshalIndent(cfg, "", "  ")
	must(t, err)
	dirs, addrs := make([]string, 3), make([]string, 3)
	for i := range dirs {
		dirs[i], addrs[i] = filepath.Join(root, fmt.Sprintf("node%d", i+1)), freeAddr(t)
		must(t, os.MkdirAll(dirs[i], 0o755))
		must(t, os.WriteFile(filepath.Join(dirs[i], node.ConfigFile), raw, 0o600))
	}
	var livesMu sync.Mutex // nodes 2 and 3 start at once
	lives := map[int]int{}
	startNode := func(i int) *proc.Proc {
		livesMu.Lock()
		lives[i]++
		life := lives[i]
		livesMu.Unlock()
		return proc.StartReady(t, proc.Config{Bin: zcgwBin, Args: []string{"serve", "--data", dirs[i], "--addr", addrs[i]},
			Log: filepath.Join(logDir, fmt.Sprintf("node%d-life%d.log", i+1, life)), Ready: "zcgw serving on ",
			Drop: []string{"ZCGW_FAILPOINTS", "ZCGW_DATA"}}, 90*time.Second)
	}
	nodes := make([]*proc.Proc, 3)
	nodes[0] = startNode(0) // creates the schemas and the ZC signing key
	key, err := os.ReadFile(filepath.Join(dirs[0], "zc-ed25519.key"))
	must(t, err)
	for _, i := range []int{1, 2} {
		must(t, os.WriteFile(filepath.Join(dirs[i], "zc-ed25519.key"), key, 0o600))
	}
	var wg sync.WaitGroup
	for _, i := range []int{1, 2} {
		wg.Add(1)
		go func() { defer wg.Done(); nodes[i] = startNode(i) }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// The load: EXPRESS transfers between the rich default accounts of
	// the two banks, each sent to node k%3 first; a request without a
	// definitive answer goes to the next node with the same key and body.
	type account struct{ bank, hash string }
	var accts []account
	for _, b := range cfg.Banks {
		for _, a := range b.Accounts {
			accts = append(accts, account{b.BankID, a.Hash})
		}
	}
	var mu sync.Mutex
	var killed, restarted bool
	accepted := map[string]string{} // idempotency key -> txid
	retried5xx := 0                 // 5xx answers resent (docs/storage.md "Not yet done": deadlocks at FinalitySeq)
	var down sync.RWMutex           // held while node 2 is being killed or restarted
	client := &http.Client{Timeout: 15 * time.Second}
	send := func(k int) {
		payer := accts[k%len(accts)]
		payee := accts[(k+1+k%(len(accts)-1))%len(accts)] // offset 1..n-1: never the payer
		key := fmt.Sprintf("mn-%s-%04d", prefix, k)
		pi := orchestrator.PaymentInitiated{Lane: orchestrator.LaneExpress, Purpose: "P2P", ClientRef: key, SchemaVersion: gateway.SchemaCurrent,
			Amount: bankapi.Amount{Value: int64(100 + k), Currency: "JPY"},
			Payer:  orchestrator.Party{BankID: payer.bank, AccountHash: payer.hash}, Payee: orchestrator.Party{BankID: payee.bank, AccountHash: payee.hash}}
		body, _ := json.Marshal(gateway.TransferRequest{PaymentInitiated: pi, IdempotencyKey: key})
		deadline := time.Now().Add(settle)
		for try := 0; ; try++ {
			target := (k + try) % 3
			down.RLock()
			req, _ := http.NewRequest(http.MethodPost, "http://"+addrs[target]+"/api/transfers", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Api-Key", cfg.KeyFor(payer.bank))
			resp, err := client.Do(req)
			down.RUnlock()
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					var res struct {
						TxID string `json:"txid"`
					}
					if err := json.Unmarshal(b, &res); err != nil || res.TxID == "" {
						t.Errorf("%s: answer %d without a txid: %s", key, resp.StatusCode, b)
						return
					}
					mu.Lock()
					if prev, ok := accepted[key]; ok && prev != res.TxID {
						t.Errorf("%s answered %s and %s", key, prev, res.TxID)
					}
					accepted[key] = res.TxID
					mu.Unlock()
					return
				}
				if resp.StatusCode/100 == 4 && resp.StatusCode != 409 && resp.StatusCode != 429 {
					t.Errorf("%s refused by node %d: %d %s", key, target+1, resp.StatusCode, b)
					return
				}
			}
			if resp != nil && resp.StatusCode/100 == 5 {
				mu.Lock()
				retried5xx++
				mu.Unlock()
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: no definitive answer from any node: %v", key, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	next := make(chan int)
	var senders sync.WaitGroup
	for range clients {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for k := range next {
				send(k)
			}
		}()
	}
	for k := range transfers {
		next <- k
		mu.Lock()
		n := len(accepted)
		mu.Unlock()
		switch {
		case !killed && n >= killAfter:
			killed = true
			holders := drainHolders(t, cfg.Locator(dirs[0]), cfg)
			down.Lock()
			nodes[victim].Kill()
			down.Unlock()
			t.Logf("node %d SIGKILLed after %d of %d transfers were accepted; it held the drain leases %v", victim+1, n, transfers, holders)
		case killed && !restarted && n >= 2*killAfter:
			restarted = true
			nodes[victim] = startNode(victim)
			t.Logf("node %d restarted after %d accepted", victim+1, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(next)
	senders.Wait()
	if !killed {
		t.Fatalf("node %d was never killed (%d accepted)", victim+1, len(accepted))
	}
	if len(accepted) != transfers {
		t.Fatalf("%d of %d transfers accepted", len(accepted), transfers)
	}

	// The shared database, read as an auditor would.
	stores := cfg.Locator(dirs[0])
	open := func(component string) *store.DB {
		db, err := store.Open(ctx, stores.Location(component), "")
		must(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}
	zc := open(store.CoordinatorDB)
	adapters, cores := map[string]*store.DB{}, map[string]*store.DB{}
	for _, b := range cfg.Banks {
		adapters[b.BankID], cores[b.BankID] = open(store.AdapterDB(b.BankID)), open(store.CoreDB(b.BankID))
	}

	// Every transfer terminal (SETTLED: rich payers, EXPRESS), within the bound.
	var states map[string]string
	for end := time.Now().Add(settle); ; {
		states = map[string]string{}
		must(t, each(ctx, zc, `SELECT txid, state FROM Transactions`, func(r *sql.Rows) error {
			var id, s string
			err := r.Scan(&id, &s)
			states[id] = s
			return err
		}))
		open := 0
		for _, s := range states {
			if s != "SETTLED" && s != "CANCELLED" && s != "FAILED_EXECUTION" {
				open++
			}
		}
		busy := 0
		for _, db := range adapters {
			busy += count(t, db, `SELECT COUNT(*) FROM AdapterOutbox WHERE status <> 'APPLIED'`)
		}
		if open == 0 && busy == 0 {
			break
		}
		if time.Now().After(end) {
			var left []string
			for bank, db := range adapters {
				must(t, each(ctx, db, `SELECT status, COUNT(*) FROM AdapterOutbox WHERE status <> 'APPLIED' GROUP BY status`, func(r *sql.Rows) error {
					var st string
					var n int
					err := r.Scan(&st, &n)
					left = append(left, fmt.Sprintf("bank %s %s %d", bank, st, n))
					return err
				}))
			}
			t.Fatalf("after %s: %d transfers not terminal, %d postings not applied (%v); drain leases %v\nnode 1:\n%s\nnode 2:\n%s\nnode 3:\n%s",
				settle, open, busy, left, drainHolders(t, stores, cfg), nodes[0].Tail(20), nodes[1].Tail(20), nodes[2].Tail(20))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(states) != transfers {
		t.Errorf("%d Transactions rows for %d accepted transfers", len(states), transfers)
	}
	for key, id := range accepted {
		if states[id] != "SETTLED" {
			t.Errorf("transfer %s (%s) is %s, want SETTLED", id, key, states[id])
		}
	}

	// Every posting applied exactly once at its core: each outbox posting
	// APPLIED and journalled once; nothing journalled that no posting asked.
	postings := 0
	for bank, db := range adapters {
		refs := map[string]int{}
		must(t, each(ctx, cores[bank], `SELECT ref FROM CoreJournal WHERE source <> 'OPENING'`, func(r *sql.Rows) error {
			var ref string
			err := r.Scan(&ref)
			refs[ref]++
			return err
		}))
		must(t, each(ctx, db, `SELECT ref, status FROM AdapterOutbox`, func(r *sql.Rows) error {
			var ref, status string
			if err := r.Scan(&ref, &status); err != nil {
				return err
			}
			postings++
			if status != "APPLIED" || refs[ref] != 1 {
				t.Errorf("bank %s posting %s is %s and journalled %d times at the core, want APPLIED once", bank, ref, status, refs[ref])
			}
			delete(refs, ref)
			return nil
		}))
		for ref, n := range refs {
			t.Errorf("bank %s core journalled %s %d times with no posting", bank, ref, n)
		}
	}
	if postings != 2*transfers {
		t.Errorf("%d postings for %d settled transfers, want a debit and a credit each", postings, transfers)
	}

	// Every chain verifies.
	rep, err := finality.VerifyAll(ctx, zc)
	must(t, err)
	for _, b := range rep.Breaks {
		t.Errorf("chain break: %+v", b)
	}

	// A scheduled job fired on every node at once (as the three crons do
	// at a slot's minute): four triggers per node race for one slot of
	// timeout-sweep; exactly one runs it, the others are refused.
	date := time.Now().In(clock.JST).Format(time.DateOnly)
	var ran, refused int
	var jobs sync.WaitGroup
	for i := range 3 * 4 {
		jobs.Add(1)
		go func() {
			defer jobs.Done()
			body := fmt.Sprintf(`{"business_date":%q,"slot":"00:01"}`, date)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addrs[i%3]+"/internal/cron/timeout-sweep", bytes.NewReader([]byte(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Cron-Secret", cfg.CronSecret)
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("trigger on node %d: %v", i%3+1, err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case resp.StatusCode == http.StatusOK:
				ran++
			case resp.StatusCode/100 == 4:
				refused++
			default:
				t.Errorf("trigger on node %d: %d %s", i%3+1, resp.StatusCode, b)
			}
		}()
	}
	jobs.Wait()
	if ran != 1 || refused != 3*4-1 {
		t.Errorf("timeout-sweep slot 00:01 of %s: ran %d times, %d refused; want once and 11", date, ran, refused)
	}

	// Every job ran once per business date and slot: one original run
	// each, taken by one node (its lease), never a second.
	runs, byNode := 0, map[string]int{} // holder of each run's lease
	must(t, each(ctx, zc, `SELECT job, business_date, slot, COUNT(*), MIN(holder) FROM JobRuns WHERE rerun = 0 GROUP BY job, business_date, slot`, func(r *sql.Rows) error {
		var job, date, slot, holder string
		var n int
		if err := r.Scan(&job, &date, &slot, &n, &holder); err != nil {
			return err
		}
		runs++
		if n != 1 {
			t.Errorf("job %s ran %d times for %s slot %s", job, n, date, slot)
		}
		byNode[holder]++
		return nil
	}))
	if runs == 0 {
		t.Errorf("no job ran during the test: the once-per-date check saw nothing")
	}

	t.Logf("drain leases at the end: %v; 5xx answers resent with the same key: %d", drainHolders(t, stores, cfg), retried5xx)
	t.Logf("%d transfers SETTLED over 3 nodes (node 1 killed and restarted), %d postings applied once, %d chains / %d entries verified, %d job runs (by node: %v)",
		len(accepted), postings, rep.Chains, rep.Entries, runs, byNode)

	for i, p := range nodes {
		if code, err := p.Stop(30 * time.Second); code != 0 || err != nil {
			t.Errorf("node %d: SIGTERM: exit %d, %v\n%s", i+1, code, err, p.Tail(20))
		}
	}
}

// drainHolders reads each bank's drain lease holder.
func drainHolders(t *testing.T, stores store.Locator, cfg node.Config) map[string]string {
	ctx := context.Background()
	out := map[string]string{}
	for _, b := range cfg.Banks {
		db, err := store.Open(ctx, stores.Location(store.AdapterDB(b.BankID)), "")
		must(t, err)
		var holder string
		if err := db.Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, `SELECT holder FROM OutboxDrainLease WHERE name = 'drain'`).Scan(&holder)
		}); err != nil {
			holder = err.Error()
		}
		db.Close()
		out[b.BankID] = holder
	}
	return out
}

func each(ctx context.Context, db *store.DB, q string, scan func(*sql.Rows) error) error {
	return db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

func count(t *testing.T, db *store.DB, q string) int {
	t.Helper()
	var n int
	must(t, db.Read(context.Background(), func(tx *store.Tx) error { return tx.QueryRowContext(context.Background(), q).Scan(&n) }))
	return n
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().String()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
