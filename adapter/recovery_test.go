package adapter

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/idem"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/store"
)

var self = procid.Identity{Node: "node-a", Epoch: "20261202T010000.000000000Z-0002"}

// orphan leaves the PROCESSING record of req as a process that claimed it
// and died before the core answered would: the record, and its claim by
// owner with a lease until expires.
func orphan(t *testing.T, h *harness, req bankapi.NameCheckRequest, owner string, expires time.Time) {
	t.Helper()
	body, _ := requestBody(string(bankapi.NameCheck), req)
	err := h.a.db.Write(h.ctx, func(tx *store.Tx) error {
		if _, err := h.a.keys.Acquire(h.ctx, tx, h.a.requestKey(req.RequestIDValue), body); err != nil {
			return err
		}
		_, err := tx.ExecContext(h.ctx, `INSERT INTO AdapterRequestClaims (key, command, body, owner, token, expires_at, created_at)
			VALUES (?, ?, ?, ?, 'T-dead', ?, ?)`, h.a.requestKey(req.RequestIDValue), string(bankapi.NameCheck),
			string(body[len("name-check\n"):]), owner, clock.Stamp(expires), clock.Stamp(h.clk.Now()))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func recordStatus(t *testing.T, h *harness, requestID string) (status string, claims int) {
	t.Helper()
	err := h.a.db.Read(h.ctx, func(tx *store.Tx) error {
		err := tx.QueryRowContext(h.ctx, `SELECT status FROM IdempotencyKeys WHERE key = ?`, h.a.requestKey(requestID)).Scan(&status)
		if err != nil && err.Error() != "sql: no rows in result set" {
			return err
		}
		return tx.QueryRowContext(h.ctx, `SELECT COUNT(*) FROM AdapterRequestClaims WHERE key = ?`, h.a.requestKey(requestID)).Scan(&claims)
	})
	if err != nil {
		t.Fatal(err)
	}
	return status, claims
}

// TestDeadOwnersNameCheckIsCompleted: a name-check whose owner died between
// its claim and the core's answer never stays PROCESSING: an earlier start
// of this node is taken back at once by RecoverRequests, another owner
// after its lease (by recovery or by the retry itself), and a DEFERRED
// answer releases the record for a fresh ask.
func TestDeadOwnersNameCheckIsCompleted(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Identity = self })
	h.account("h:b", "0000002", "ヤマダ タロウ", 0)
	lease := h.clk.Now().Add(DefaultRequestLease)

	// 1. An earlier start of this node: completed at once, the retry replays.
	n1 := bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-1", AccountHash: "h:b"}
	orphan(t, h, n1, "node-a/20261202T005900.000000000Z-0001/adapter-001", lease)
	// 2. Another node, lease running: left alone; its retry is IN_FLIGHT.
	n2 := bankapi.NameCheckRequest{RequestIDValue: "n2", TxID: "TX-2", AccountHash: "h:b"}
	orphan(t, h, n2, "node-b/20261202T005900.000000000Z-0009/adapter-001", lease)
	// 3. Another node, lease running, core offline when recovery asks.
	n3 := bankapi.NameCheckRequest{RequestIDValue: "n3", TxID: "TX-3", AccountHash: "h:b"}
	orphan(t, h, n3, "node-b/20261202T005900.000000000Z-0009/adapter-001", lease)

	got, err := h.a.RecoverRequests(h.ctx)
	if err != nil || got != (Recovered{Completed: 1}) {
		t.Fatalf("recover at start: %+v %v, want 1 completed", got, err)
	}
	if st, claims := recordStatus(t, h, "n1"); st != idem.StatusDone || claims != 0 {
		t.Fatalf("n1: %s with %d claims, want DONE and no claim", st, claims)
	}
	h.core.set(func(c *fakeCore) { c.names["0000002"] = "changed" }) // a replay must not ask again
	if r, err := h.a.NameCheck(h.ctx, n1); err != nil || r.Result != bankapi.ResultMatch {
		t.Fatalf("n1 retry: %+v %v, want the recovered MATCH", r, err)
	}
	h.core.set(func(c *fakeCore) { c.names["0000002"] = "ヤマダ タロウ" })
	if _, err := h.a.NameCheck(h.ctx, n2); domainerr.Code(err) != "LEGACY_ADAPTER_REQUEST_IN_FLIGHT" {
		t.Fatalf("n2 while its owner's lease runs: %v", err)
	}
	if st, _ := recordStatus(t, h, "n2"); st != idem.StatusProcessing {
		t.Fatalf("n2 touched before its lease expired: %s", st)
	}

	h.clk.Advance(DefaultRequestLease + time.Second)
	// n2: the retry itself takes the dead claim over and answers in one step.
	if r, err := h.a.NameCheck(h.ctx, n2); err != nil || r.Result != bankapi.ResultMatch {
		t.Fatalf("n2 retry after the lease: %+v %v", r, err)
	}
	// n3: recovery asks, the core does not answer: released, not stuck.
	h.core.set(func(c *fakeCore) { c.offline = true })
	if got, err := h.a.RecoverRequests(h.ctx); err != nil || got != (Recovered{Abandoned: 1}) {
		t.Fatalf("recover n3 with the core offline: %+v %v", got, err)
	}
	if st, claims := recordStatus(t, h, "n3"); st != "" || claims != 0 {
		t.Fatalf("n3: %q with %d claims, want released", st, claims)
	}
	h.core.set(func(c *fakeCore) { c.offline = false })
	if r, err := h.a.NameCheck(h.ctx, n3); err != nil || r.Result != bankapi.ResultMatch {
		t.Fatalf("n3 asked afresh: %+v %v", r, err)
	}
	if st, claims := recordStatus(t, h, "n2"); st != idem.StatusDone || claims != 0 {
		t.Fatalf("n2: %s with %d claims", st, claims)
	}
}

// TestTakeOverRace: N retries and recoveries racing for one dead claim:
// exactly one takes it over and asks the core; every caller gets MATCH or
// IN_FLIGHT, and the record ends DONE.
func TestTakeOverRace(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Identity = self })
	h.account("h:b", "0000002", "ヤマダ タロウ", 0)
	asked := make(chan struct{}, 64)
	h.core.set(func(c *fakeCore) { c.asked = asked })
	req := bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-1", AccountHash: "h:b"}
	orphan(t, h, req, "node-b/20261202T005900.000000000Z-0009/adapter-001", h.clk.Now().Add(time.Second))
	h.clk.Advance(2 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				if _, err := h.a.RecoverRequests(h.ctx); err != nil {
					errs <- err
				}
				return
			}
			r, err := h.a.NameCheck(h.ctx, req)
			if err != nil && domainerr.Code(err) != "LEGACY_ADAPTER_REQUEST_IN_FLIGHT" {
				errs <- err
			} else if err == nil && r.Result != bankapi.ResultMatch {
				errs <- errors.New("answer " + r.Result)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(asked); n != 1 {
		t.Errorf("the core was asked %d times, want 1 (one takeover)", n)
	}
	if st, claims := recordStatus(t, h, "n1"); st != idem.StatusDone || claims != 0 {
		t.Fatalf("%s with %d claims", st, claims)
	}
}

