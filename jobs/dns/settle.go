package dns

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// This file is lane.DNSSettleSite: spec 000 §5.2 handoff #2, the one place
// that hands a cycle's transactions back 'CYCLE:<id>' -> 'ZC' in one
// statement — on settlement and on cycle cancel.

// Shortfall is a net debtor whose central-bank balance does not cover its
// net debit.
type Shortfall struct {
	BankID    string `json:"bank_id"`
	Required  int64  `json:"required"`  // the net debit
	Available int64  `json:"available"` // the BOJ balance
	Gap       int64  `json:"gap"`       // Required - Available
}

// SettleResult reports a settle or resume.
type SettleResult struct {
	Cycle      Cycle
	Applied    bool        // the cycle changed state in this call
	Held       bool        // the cycle is (now or still) HOLD_ACTIVE
	Shortfalls []Shortfall // while held: who lacks how much
	Postings   []Posting   // the postings made by this call
	Released   int         // transactions handed back to ZC by this call
}

// Posting is one central-bank account movement of a settlement.
type Posting struct {
	BankID       string `json:"bank_id"`
	Amount       int64  `json:"amount"`
	BalanceAfter int64  `json:"balance_after"`
}

type holdReason struct {
	Reason     string      `json:"reason"`
	Shortfalls []Shortfall `json:"shortfalls"`
}

// releaseSQL is handoff #2: the cycle hands its transactions back to ZC.
const releaseSQL = `UPDATE Transactions SET owner = 'ZC' WHERE dns_cycle_id = ? AND owner = ?`

// SettleInTx settles a KICKED cycle inside the caller's write transaction.
// When every net debtor's BOJ balance covers its net debit it posts each
// bank's net position on its BOJ account (exactly once per bank: the
// DnsSettlementPostings key), marks the positions settled, moves the cycle
// to SETTLED, hands the transactions back to 'ZC' and appends DnsSettled.
// Otherwise it moves the cycle to HOLD_ACTIVE with igs_mode RINGFENCED, the
// shortfalls in hold_reason, the debtors in hold_causing_participants and
// public_message_id DNS_HOLD_{business_date}, and appends DnsHoldActivated;
// nothing is posted and the transactions stay with the cycle until Resume.
//
// A cycle that is SETTLED or already HOLD_ACTIVE is left alone (re-runs
// change nothing; a held cycle resumes only through Resume). An OPEN cycle
// is INVALID_STATE: kick it first.
func (s *Service) SettleInTx(ctx context.Context, tx *store.Tx, cycleID string) (SettleResult, error) {
	if err := s.gate.CheckWritable(ctx, tx); err != nil {
		return SettleResult{}, err
	}
	c, err := GetInTx(ctx, tx, cycleID)
	if err != nil {
		return SettleResult{}, err
	}
	switch c.State {
	case StateSettled:
		return SettleResult{Cycle: c}, nil
	case StateHoldActive:
		sf, err := s.shortfalls(ctx, tx, c)
		return SettleResult{Cycle: c, Held: true, Shortfalls: sf}, err
	case StateOpen:
		return SettleResult{}, domainerr.New("INVALID_STATE", "DNS cycle is still OPEN: kick it before settling", map[string]any{"cycle_id": cycleID, "state": c.State})
	}
	sf, err := s.shortfalls(ctx, tx, c)
	if err != nil {
		return SettleResult{}, err
	}
	if len(sf) > 0 {
		return s.hold(ctx, tx, c, sf)
	}
	return s.settleFunded(ctx, tx, c, StateKicked)
}

// Settle is SettleInTx in its own write transaction.
func (s *Service) Settle(ctx context.Context, cycleID string) (r SettleResult, err error) {
	err = s.db.Write(ctx, func(tx *store.Tx) error {
		r, err = s.SettleInTx(ctx, tx, cycleID)
		return err
	})
	return r, err
}

