package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

func i64(v int64) *int64 { return &v }

func (f *fixture) setParticipant(id string, mod func(*participants.Participant)) {
	f.t.Helper()
	p, err := f.o.Participants().Get(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	mod(&p)
	if _, err := f.o.Participants().Update(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
}

func TestSubmitRefusals(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(f *fixture)
		req    func() PaymentInitiated
		issuer string
		code   string
	}{
		{"max_amount_value", nil, func() PaymentInitiated { return pi(LaneExpress, MaxAmountValue+1) }, "001", "INVALID_AMOUNT"},
		{"zero_amount", nil, func() PaymentInitiated { return pi(LaneExpress, 0) }, "001", "INVALID_AMOUNT"},
		{"negative_amount", nil, func() PaymentInitiated { return pi(LaneExpress, -5) }, "001", "INVALID_AMOUNT"},
		{"currency", nil, func() PaymentInitiated { r := pi(LaneExpress, 10); r.Amount.Currency = "USD"; return r }, "001", "INVALID_CURRENCY"},
		{"unknown_lane", nil, func() PaymentInitiated { return pi("TELEPORT", 10) }, "001", "INVALID_LANE"},
		{"htlc_lane", nil, func() PaymentInitiated { return pi("HTLC", 10) }, "001", "USE_HTLC_ENDPOINT"},
		{"missing_payee_account", nil, func() PaymentInitiated { r := pi(LaneExpress, 10); r.Payee.AccountHash = ""; return r }, "001", "MISSING_FIELD"},
		{"long_txid", nil, func() PaymentInitiated {
			r := pi(LaneExpress, 10)
			r.TxID = "TX-0123456789012345678901234567890"
			return r
		}, "001", "INVALID_REQUEST"},
		{"txid_newline", nil, func() PaymentInitiated { r := pi(LaneExpress, 10); r.TxID = "TX-1\n"; return r }, "001", "INVALID_REQUEST"},
		{"txid_nul", nil, func() PaymentInitiated { r := pi(LaneExpress, 10); r.TxID = "TX-\x001"; return r }, "001", "INVALID_REQUEST"},
		{"txid_non_ascii", nil, func() PaymentInitiated { r := pi(LaneExpress, 10); r.TxID = "TX-送金"; return r }, "001", "INVALID_REQUEST"},
		{"account_hash_60k", nil, func() PaymentInitiated {
			r := pi(LaneExpress, 10)
			r.Payer.AccountHash = strings.Repeat("h", 60<<10)
			return r
		}, "001", "INVALID_REQUEST"},
		{"participant_ref_60k", nil, func() PaymentInitiated {
			r := pi(LaneExpress, 10)
			r.ParticipantRef = strings.Repeat("p", 60<<10)
			return r
		}, "001", "INVALID_REQUEST"},
		{"issuer_not_payer", nil, func() PaymentInitiated { return pi(LaneExpress, 10) }, "002", "UNAUTHORIZED"},
		{"unknown_payee", nil, func() PaymentInitiated { r := pi(LaneExpress, 10); r.Payee.BankID = "999"; return r }, "001", "PARTICIPANT_NOT_FOUND"},
		{"inactive_payer", func(f *fixture) { f.setParticipant("001", func(p *participants.Participant) { p.IsActive = false }) },
			func() PaymentInitiated { return pi(LaneExpress, 10) }, "001", "PARTICIPANT_NOT_FOUND"},
		{"receive_only_payer", func(f *fixture) {
			f.setParticipant("001", func(p *participants.Participant) { p.ParticipationMode = participants.ModeReceiveOnly })
		}, func() PaymentInitiated { return pi(LaneExpress, 10) }, "001", "PARTICIPATION_MODE_RECEIVE_ONLY"},
		{"send_only_payee", func(f *fixture) {
			f.setParticipant("002", func(p *participants.Participant) { p.ParticipationMode = participants.ModeSendOnly })
		}, func() PaymentInitiated { return pi(LaneExpress, 10) }, "001", "INVALID_REQUEST"},
		{"tx_amount_limit", func(f *fixture) {
			f.setParticipant("001", func(p *participants.Participant) { p.TxAmountLimit = i64(5000) })
		},
			func() PaymentInitiated { return pi(LaneExpress, 5001) }, "001", "AMOUNT_EXCEEDS_TX_LIMIT"},
		{"daily_amount_limit", func(f *fixture) {
			f.setParticipant("001", func(p *participants.Participant) { p.DailyAmountLimit = i64(10_000) })
			f.submit(pi(LaneExpress, 6000), "first-of-day")
		}, func() PaymentInitiated { return pi(LaneExpress, 4001) }, "001", "DAILY_LIMIT_EXCEEDED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, nil)
			if c.setup != nil {
				c.setup(f)
			}
			before := f.count(`SELECT COUNT(*) FROM Transactions`)
			_, err := f.o.Submit(f.ctx, c.req(), "key-"+c.name, c.issuer)
			wantCode(t, err, c.code)
			if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != before {
				t.Fatalf("a refused transfer wrote a row (%d -> %d)", before, n)
			}
			if n := f.count(`SELECT COUNT(*) FROM IdempotencyKeys WHERE key = ?`, idemKey(c.issuer, "key-"+c.name)); n != 0 {
				t.Fatal("a refused transfer kept its idempotency key")
			}
		})
	}
}

