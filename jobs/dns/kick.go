package dns

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// This file is lane.DNSKickSite: spec 000 §5.2 handoff #1, the one place
// that moves Transactions.owner 'ZC' -> 'CYCLE:<id>' for many rows in one
// statement.

// Position is one bank's line of a cycle (DnsNetPositions).
type Position struct {
	BankID       string `json:"bank_id"`
	GrossSend    int64  `json:"gross_send"`
	GrossReceive int64  `json:"gross_receive"`
	Net          int64  `json:"net_position"` // >0 net receiver, <0 net payer
	Settled      bool   `json:"is_settled"`
}

// KickResult reports a kick.
type KickResult struct {
	Cycle     Cycle
	Applied   bool // false: the cycle was already kicked (nothing changed)
	TxCount   int  // transactions snapshotted by this kick
	Positions []Position
}

// snapshotSQL is handoff #1: every settled transaction of the cycle's
// currency that ZC holds and no cycle has taken yet is stamped with the
// cycle and handed to it in the same statement. HIGH_VALUE settles gross
// at the RTGS venue and is never netted. A transfer whose post-settlement
// notifications (credit-notify, debit-settled) the orchestrator has not
// finished is left for the next cycle: the orchestrator only works rows
// that ZC owns. version is deliberately not bumped (spec 000 §5.3: the
// lanes re-assert owner in their CAS instead).
const snapshotSQL = `UPDATE Transactions SET owner = ?, dns_cycle_id = ?
	WHERE owner = 'ZC' AND state = 'SETTLED' AND dns_cycle_id IS NULL
	  AND lane <> 'HIGH_VALUE' AND amount_currency = ?
	  AND NOT EXISTS (SELECT 1 FROM OrchestratorTransfers o WHERE o.txid = Transactions.txid
	                  AND (o.credit_notified_at IS NULL OR o.debit_settled_at IS NULL))`