// SettleDayInTx settles every KICKED cycle of the date and currency in
// intraday order (job dns-settle). Held cycles stay held.
func (s *Service) SettleDayInTx(ctx context.Context, tx *store.Tx, businessDate, currency string) ([]SettleResult, error) {
	all, err := cyclesOf(ctx, tx, businessDate, currency)
	if err != nil {
		return nil, err
	}
	var out []SettleResult
	for _, c := range all {
		if c.State != StateKicked {
			continue
		}
		r, err := s.SettleInTx(ctx, tx, c.CycleID)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// shortfalls lists the net debtors of c whose BOJ balance is short.
func (s *Service) shortfalls(ctx context.Context, tx *store.Tx, c Cycle) ([]Shortfall, error) {
	pos, err := positionsOf(ctx, tx, c.CycleID)
	if err != nil {
		return nil, err
	}
	var out []Shortfall
	for _, p := range pos {
		if p.Net >= 0 {
			continue
		}
		bal, err := balanceOf(ctx, tx, c.Venue(), p.BankID, c.Currency)
		if err != nil {
			return nil, err
		}
		if bal < -p.Net {
			out = append(out, Shortfall{BankID: p.BankID, Required: -p.Net, Available: bal, Gap: -p.Net - bal})
		}
	}
	return out, nil
}

func (s *Service) hold(ctx context.Context, tx *store.Tx, c Cycle, sf []Shortfall) (SettleResult, error) {
	now := clock.Stamp(s.clk.Now())
	reason, _ := json.Marshal(holdReason{Reason: HoldReasonInsufficientFunds, Shortfalls: sf})
	causing := make([]string, len(sf))
	for i, f := range sf {
		causing[i] = f.BankID
	}
	causingJSON, _ := json.Marshal(causing)
	msgID := PublicMessageID(c.BusinessDate)
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE DnsCycles SET state = 'HOLD_ACTIVE', igs_mode = ?, hold_reason = ?,
		hold_causing_participants = ?, public_message_id = ?, updated_at = ? WHERE cycle_id = ? AND state = 'KICKED'`,
		IgsRingfenced, string(reason), string(causingJSON), msgID, now, c.CycleID))
	if err != nil {
		return SettleResult{}, fmt.Errorf("dns: hold %s: %w", c.CycleID, err)
	}
	if !ok {
		return SettleResult{}, domainerr.New("CONCURRENCY_CONFLICT", "DNS cycle changed during settle", map[string]any{"cycle_id": c.CycleID})
	}
	if _, err := s.appendCycleEvent(ctx, tx, c.CycleID, finality.DnsHoldActivated, StateKicked, StateHoldActive, map[string]any{
		"cycle_id": c.CycleID, "reason": HoldReasonInsufficientFunds, "igs_mode": IgsRingfenced,
		"public_message_id": msgID, "hold_causing_participants": causing, "shortfalls": sf,
	}); err != nil {
		return SettleResult{}, err
	}
	s.logger.WarnContext(ctx, "dns.hold_activated", "cycle_id", c.CycleID, "igs_mode", IgsRingfenced,
		"public_message_id", msgID, "causing", causing)
	c, err = GetInTx(ctx, tx, c.CycleID)
	return SettleResult{Cycle: c, Applied: true, Held: true, Shortfalls: sf}, err
}

// settleFunded posts the net positions, settles the cycle from state from
// (KICKED, or HOLD_ACTIVE on resume) and hands the transactions back.
func (s *Service) settleFunded(ctx context.Context, tx *store.Tx, c Cycle, from string) (SettleResult, error) {
	now := clock.Stamp(s.clk.Now())
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE DnsCycles SET state = 'SETTLED', settled_at = ?, igs_mode = 'NORMAL',
		hold_reason = NULL, hold_causing_participants = NULL, public_message_id = NULL, updated_at = ?
		WHERE cycle_id = ? AND state = ?`, now, now, c.CycleID, from))
	if err != nil {
		return SettleResult{}, fmt.Errorf("dns: settle %s: %w", c.CycleID, err)
	}
	if !ok {
		return SettleResult{}, domainerr.New("CONCURRENCY_CONFLICT", "DNS cycle changed during settle", map[string]any{"cycle_id": c.CycleID})
	}
	pos, err := positionsOf(ctx, tx, c.CycleID)
	if err != nil {
		return SettleResult{}, err
	}
	var postings []Posting
	for _, p := range pos {
		if p.Net == 0 {
			continue
		}
		after, posted, err := postNet(ctx, tx, c, p.BankID, p.Net, now)
		if err != nil {
			return SettleResult{}, err
		}
		if posted {
			postings = append(postings, Posting{BankID: p.BankID, Amount: p.Net, BalanceAfter: after})
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE DnsNetPositions SET is_settled = 1 WHERE cycle_id = ? AND is_settled = 0`, c.CycleID); err != nil {
		return SettleResult{}, fmt.Errorf("dns: mark positions of %s settled: %w", c.CycleID, err)
	}
	res, err := tx.ExecContext(ctx, releaseSQL, c.CycleID, lane.CycleOwner(c.CycleID))
	if err != nil {
		return SettleResult{}, fmt.Errorf("dns: hand back %s: %w", c.CycleID, err)
	}
	released, err := res.RowsAffected()
	if err != nil {
		return SettleResult{}, fmt.Errorf("dns: hand back %s: %w", c.CycleID, err)
	}
	gtid, err := s.recordSettlementGtidInTx(ctx, tx, c, pos, postings)
	if err != nil {
		return SettleResult{}, err
	}
	if from == StateHoldActive {
		if _, err := s.appendCycleEvent(ctx, tx, c.CycleID, finality.DnsResumed, StateHoldActive, StateSettled, map[string]any{
			"cycle_id": c.CycleID, "public_message_id": c.PublicMessageID, "hold_causing_participants": c.HoldCausing,
		}); err != nil {
			return SettleResult{}, err
		}
	}
	if _, err := s.appendCycleEvent(ctx, tx, c.CycleID, finality.DnsSettled, from, StateSettled, map[string]any{
		"cycle_id": c.CycleID, "venue": c.Venue(), "proof_venue": proofVenueOf(c.Venue()), "settlement_chain": c.SettlementChain,
		"currency": c.Currency, "postings": postings,
		"tx_count": released, "owner_from": lane.CycleOwner(c.CycleID), "owner_to": lane.OwnerZC, "settlement_gtid": gtid,
	}); err != nil {
		return SettleResult{}, err
	}
	s.logger.InfoContext(ctx, "dns.settled", "cycle_id", c.CycleID, "from", from, "postings", len(postings), "tx_count", released)
	c, err = GetInTx(ctx, tx, c.CycleID)
	return SettleResult{Cycle: c, Applied: true, Postings: postings, Released: int(released)}, err
}

// cancelReleaseSQL is handoff #2 on the cancel path: the cycle hands its
// transactions back to ZC and lets go of them (dns_cycle_id cleared), so
// the next cycle's kick nets them again.
const cancelReleaseSQL = `UPDATE Transactions SET owner = 'ZC', dns_cycle_id = NULL WHERE dns_cycle_id = ? AND owner = ?`

// CancelResult reports a cycle cancel.
type CancelResult struct {
	Cycle    Cycle
	Applied  bool     // the cycle was cancelled by this call
	Released []string // the transactions handed back to ZC, by txid
	Next     Cycle    // the OPEN cycle of the date that will take them
}

// CancelInTx cancels a HOLD_ACTIVE cycle inside the caller's write
// transaction (spec 000 §5.2 handoff #2, "サイクル取消"): nothing is posted
// on BOJ (its DnsNetPositions stay unsettled as the record of what was
// held), the cycle becomes CANCELLED with igs_mode NORMAL and its HOLD
// announcement cleared, every transaction it held goes back to 'ZC' with
// dns_cycle_id cleared in one statement, and DnsCycleCancelled (owner_from,
// owner_to, the txids, reason, actor) is appended on the cycle's chain.
// The date's OPEN cycle (created when there is none) takes them at its
// kick. A CANCELLED cycle is returned unchanged; any other state is
// INVALID_STATE (only a held cycle can be cancelled: a KICKED one settles
// or holds first). reason and actor are required.
func (s *Service) CancelInTx(ctx context.Context, tx *store.Tx, cycleID, reason, actor string) (CancelResult, error) {
	if reason == "" || actor == "" {
		return CancelResult{}, domainerr.New("MISSING_FIELD", "cancelling a DNS cycle needs a reason and an actor",
			map[string]any{"field": map[bool]string{true: "reason", false: "actor"}[reason == ""]})
	}
	if err := s.gate.CheckWritable(ctx, tx); err != nil {
		return CancelResult{}, err
	}
	c, err := GetInTx(ctx, tx, cycleID)
	if err != nil {
		return CancelResult{}, err
	}
	switch c.State {
	case StateCancelled:
		return CancelResult{Cycle: c}, nil
	case StateHoldActive:
	default:
		return CancelResult{}, domainerr.New("INVALID_STATE", "only a held DNS cycle can be cancelled", map[string]any{"cycle_id": cycleID, "state": c.State})
	}
	now := clock.Stamp(s.clk.Now())
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE DnsCycles SET state = 'CANCELLED', igs_mode = 'NORMAL',
		public_message_id = NULL, updated_at = ? WHERE cycle_id = ? AND state = 'HOLD_ACTIVE'`, now, cycleID))
	if err != nil {
		return CancelResult{}, fmt.Errorf("dns: cancel %s: %w", cycleID, err)
	}
	if !ok {
		return CancelResult{}, domainerr.New("CONCURRENCY_CONFLICT", "DNS cycle changed during cancel", map[string]any{"cycle_id": cycleID})
	}
	owner := lane.CycleOwner(cycleID)
	rows, err := tx.QueryContext(ctx, `SELECT txid FROM Transactions WHERE dns_cycle_id = ? AND owner = ? ORDER BY txid`, cycleID, owner)
	if err != nil {
		return CancelResult{}, fmt.Errorf("dns: transactions of %s: %w", cycleID, err)
	}
	var txids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return CancelResult{}, fmt.Errorf("dns: transactions of %s: %w", cycleID, err)
		}
		txids = append(txids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return CancelResult{}, fmt.Errorf("dns: transactions of %s: %w", cycleID, err)
	}
	res, err := tx.ExecContext(ctx, cancelReleaseSQL, cycleID, owner)
	if err != nil {
		return CancelResult{}, fmt.Errorf("dns: hand back %s: %w", cycleID, err)
	}
	if n, err := res.RowsAffected(); err != nil || int(n) != len(txids) {
		return CancelResult{}, fmt.Errorf("dns: hand back %s: %d of %d rows (%v)", cycleID, n, len(txids), err)
	}
	if txids == nil {
		txids = []string{}
	}
	if _, err := s.appendCycleEvent(ctx, tx, cycleID, finality.DnsCycleCancelled, StateHoldActive, StateCancelled, map[string]any{
		"cycle_id": cycleID, "reason": reason, "actor": actor, "public_message_id": c.PublicMessageID,
		"hold_causing_participants": c.HoldCausing, "tx_count": len(txids), "txids": txids,
		"owner_from": owner, "owner_to": lane.OwnerZC,
	}); err != nil {
		return CancelResult{}, err
	}
	next, _, err := s.OpenCycleInTx(ctx, tx, c.BusinessDate, c.Currency)
	if err != nil {
		return CancelResult{}, err
	}
	s.logger.WarnContext(ctx, "dns.cycle_cancelled", "cycle_id", cycleID, "tx_count", len(txids), "actor", actor, "next_cycle_id", next.CycleID)
	c, err = GetInTx(ctx, tx, cycleID)
	return CancelResult{Cycle: c, Applied: true, Released: txids, Next: next}, err
}

// Cancel is CancelInTx in its own write transaction.
func (s *Service) Cancel(ctx context.Context, cycleID, reason, actor string) (r CancelResult, err error) {
	err = s.db.Write(ctx, func(tx *store.Tx) error {
		r, err = s.CancelInTx(ctx, tx, cycleID, reason, actor)
		return err
	})
	return r, err
}
