package orchestrator

import (
	"errors"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// TestRetriedExecuteDebitSendsTheFirstBody: the payer bank recorded
// execute-debit but ZC never heard the answer (BANK_TIMEOUT, as when the
// process died), the sweep suspends the transfer (which restarts
// pending_since) and the retry runs a minute later. The retry must send the
// first body byte for byte (the execution_deadline fixed at the decision),
// or the bank answers IDEMPOTENCY_KEY_CONFLICT. The same holds for
// debit-settled across a late retry.
func TestRetriedExecuteDebitSendsTheFirstBody(t *testing.T) {
	f := newFixture(t, nil)
	f.b.failWith(bankapi.ExecuteDebit, domainerr.New("BANK_TIMEOUT", "lost answer", nil), true)
	f.b.failWith(bankapi.DebitSettled, domainerr.New("BANK_TIMEOUT", "lost answer", nil), true)
	r := f.submit(pi(LaneExpress, 1000), "det")
	f.run()
	if v := f.view(r.TxID); v.State != "DECIDED_TO_SETTLE" {
		t.Fatalf("state %s", v.State)
	}
	f.clk.Advance(61 * time.Second)
	if res, err := f.o.TimeoutSweep(f.ctx); err != nil || res.ExecTimeouts != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	f.clk.Advance(5 * time.Minute)
	f.run()
	f.clk.Advance(5 * time.Minute)
	f.run()
	if v := f.view(r.TxID); v.State != "SETTLED" {
		t.Fatalf("state %s", v.State)
	}
	for _, cmd := range []bankapi.Command{bankapi.ExecuteDebit, bankapi.DebitSettled} {
		bodies := f.b.bodies[requestID(r.TxID, cmd)]
		if len(bodies) != 2 {
			t.Fatalf("%s sent %d times, want 2 (first + retry)", cmd, len(bodies))
		}
		if bodies[0] != bodies[1] {
			t.Errorf("%s retry changed the body under the same request_id:\n first %s\n retry %s", cmd, bodies[0], bodies[1])
		}
	}
	if n := f.count(`SELECT COUNT(*) FROM OrchestratorRequests WHERE txid = ?`, r.TxID); n != 2 {
		t.Errorf("%d recorded bodies, want 2 (execute-debit, debit-settled)", n)
	}
}

// TestRestartTakesBackEarlierEpochClaimsAtOnce: a node restarted with the
// same node id takes back, without waiting for the lease, the item its
// earlier start left claimed; an item claimed by another node (alive, as
// far as this node knows) waits for its lease.
func TestRestartTakesBackEarlierEpochClaimsAtOnce(t *testing.T) {
	f := newFixture(t, nil)
	mine := f.submit(pi(LaneExpress, 1000), "mine")
	other := f.submit(pi(LaneExpress, 2000), "other")
	claimAs := func(owner, txid string) {
		t.Helper()
		if err := f.db.Write(f.ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(f.ctx, `UPDATE OrchestratorQueue SET status = 'CLAIMED', claimed_by = ?, next_attempt_at = ?
				WHERE txid = ?`, owner, "2026-12-02T01:00:30.000000000Z", txid)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	claimAs("node-a/20261202T005900.000000000Z-0001/worker-1", mine.TxID)  // this node, earlier start (dead)
	claimAs("node-b/20261202T005900.000000000Z-0002/worker-1", other.TxID) // another node
	o2, err := New(Config{DB: f.db, Banks: f.b, Clock: f.clk, WorkerID: "node-a/20261202T010000.000000000Z-0003/worker-1"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := o2.TakeBackEarlierClaims(f.ctx)
	if err != nil || n != 1 {
		t.Fatalf("took back %d, %v; want 1", n, err)
	}
	if _, err := o2.RunUntilIdle(f.ctx); err != nil {
		t.Fatal(err)
	}
	if v := f.view(mine.TxID); v.State != "SETTLED" {
		t.Fatalf("own earlier claim: state %s, want SETTLED at once", v.State)
	}
	if v := f.view(other.TxID); v.State != "RECEIVED" {
		t.Fatalf("another node's claim was taken before its lease expired: %s", v.State)
	}
	f.clk.Advance(31 * time.Second)
	if _, err := o2.RunUntilIdle(f.ctx); err != nil {
		t.Fatal(err)
	}
	if v := f.view(other.TxID); v.State != "SETTLED" {
		t.Fatalf("after the lease: %s", v.State)
	}
	// A worker name that is not an owner string takes nothing back.
	if n, err := f.o.TakeBackEarlierClaims(f.ctx); err != nil || n != 0 {
		t.Fatalf("%d %v", n, err)
	}
}

// TestLeaseShorterThanTimeouts: a lease that is not shorter than every
// timeout acting on a claimed item is refused; the default follows short
// timeouts.
func TestLeaseShorterThanTimeouts(t *testing.T) {
	db := newFixture(t, nil).db
	for _, c := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"default", Config{}, true},
		{"old default 2m vs Exec 60s", Config{Lease: 2 * time.Minute}, false},
		{"equal to Exec", Config{Lease: time.Minute}, false},
		{"equal to PayeeProof", Config{Lease: 10 * time.Second, Timeouts: Timeouts{Exec: time.Minute, PayeeProof: 10 * time.Second}}, false},
		{"above Suspended", Config{Lease: 50 * time.Second, Timeouts: Timeouts{Suspended: 40 * time.Second}}, false},
		{"shorter", Config{Lease: 59 * time.Second}, true},
		{"short timeouts, default lease", Config{Timeouts: Timeouts{Exec: 10 * time.Second}}, true},
	} {
		c.cfg.DB = db
		o, err := New(c.cfg)
		if c.ok != (err == nil) {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if !c.ok && !errors.Is(err, ErrLeaseTooLong) {
			t.Errorf("%s: %v is not ErrLeaseTooLong", c.name, err)
		}
		if c.ok && o.cfg.Lease >= min(o.to.Exec, o.to.PayeeProof, o.to.Suspended) {
			t.Errorf("%s: lease %s not below the timeouts %+v", c.name, o.cfg.Lease, o.to)
		}
	}
}