func TestSubmitWithinLimitsAndDailyTotal(t *testing.T) {
	f := newFixture(t, nil)
	f.setParticipant("001", func(p *participants.Participant) { p.TxAmountLimit = i64(5000); p.DailyAmountLimit = i64(10_000) })
	f.submit(pi(LaneExpress, 5000), "a")
	f.submit(pi(LaneExpress, 5000), "b")
	p, _ := f.o.Participants().Get(f.ctx, "001")
	if p.DailyAmountUsed != 10_000 {
		t.Fatalf("daily used %d", p.DailyAmountUsed)
	}
}

func TestIdempotentReplayPerLane(t *testing.T) {
	for _, ln := range []string{LaneExpress, LaneStandard, LaneHighValue, LaneBulk, LaneDeferred} {
		t.Run(ln, func(t *testing.T) {
			f := newFixture(t, nil)
			req := pi(ln, 7000)
			first := f.submit(req, "same-key")
			again := f.submit(req, "same-key")
			if !again.Replayed || first.Replayed {
				t.Fatalf("replayed flags: first %v again %v", first.Replayed, again.Replayed)
			}
			a, _ := json.Marshal(first)
			b, _ := json.Marshal(again)
			if string(a) != string(b) {
				t.Fatalf("replay differs:\n%s\n%s", a, b)
			}
			if p, _ := f.o.Participants().Get(f.ctx, "001"); p.DailyAmountUsed != 7000 {
				t.Fatalf("daily total counted the replays: %d", p.DailyAmountUsed)
			}
			f.run() // still the same answer after the transfer moved on
			after := f.submit(req, "same-key")
			if c, _ := json.Marshal(after); string(c) != string(a) {
				t.Fatalf("replay after processing differs: %s", c)
			}
			if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 1 {
				t.Fatalf("%d Transactions rows", n)
			}
			if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE event_type = 'PaymentInitiated'`); n != 1 {
				t.Fatalf("%d PaymentInitiated entries", n)
			}
			changed := req
			changed.Amount.Value++
			_, err := f.o.Submit(f.ctx, changed, "same-key", "001")
			wantCode(t, err, "IDEMPOTENCY_KEY_CONFLICT")
			// A cancelled transfer gives its amount back to the daily total.
			want := int64(7000)
			if f.view(first.TxID).State == "CANCELLED" {
				want = 0
			}
			if p, _ := f.o.Participants().Get(f.ctx, "001"); p.DailyAmountUsed != want {
				t.Fatalf("daily total %d after the transfer ended %s, want %d", p.DailyAmountUsed, f.view(first.TxID).State, want)
			}
		})
	}
}

func TestReadOnlyModesRefuseNewTransfersQueriesWork(t *testing.T) {
	for _, mode := range []string{"BCP", "QUORUM"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, nil)
			done := f.submit(pi(LaneExpress, 1000), "before")
			f.run()
			inflight := f.submit(pi(LaneExpress, 2000), "inflight")
			ctl := sysmode.NewController(f.db, f.o.flog, f.clk, nil)
			want := "SYSTEM_BCP_READ_ONLY"
			if mode == "BCP" {
				if _, _, err := ctl.ActivateBCP(f.ctx, "op-1", "vendor outage"); err != nil {
					t.Fatal(err)
				}
			} else {
				want = "SYSTEM_QUORUM_LOSS_READ_ONLY"
				if _, _, err := ctl.ReconcileQuorum(f.ctx, 1, 3); err != nil {
					t.Fatal(err)
				}
			}
			_, err := f.o.Submit(f.ctx, pi(LaneExpress, 3000), "during", "001")
			wantCode(t, err, want)
			// A bad body is refused with the read-only code first.
			_, err = f.o.Submit(f.ctx, pi(LaneExpress, -1), "during-bad", "001")
			wantCode(t, err, want)
			// A replay of an accepted transfer is an answer, not a new transfer.
			if again, err := f.o.Submit(f.ctx, pi(LaneExpress, 1000), "before", "001"); err != nil || !again.Replayed || again.TxID != done.TxID {
				t.Fatalf("replay during read-only: %+v %v", again, err)
			}
			// Queries keep working, for settled and in-flight transfers.
			if v := f.view(done.TxID); v.State != "SETTLED" {
				t.Fatalf("query during read-only: %+v", v)
			}
			// The in-flight transfer cannot move: its work is retried, not dropped.
			f.run()
			v := f.view(inflight.TxID)
			if v.State != "RECEIVED" || v.NextActionHint != HintRetryLater {
				t.Fatalf("in-flight during read-only: %s %s", v.State, v.NextActionHint)
			}
			q, _ := f.o.QueueItems(f.ctx, inflight.TxID)
			if q[0].Status != StatusReady || q[0].LastErrorCode != want {
				t.Fatalf("queue: %+v", q[0])
			}
			if n := f.count(`SELECT COUNT(*) FROM Transactions`); n != 2 {
				t.Fatalf("%d rows", n)
			}
			// Back to NORMAL: the retried work completes.
			if mode == "BCP" {
				_, _, err = ctl.DeactivateBCP(f.ctx, "op-1", "vendor back")
			} else {
				_, _, err = ctl.ReconcileQuorum(f.ctx, 3, 3)
			}
			if err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(f.o.bo.Max)
			f.run()
			if v := f.view(inflight.TxID); v.State != "SETTLED" {
				t.Fatalf("after NORMAL: %s", v.State)
			}
		})
	}
}

func TestHVEscalation(t *testing.T) {
	f := newFixture(t, nil)
	r := f.submit(pi(LaneExpress, 100_000_000), "at-threshold")
	if r.Lane != LaneExpress {
		t.Fatalf("at the default threshold: %s", r.Lane)
	}
	r = f.submit(pi(LaneStandard, 100_000_001), "above-threshold")
	if r.Lane != LaneHighValue || r.RequestedLane != LaneStandard {
		t.Fatalf("above the default threshold: %+v", r)
	}
	f.setParticipant("001", func(p *participants.Participant) { p.HVThreshold = i64(50_000) })
	r = f.submit(pi(LaneExpress, 50_001), "above-participant-threshold")
	if r.Lane != LaneHighValue {
		t.Fatalf("above the participant's threshold: %s", r.Lane)
	}
	var lane string
	if err := f.db.Read(f.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(f.ctx, `SELECT lane FROM Transactions WHERE txid = ?`, r.TxID).Scan(&lane)
	}); err != nil || lane != LaneHighValue {
		t.Fatalf("row lane %q %v", lane, err)
	}
	if n := f.count(`SELECT COUNT(*) FROM FinalityLog WHERE txid = ? AND payload_json LIKE '%PR-HV-THRESHOLD%'`, r.TxID); n != 1 {
		t.Fatal("escalation not recorded in PaymentInitiated")
	}
	_ = bankapi.MaxAmountValue
}

// A cancelled transfer moved no money, so it gives its amount back to the
// payer's daily total and the bank can send again the same day; a settled
// one keeps counting.
func TestCancelledTransferGivesBackDailyTotal(t *testing.T) {
	f := newFixture(t, nil)
	f.setParticipant("001", func(p *participants.Participant) { p.DailyAmountLimit = i64(10_000) })
	f.b.proofType = ProofPayerHVIsolation
	r := f.submit(pi(LaneHighValue, 8_000), "poor") // no BOJ funds: cancelled
	if p, _ := f.o.Participants().Get(f.ctx, "001"); p.DailyAmountUsed != 8_000 {
		t.Fatalf("daily used %d after accepting 8,000", p.DailyAmountUsed)
	}
	_, err := f.o.Submit(f.ctx, pi(LaneExpress, 8_000), "too-much", "001")
	wantCode(t, err, "DAILY_LIMIT_EXCEEDED")
	f.run()
	if v := f.view(r.TxID); v.State != "CANCELLED" {
		t.Fatalf("state %s, want CANCELLED", v.State)
	}
	if p, _ := f.o.Participants().Get(f.ctx, "001"); p.DailyAmountUsed != 0 {
		t.Fatalf("daily used %d after the cancel, want 0", p.DailyAmountUsed)
	}
	var given string
	if err := f.db.Read(f.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(f.ctx, `SELECT json_extract(payload_json, '$.daily_given_back') FROM FinalityLog
			WHERE txid = ? AND state_to = 'DECIDED_CANCEL'`, r.TxID).Scan(&given)
	}); err != nil || given != "8000" {
		t.Fatalf("cancel entry daily_given_back %q (%v), want 8000", given, err)
	}
	ok := f.submit(pi(LaneExpress, 8_000), "again")
	f.run()
	if v := f.view(ok.TxID); v.State != "SETTLED" {
		t.Fatalf("second transfer %s, want SETTLED", v.State)
	}
	if p, _ := f.o.Participants().Get(f.ctx, "001"); p.DailyAmountUsed != 8_000 {
		t.Fatalf("daily used %d after a settled 8,000, want 8,000", p.DailyAmountUsed)
	}
}
