package adapterconf

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/outbox"
)

// randomSchedules is how many fault schedules TestRandomFaultSchedules
// runs (ZCGW_SCHEDULES overrides).
const randomSchedules = 200

// TestRandomFaultSchedules runs seeded schedules of mixed postings
// (credits, reserved and HIGH_VALUE debits, compensations, duplicate and
// concurrent requests) interleaved with drains under random faults (reply
// lost, reply late, crash after apply, broker redelivery, core offline,
// concurrent drainers, a drainer dying after its claim). After each
// schedule the outbox is settled and the suite asserts: no posting was
// journalled twice, none was lost (every approved posting is APPLIED
// exactly once), nothing was refused that the shadow approved, and every
// account's shadow equals the core (drift 0).
//
// The seed is logged; ZCGW_SEED=<seed> replays the run.
func TestRandomFaultSchedules(t *testing.T) { runRandom(t, false, randomSchedules) }

// TestRandomFaultSchedulesRabbitMQ runs the same seeded schedules (fewer of
// them) over RabbitMQ; it skips without a broker except under CI=true.
func TestRandomFaultSchedulesRabbitMQ(t *testing.T) {
	needRabbit(t)
	runRandom(t, true, randomSchedules/16)
}

func runRandom(t *testing.T, overRabbit bool, n int) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("ZCGW_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("ZCGW_SEED=%q: %v", s, err)
		}
		seed = v
	}
	if s := os.Getenv("ZCGW_SCHEDULES"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			n = v
		}
	}
	t.Logf("seed %d (replay: ZCGW_SEED=%d go test ./test/adapterconf -run %s)", seed, seed, t.Name())
	timeout := 40 * time.Millisecond
	if overRabbit {
		timeout = 100 * time.Millisecond
	}
	e := newEnv(t, options{realTime: true, timeout: timeout, rabbit: overRabbit})
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	for i := 0; i < n; i++ {
		s := &schedule{e: e, t: t, rng: rng, id: i, want: map[string]int64{}, debits: map[string]int64{}}
		s.run()
		if t.Failed() {
			t.Fatalf("schedule %d failed; replay with ZCGW_SEED=%d", i, seed)
		}
	}
	// The faults must actually have bitten: some postings were in doubt
	// and settled by an inquiry by reference.
	var rows, inquired int
	for _, r := range e.rows(outbox.Filter{Limit: 1_000_000}) {
		rows++
		if r.Lookups > 0 {
			inquired++
		}
	}
	t.Logf("%d schedules, %d postings, %d settled by an inquiry by reference", n, rows, inquired)
	if n >= randomSchedules && inquired == 0 {
		t.Errorf("no posting was ever in doubt: the fault schedules are not exercising the outbox")
	}
}

type schedule struct {
	e      *env
	t      *testing.T
	rng    *rand.Rand
	id     int
	seq    int
	accts  []string
	want   map[string]int64 // expected core balance per account
	debits map[string]int64 // txid -> debited amount, not yet compensated
	lastTx string
	last   func() error // replays the previous request (same request_id)
	log    []string
}

func (s *schedule) note(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

func (s *schedule) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Errorf("schedule %d: %s\nsteps:\n  %s", s.id, fmt.Sprintf(format, args...), joinLines(s.log))
}

