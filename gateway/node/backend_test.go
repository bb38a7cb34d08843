package node

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// configOn is DefaultConfig with every database on backend b: the store
// block of a fresh set of PostgreSQL schemas (dropped when t ends), or
// none (SQLite files in the data folder).
func configOn(t *testing.T, b storetest.Backend, dir string) Config {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	if l := storetest.Locator(t, b, dir); l.Postgres() {
		cfg.Store = &StoreConfig{Kind: string(store.Postgres), URL: l.URL, SchemaPrefix: l.Prefix}
	}
	return cfg
}

// A whole node on each backend: transfers posted over HTTP in both
// directions on two lanes all settle, each core account moves by exactly
// its net amount and its adapter's shadow agrees, every FinalityLog chain
// verifies, and every component lives where the store block says (on
// PostgreSQL no database file is left in the data folder). Restarted on
// the same store, the node finds its rows and settles one more transfer.
func TestWholeNodeOnEachBackend(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		dir := scratch(t)
		cfg := configOn(t, b, dir)
		n, err := Start(ctx, Options{DataDir: dir, Config: &cfg})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { n.Close() }()

		coreOf := map[string][2]string{} // account hash -> bank, core account
		want := map[[2]string]int64{}
		for _, bc := range cfg.Banks {
			for _, a := range bc.Accounts {
				k := [2]string{bc.BankID, a.CoreAccount}
				coreOf[a.Hash] = k
				want[k] = n.coreBalance(t, bc.BankID, a.CoreAccount)
			}
		}
		var total0 int64
		for _, v := range want {
			total0 += v
		}
		const count = 12
		txids := make([]string, count)
		errs := make(chan error, count)
		for i := range count {
			lane, from, to := []string{"EXPRESS", "STANDARD"}[i%2], "001", "002"
			if i%3 == 0 {
				from, to = to, from
			}
			payer, payee := fmt.Sprintf("h:%s-%04d", from, i%3+1), fmt.Sprintf("h:%s-%04d", to, (i+1)%3+1)
			amount := int64(1000 + i)
			want[coreOf[payer]] -= amount
			want[coreOf[payee]] += amount
			go func() {
				body := fmt.Sprintf(`{"lane":"%s","amount":{"value":%d,"currency":"JPY"},"payer":{"bank_id":"%s","account_hash":"%s"},`+
					`"payee":{"bank_id":"%s","account_hash":"%s"},"purpose":"P2P","participant_ref":"be-%d","schema_version":"1.1","idempotency_key":"be-%d"}`,
					lane, amount, from, payer, to, payee, i, i)
				a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor(from), nil, body)
				if a.status != 201 {
					errs <- fmt.Errorf("transfer %d: %d %s", i, a.status, a.body)
					return
				}
				txids[i] = a.field("txid")
				errs <- nil
			}()
		}
		for range count {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range txids {
			n.waitState(t, id, "SETTLED", 60*time.Second)
		}
		n.waitBalances(t, want)
		var total1 int64
		for k := range want {
			total1 += n.coreBalance(t, k[0], k[1])
		}
		if total1 != total0 {
			t.Fatalf("money not conserved: %d -> %d", total0, total1)
		}
		checkShadows(t, n, coreOf)
		rep, err := finality.VerifyAll(ctx, n.DB)
		if err != nil || !rep.OK() || rep.Chains < count {
			t.Fatalf("chains: %+v %v", rep, err)
		}
		for _, id := range txids {
			if r, err := finality.VerifyChain(ctx, n.DB, id); err != nil || !r.OK() || r.Entries < 2 {
				t.Errorf("chain %s: %+v %v", id, r, err)
			}
		}
		for _, comp := range cfg.Components() {
			if ok, err := n.Stores.Exists(ctx, comp); !ok || err != nil {
				t.Errorf("component %s: not at %s (%v)", comp, n.Stores.Describe(comp), err)
			}
		}
		dbFiles, _ := filepath.Glob(filepath.Join(dir, "*.db"))
		if b.Name == "postgres" && len(dbFiles) > 0 {
			t.Errorf("database files in the data folder of a PostgreSQL node: %v", dbFiles)
		}
		if b.Name == "sqlite" && len(dbFiles) != len(cfg.Components()) {
			t.Errorf("database files %v, want one per component %v", dbFiles, cfg.Components())
		}

		// Restart on the same store: the rows are there, and it settles.
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		if n, err = Start(ctx, Options{DataDir: dir, Config: &cfg}); err != nil {
			t.Fatal(err)
		}
		for _, id := range txids[:2] {
			n.waitState(t, id, "SETTLED", time.Second)
		}
		a := n.do(t, "POST", "/api/transfers", n.Config.KeyFor("001"), nil, transferBody("be-after-restart", 777, "h:001-0003", "h:002-0003"))
		if a.status != 201 {
			t.Fatalf("after restart: %d %s", a.status, a.body)
		}
		n.waitState(t, a.field("txid"), "SETTLED", 60*time.Second)
		want[coreOf["h:001-0003"]] -= 777
		want[coreOf["h:002-0003"]] += 777
		n.waitBalances(t, want)
		checkShadows(t, n, coreOf)
		if rep, err := finality.VerifyAll(ctx, n.DB); err != nil || !rep.OK() || rep.Chains < count+1 {
			t.Fatalf("chains after restart: %+v %v", rep, err)
		}
	})
}

// checkShadows: each adapter's shadow of an account equals its core's
// balance, with nothing pending.
func checkShadows(t *testing.T, n *Node, coreOf map[string][2]string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for hash, k := range coreOf {
		for {
			s, err := n.Banks[k[0]].Adapter.Shadow(context.Background(), hash)
			if err != nil {
				t.Fatal(err)
			}
			core := n.coreBalance(t, k[0], k[1])
			if s.CoreBalance == core && s.PendingDebits == 0 && s.PendingCredits == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("shadow of %s: %+v, core %d", hash, s, core)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