// TestRunRequestRecoveryTakesBackAtStart: the node's loop recovers an
// earlier start's record without waiting for any lease or job.
func TestRunRequestRecoveryTakesBackAtStart(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Identity = self })
	h.account("h:b", "0000002", "ヤマダ タロウ", 0)
	req := bankapi.NameCheckRequest{RequestIDValue: "n1", TxID: "TX-1", AccountHash: "h:b"}
	orphan(t, h, req, "node-a/20261202T005900.000000000Z-0001/adapter-001", h.clk.Now().Add(time.Hour))
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- h.a.RunRequestRecovery(ctx, time.Hour) }()
	for i := 0; ; i++ {
		if st, _ := recordStatus(t, h, "n1"); st == idem.StatusDone {
			break
		}
		if i > 1000 {
			t.Fatal("the loop did not recover the record")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// TestRequestLeaseBounds: the request lease must outlast an inquiry (else a
// live owner is taken over) and end before the orphan sweep acts.
func TestRequestLeaseBounds(t *testing.T) {
	for _, c := range []struct {
		lease, inquiry time.Duration
		ok             bool
	}{
		{0, 0, true},
		{time.Minute, 2 * time.Second, true},
		{2 * time.Second, 2 * time.Second, false},
		{time.Second, 2 * time.Second, false},
		{idem.OrphanAge, time.Second, false},
	} {
		a, err := Open(context.Background(), Config{BankID: "001", DBPath: filepath.Join(t.TempDir(), "a.db"),
			RequestLease: c.lease, InquiryTimeout: c.inquiry})
		if c.ok != (err == nil) || (!c.ok && !errors.Is(err, ErrRequestLease)) {
			t.Errorf("lease %s inquiry %s: %v", c.lease, c.inquiry, err)
		}
		if a != nil {
			a.Close()
		}
	}
}