func joinLines(ls []string) string {
	out := ""
	for i, l := range ls {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}

func (s *schedule) next(prefix string) string {
	s.seq++
	return fmt.Sprintf("S%d-%s%d", s.id, prefix, s.seq)
}

func (s *schedule) run() {
	e := s.e
	for k := 0; k < 2; k++ {
		h := fmt.Sprintf("h:s%d-%d", s.id, k)
		bal := s.rng.Int64N(5000)
		e.account(h, fmt.Sprintf("HOLDER %d %d", s.id, k), bal)
		s.accts = append(s.accts, h)
		s.want[h] = bal
	}
	ops := 3 + s.rng.IntN(4)
	for k := 0; k < ops; k++ {
		s.op()
		if s.rng.IntN(2) == 0 {
			s.drainWithFault()
		}
	}
	s.drainWithFault()
	// Recover: faults off, core online, then every recovery path.
	e.core.InjectFaultsForTest(coresim.Faults{})
	e.core.SetOffline(false)
	time.Sleep(10 * time.Millisecond) // redeliveries and late replies land
	e.clk.Advance(10 * time.Minute)
	if _, err := e.a.Outbox().RecoverStaleClaims(e.ctx, 5*time.Minute); err != nil {
		s.fail("recover: %v", err)
	}
	e.settle()
	s.check()
}

func (s *schedule) acct() string { return s.accts[s.rng.IntN(len(s.accts))] }

func (s *schedule) op() {
	e := s.e
	switch p := s.rng.IntN(100); {
	case p < 30: // credit
		h, tx, amt := s.acct(), s.next("TX"), 1+s.rng.Int64N(2000)
		req := credit(s.next("R"), tx, h, amt)
		s.last = func() error { _, err := e.a.ExecuteCredit(e.ctx, req); return err }
		if err := s.last(); err != nil {
			s.fail("credit %s: %v", tx, err)
			return
		}
		s.want[h] += amt
		s.note("credit %s %s %d", tx, h, amt)
	case p < 55: // HIGH_VALUE debit (may be refused by the shadow)
		h, tx, amt := s.acct(), s.next("TX"), 1+s.rng.Int64N(3000)
		req := debitHV(s.next("R"), tx, h, amt)
		s.last = func() error { _, err := e.a.ExecuteDebit(e.ctx, req); return err }
		err := s.last()
		switch {
		case err == nil:
			s.want[h] -= amt
			s.debits[tx] = amt
			s.lastTx = tx
			s.note("debit %s %s %d", tx, h, amt)
		case domainerr.Code(err) == "RESERVE_FAILED":
			s.last = nil
			s.note("debit %s %s %d refused by the shadow", tx, h, amt)
		default:
			s.fail("debit %s: %v", tx, err)
		}
	case p < 70: // reserve then debit
		h, tx, amt := s.acct(), s.next("TX"), 1+s.rng.Int64N(3000)
		r, err := e.a.ReserveFunds(e.ctx, bankapi.ReserveFundsRequest{RequestIDValue: s.next("R"), TxID: tx, Amount: jpy(amt), AccountHash: h})
		if err != nil {
			s.fail("reserve %s: %v", tx, err)
			return
		}
		if r.Result != bankapi.ResultReserved {
			s.note("reserve %s %s %d refused (%s)", tx, h, amt, r.ReasonCode)
			return
		}
		req := debitReserved(s.next("R"), tx, r.ReservationRef, amt)
		s.last = func() error { _, err := e.a.ExecuteDebit(e.ctx, req); return err }
		if err := s.last(); err != nil {
			s.fail("reserved debit %s: %v", tx, err)
			return
		}
		s.want[h] -= amt
		s.debits[tx] = amt
		s.lastTx = tx
		s.note("reserve+debit %s %s %d", tx, h, amt)
	case p < 80: // compensate the last debit
		amt, ok := s.debits[s.lastTx]
		if !ok {
			return
		}
		tx := s.lastTx
		req := adapter.CompensateRequest{RequestIDValue: s.next("R"), TxID: tx, Reason: "EXEC_CREDIT_FAILED"}
		s.last = func() error { _, err := e.a.Compensate(e.ctx, req); return err }
		if err := s.last(); err != nil {
			s.fail("compensate %s: %v", tx, err)
			return
		}
		delete(s.debits, tx)
		for _, h := range s.accts {
			if s.rows(tx, h) > 0 {
				s.want[h] += amt
			}
		}
		s.note("compensate %s %d", tx, amt)
	case p < 90: // the same request again (sequential duplicate)
		if s.last == nil {
			return
		}
		if err := s.last(); err != nil {
			s.fail("duplicate request: %v", err)
		}
		s.note("duplicate of the previous request")
	default: // the same request from several callers at once
		if s.last == nil {
			return
		}
		var wg sync.WaitGroup
		for k := 0; k < 3; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.last(); err != nil && domainerr.Code(err) != "LEGACY_ADAPTER_REQUEST_IN_FLIGHT" {
					s.t.Errorf("schedule %d: concurrent duplicate: %v", s.id, err)
				}
			}()
		}
		wg.Wait()
		s.note("3 concurrent duplicates of the previous request")
	}
}

