package node

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/outbox"
)

// TestRestartTakesBackOutboxClaimsOfItsEarlierStart: a node killed while
// its outbox loop held claims leaves CLAIMED rows owned by its old epoch.
// The next start on the same folder takes them back at once and settles
// them (inquiry, then send: the core applies each exactly once), well
// within 10 s; a claim held by another owner whose lease has not run out
// is left alone.
func TestRestartTakesBackOutboxClaimsOfItsEarlierStart(t *testing.T) {
	n := start(t)
	cfg := n.Config
	dir, bank := n.DataDir, cfg.Banks[0]
	acct := bank.Accounts[0].CoreAccount
	before := n.coreBalance(t, bank.BankID, acct)
	node, oldEpoch := n.ID.Node, n.ID
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	// What the killed start left behind: two claims of its own outbox loop
	// (one sent before it died, one not) and one of another live process.
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(dir, "adapter-"+bank.BankID+".db"), outbox.Schema)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.New(outbox.Config{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	refs := []string{"KILLED-1", "KILLED-2", "OTHER-1"}
	owners := []string{oldEpoch.Owner("outbox"), oldEpoch.Owner("outbox"), procid.New("node-elsewhere", clock.System{}).Owner("outbox")}
	ids := make([]int64, len(refs))
	for i, ref := range refs {
		p := outbox.Posting{Ref: ref, TxID: "TX-" + ref, Bank: bank.BankID, Account: cfg.Banks[0].Accounts[i].CoreAccount,
			Kind: outbox.Credit, Amount: 100}
		if err := db.Write(ctx, func(tx *store.Tx) error {
			var err error
			if ids[i], err = ob.Enqueue(ctx, tx, p); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE AdapterOutbox SET status = 'CLAIMED', claim_token = ?, claim_owner = ?,
				claimed_at = ?, claim_until = ? WHERE id = ?`, "tok-"+ref, owners[i],
				time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z"), time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000000000Z"), ids[i])
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// KILLED-1 reached the core before the process died.
	core, err := coresim.Open(ctx, coresim.Config{Bank: bank.BankID, DBPath: filepath.Join(dir, "core-"+bank.BankID+".db")})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := core.Post(ctx, coresim.PostIn{Ref: refs[0], TxID: "TX-" + refs[0], Account: acct, Kind: "CREDIT", Amount: 100}); err != nil || !out.Applied {
		t.Fatalf("core post: %+v %v", out, err)
	}
	core.Close()

	restarted := time.Now()
	again, err := Start(ctx, Options{DataDir: dir, Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.ID.Node != node {
		t.Fatalf("node id changed: %s -> %s", node, again.ID.Node)
	}
	aob := again.Banks[bank.BankID].Adapter.Outbox()
	for {
		e1, _ := aob.Get(ctx, ids[0])
		e2, _ := aob.Get(ctx, ids[1])
		if e1.Status == outbox.Applied && e2.Status == outbox.Applied {
			break
		}
		if time.Since(restarted) > 10*time.Second {
			t.Fatalf("claims of the earlier start not settled 10 s after restart: %s, %s", e1.Status, e2.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := again.coreBalance(t, bank.BankID, acct); got != before+100 {
		t.Fatalf("core balance %d, want %d (applied exactly once)", got, before+100)
	}
	if e, _ := aob.Get(ctx, ids[1]); e.Sends != 1 {
		t.Fatalf("KILLED-2 (never sent) sent %d times after the inquiry, want 1", e.Sends)
	}
	if e, _ := aob.Get(ctx, ids[0]); e.Sends != 0 || e.Lookups != 1 {
		t.Fatalf("KILLED-1 (applied before the kill): sends %d lookups %d, want settled by one inquiry", e.Sends, e.Lookups)
	}
	if e, _ := aob.Get(ctx, ids[2]); e.Status != outbox.Claimed {
		t.Fatalf("another owner's claim under lease was taken: %s", e.Status)
	}
}

// TestCloseReleasesOutboxClaims: a graceful stop (SIGTERM → Close) while a
// posting is on the wire leaves no CLAIMED row: the loop releases it in a
// context of its own, IN_DOUBT because the core may have applied it (here
// it did; its reply was lost). The next start settles it by inquiry without
// sending it again.
func TestCloseReleasesOutboxClaims(t *testing.T) {
	n := start(t)
	cfg := n.Config
	dir, bank := n.DataDir, cfg.Banks[0]
	acct := bank.Accounts[0].CoreAccount
	b := n.Banks[bank.BankID]
	before := n.coreBalance(t, bank.BankID, acct)
	b.Core.InjectFaultsForTest(coresim.Faults{DropNextReply: 1})
	ctx := context.Background()
	var id int64
	if err := b.Adapter.DB().Write(ctx, func(tx *store.Tx) error {
		var err error
		id, err = b.Adapter.Outbox().Enqueue(ctx, tx, outbox.Posting{Ref: "STOP-1", TxID: "TX-STOP-1", Bank: bank.BankID,
			Account: acct, Kind: outbox.Credit, Amount: 100})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, err := b.Adapter.Outbox().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if e.Status == outbox.Claimed && b.Core.FaultsForTest().DropNextReply == 0 {
			break // applied by the core, its reply dropped: the claimer waits
		}
		if time.Now().After(deadline) {
			t.Fatalf("posting never in flight: %s", e.Status)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, filepath.Join(dir, "adapter-"+bank.BankID+".db"), outbox.Schema)
	if err != nil {
		t.Fatal(err)
	}
	var status string
	var claimed int
	if err := db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT status FROM AdapterOutbox WHERE id = ?`, id).Scan(&status); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterOutbox WHERE status = 'CLAIMED'`).Scan(&claimed)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if claimed != 0 || status != string(outbox.InDoubt) {
		t.Fatalf("after Close: posting %s, %d rows CLAIMED; want IN_DOUBT and none", status, claimed)
	}

	again, err := Start(ctx, Options{DataDir: dir, Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for {
		e, _ := again.Banks[bank.BankID].Adapter.Outbox().Get(ctx, id)
		if e.Status == outbox.Applied {
			if e.Sends != 1 {
				t.Fatalf("sent %d times, want 1 (settled by inquiry)", e.Sends)
			}
			break
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("not settled after restart: %s", e.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := again.coreBalance(t, bank.BankID, acct); got != before+100 {
		t.Fatalf("core balance %d, want %d (applied exactly once)", got, before+100)
	}
}