// KickInTx snapshots an OPEN cycle inside the caller's write transaction:
// the CAS OPEN -> KICKED, the bulk ownership handoff, the per-bank net
// positions (DnsNetPositions and DnsCycles.net_positions, summing to
// zero) and the DnsKicked entry on the cycle's chain. A cycle that is no
// longer OPEN is left alone (Applied false): a re-run or a racing second
// kick changes nothing.
func (s *Service) KickInTx(ctx context.Context, tx *store.Tx, cycleID string) (KickResult, error) {
	if err := s.gate.CheckWritable(ctx, tx); err != nil {
		return KickResult{}, err
	}
	c, err := GetInTx(ctx, tx, cycleID)
	if err != nil {
		return KickResult{}, err
	}
	now := clock.Stamp(s.clk.Now())
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE DnsCycles SET state = 'KICKED', kicked_at = ?, updated_at = ?
		WHERE cycle_id = ? AND state = 'OPEN'`, now, now, cycleID))
	if err != nil {
		return KickResult{}, fmt.Errorf("dns: kick %s: %w", cycleID, err)
	}
	if !ok {
		pos, err := positionsOf(ctx, tx, cycleID)
		return KickResult{Cycle: c, Positions: pos}, err
	}
	res, err := tx.ExecContext(ctx, snapshotSQL, lane.CycleOwner(cycleID), cycleID, c.Currency)
	if err != nil {
		return KickResult{}, fmt.Errorf("dns: snapshot %s: %w", cycleID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return KickResult{}, fmt.Errorf("dns: snapshot %s: %w", cycleID, err)
	}
	pos, err := computePositions(ctx, tx, cycleID)
	if err != nil {
		return KickResult{}, err
	}
	nets := map[string]int64{}
	for _, p := range pos {
		if _, err := tx.ExecContext(ctx, `INSERT INTO DnsNetPositions (id, cycle_id, bank_id, gross_send, gross_receive,
			net_position, is_settled) VALUES (?, ?, ?, ?, ?, ?, 0)`, positionID(cycleID, p.BankID), cycleID, p.BankID,
			p.GrossSend, p.GrossReceive, p.Net); err != nil {
			return KickResult{}, fmt.Errorf("dns: net position %s/%s: %w", cycleID, p.BankID, err)
		}
		nets[p.BankID] = p.Net
	}
	netJSON, _ := json.Marshal(nets)
	if _, err := tx.ExecContext(ctx, `UPDATE DnsCycles SET net_positions = ? WHERE cycle_id = ?`, string(netJSON), cycleID); err != nil {
		return KickResult{}, fmt.Errorf("dns: store net positions of %s: %w", cycleID, err)
	}
	if _, err := s.appendCycleEvent(ctx, tx, cycleID, finality.DnsKicked, StateOpen, StateKicked, map[string]any{
		"cycle_id": cycleID, "business_date": c.BusinessDate, "currency": c.Currency, "tx_count": n,
		"owner_from": lane.OwnerZC, "owner_to": lane.CycleOwner(cycleID), "net_positions": nets,
	}); err != nil {
		return KickResult{}, err
	}
	c, err = GetInTx(ctx, tx, cycleID)
	if err != nil {
		return KickResult{}, err
	}
	s.logger.InfoContext(ctx, "dns.kicked", "cycle_id", cycleID, "tx_count", n, "banks", len(pos))
	return KickResult{Cycle: c, Applied: true, TxCount: int(n), Positions: pos}, nil
}

// Kick is KickInTx in its own write transaction.
func (s *Service) Kick(ctx context.Context, cycleID string) (r KickResult, err error) {
	err = s.db.Write(ctx, func(tx *store.Tx) error {
		r, err = s.KickInTx(ctx, tx, cycleID)
		return err
	})
	return r, err
}

// KickDayInTx is the daily kick (job dns-kick, POST /internal/dns/kick):
// it kicks the OPEN cycle of the date, creating cycle 01 when the date has
// none yet. When every cycle of the date is already kicked it does nothing
// (the day's kick happened; later settlements belong to the next cycle).
func (s *Service) KickDayInTx(ctx context.Context, tx *store.Tx, businessDate, currency string) (KickResult, error) {
	all, err := cyclesOf(ctx, tx, businessDate, currency)
	if err != nil {
		return KickResult{}, err
	}
	target := ""
	for _, c := range all {
		if c.State == StateOpen {
			target = c.CycleID
			break
		}
	}
	if target == "" && len(all) > 0 {
		last := all[len(all)-1]
		pos, err := positionsOf(ctx, tx, last.CycleID)
		return KickResult{Cycle: last, Positions: pos}, err
	}
	if target == "" {
		c, _, err := s.OpenCycleInTx(ctx, tx, businessDate, currency)
		if err != nil {
			return KickResult{}, err
		}
		target = c.CycleID
	}
	return s.KickInTx(ctx, tx, target)
}

func positionID(cycleID, bankID string) string { return cycleID + "/" + bankID }

// computePositions nets the cycle's snapshotted transactions per bank.
func computePositions(ctx context.Context, tx *store.Tx, cycleID string) ([]Position, error) {
	by := map[string]*Position{}
	get := func(b string) *Position {
		p := by[b]
		if p == nil {
			p = &Position{BankID: b}
			by[b] = p
		}
		return p
	}
	rows, err := tx.QueryContext(ctx, `SELECT payer_bank_id, payee_bank_id, SUM(amount_value) FROM Transactions
		WHERE dns_cycle_id = ? GROUP BY payer_bank_id, payee_bank_id`, cycleID)
	if err != nil {
		return nil, fmt.Errorf("dns: net %s: %w", cycleID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var payer, payee string
		var sum int64
		if err := rows.Scan(&payer, &payee, &sum); err != nil {
			return nil, fmt.Errorf("dns: net %s: %w", cycleID, err)
		}
		get(payer).GrossSend += sum
		get(payee).GrossReceive += sum
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dns: net %s: %w", cycleID, err)
	}
	out := make([]Position, 0, len(by))
	var total int64
	for _, p := range by {
		p.Net = p.GrossReceive - p.GrossSend
		total += p.Net
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BankID < out[j].BankID })
	if total != 0 {
		return nil, domainerr.New("LEDGER_IMBALANCE", "DNS net positions do not sum to zero", map[string]any{"cycle_id": cycleID, "sum": total})
	}
	return out, nil
}

func positionsOf(ctx context.Context, tx *store.Tx, cycleID string) ([]Position, error) {
	rows, err := tx.QueryContext(ctx, `SELECT bank_id, gross_send, gross_receive, net_position, is_settled
		FROM DnsNetPositions WHERE cycle_id = ? ORDER BY bank_id`, cycleID)
	if err != nil {
		return nil, fmt.Errorf("dns: positions of %s: %w", cycleID, err)
	}
	defer rows.Close()
	var out []Position
	for rows.Next() {
		var p Position
		var settled int
		if err := rows.Scan(&p.BankID, &p.GrossSend, &p.GrossReceive, &p.Net, &settled); err != nil {
			return nil, fmt.Errorf("dns: positions of %s: %w", cycleID, err)
		}
		p.Settled = settled == 1
		out = append(out, p)
	}
	return out, rows.Err()
}

// Positions reads a cycle's net positions, by bank.
func (s *Service) Positions(ctx context.Context, cycleID string) (out []Position, err error) {
	err = s.db.Read(ctx, func(tx *store.Tx) error {
		out, err = positionsOf(ctx, tx, cycleID)
		return err
	})
	return out, err
}