// rows counts the DEBIT postings of tx on account h.
func (s *schedule) rows(tx, h string) int {
	n := 0
	for _, r := range s.e.rows(outbox.Filter{TxID: tx, Account: s.e.coreAcc[h]}) {
		if r.Posting.Kind == outbox.Debit {
			n++
		}
	}
	return n
}

func (s *schedule) drainWithFault() {
	e := s.e
	switch f := s.rng.IntN(9); f {
	case 0:
		s.note("drain")
		e.drain()
	case 1:
		s.note("drain, reply lost")
		e.core.InjectFaultsForTest(coresim.Faults{DropNextReply: 1})
		e.drain()
	case 2:
		s.note("drain, reply late")
		e.core.InjectFaultsForTest(coresim.Faults{DelayNextReply: 1, ReplyDelay: e.opts.timeout + 20*time.Millisecond})
		e.drain()
		e.core.InjectFaultsForTest(coresim.Faults{})
	case 3:
		s.note("drain, core crashes after apply")
		e.core.InjectFaultsForTest(coresim.Faults{CrashAfterApplyBeforeReply: 1})
		e.drain()
	case 4:
		s.note("drain, broker delivers twice")
		e.core.InjectFaultsForTest(coresim.Faults{DeliverTwice: 1})
		e.drain()
	case 5:
		s.note("drain, core offline")
		e.core.SetOffline(true)
		e.drain()
		e.core.SetOffline(false)
	case 6:
		s.note("3 concurrent drains")
		var wg sync.WaitGroup
		for k := 0; k < 3; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.a.Outbox().Drain(e.ctx, 100); err != nil {
					s.t.Errorf("schedule %d: concurrent drain: %v", s.id, err)
				}
			}()
		}
		wg.Wait()
	case 7:
		applied := s.rng.IntN(2) == 0
		ref := e.crashDrainer(applied)
		if ref == "" {
			return
		}
		s.note("a drainer claims %s and dies (after the core applied it: %v)", ref, applied)
		e.drain()
	case 8:
		s.note("resolve in-doubt")
		e.resolve()
	}
}

func (s *schedule) check() {
	e := s.e
	for _, h := range s.accts {
		for _, r := range e.rows(outbox.Filter{Account: e.coreAcc[h], Limit: 10000}) {
			n := len(e.journal(r.Posting.Ref))
			if r.Status != outbox.Applied {
				s.fail("posting %s (%s %d) ended %s (%s): an approved posting must be applied", r.Posting.Ref, r.Posting.Kind, r.Posting.Amount, r.Status, r.ReasonCode)
			}
			if n != 1 {
				s.fail("posting %s journalled %d times", r.Posting.Ref, n)
			}
		}
		core, shadow := e.coreBalance(h), e.shadow(h)
		if core != s.want[h] {
			s.fail("%s: core balance %d, want %d (a posting was lost or doubled)", h, core, s.want[h])
		}
		if shadow.CoreBalance != core || shadow.PendingDebits != 0 || shadow.PendingCredits != 0 {
			s.fail("%s: shadow %+v, core %d", h, shadow, core)
		}
		r, err := e.a.ReconcileAccount(e.ctx, h)
		for try := 0; err == nil && r.Status == adapter.ReconUnavailable && try < 5; try++ {
			r, err = e.a.ReconcileAccount(e.ctx, h) // the inquiry timed out (short test timeouts)
		}
		if err != nil || r.Status != adapter.ReconMatched {
			s.fail("%s: reconciliation %+v %v", h, r, err)
		}
	}
}
