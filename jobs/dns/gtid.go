package dns

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// SettlementGTID is the gtid of a cycle's net-settlement GTID (spec 000
// §4: GT_SETTLED is an entry state for the DNS net-settlement GTID that
// settleDns creates directly).
func SettlementGTID(cycleID string) string { return "GT-" + cycleID }

// recordSettlementGtidInTx records a settled cycle's net settlement as a
// GTID created at GT_SETTLED through lane.InsertGtidInTx, in the
// settlement's own transaction: one PAYER leg per net debtor and one
// PAYEE leg per net creditor (amount |net|, the cycle's currency, each
// LEG_SETTLED), GtidSettled on the GTID's chain. A cycle in which no bank
// moves (every net position zero) has nothing to settle and records no
// GTID; it returns "". Settling again finds the GTID already there and
// writes nothing.
func (s *Service) recordSettlementGtidInTx(ctx context.Context, tx *store.Tx, c Cycle, pos []Position, postings []Posting) (string, error) {
	gtid := SettlementGTID(c.CycleID)
	var legs []lane.NewLeg
	for _, p := range pos {
		if p.Net == 0 {
			continue
		}
		g := lane.NewLeg{LegID: gtid + "." + p.BankID, Role: lane.LegPayee, BankID: p.BankID, AccountHash: settlementAccount(c, p.BankID),
			AmountValue: p.Net, Currency: c.Currency}
		if p.Net < 0 {
			g.Role, g.AmountValue = lane.LegPayer, -p.Net
		}
		legs = append(legs, g)
	}
	if len(legs) == 0 {
		return "", nil
	}
	res, err := s.lanes.InsertGtidInTx(ctx, tx, lane.NewGtid{GTID: gtid, InitiatorBankID: lane.OwnerZC, State: lane.GtSettled, Legs: legs,
		Payload: map[string]any{"cycle_id": c.CycleID, "business_date": c.BusinessDate, "venue": c.Venue(), "proof_venue": proofVenueOf(c.Venue()),
			"settlement_chain": c.SettlementChain, "currency": c.Currency,
			"postings": postings}})
	if err != nil {
		return "", err
	}
	if res.Inserted {
		s.logger.InfoContext(ctx, "dns.settlement_gtid", "cycle_id", c.CycleID, "gtid", gtid, "legs", len(legs))
	}
	return gtid, nil
}
