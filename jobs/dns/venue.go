package dns

import (
	"strings"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// Settlement venues of a cycle (spec 003 DnsCycles.settlement_chain, 004
// SettlementProofRef.venue): the Bank of Japan settles yen only, so a yen
// cycle settles on the banks' classic BOJ current accounts ({bank}-BOJ,
// settlement_chain NULL) and a cycle in any other currency on the
// tokenised central-bank current accounts of that currency's central bank
// on the cycle's chain ({bank}-CBT-{CCY}-{CHAIN}), its finality venue
// CB_TOKEN.
const (
	// DefaultSettlementChain is the chain a non-JPY cycle fixes when the
	// service has none configured for its currency.
	DefaultSettlementChain = "ETH"
	// venueCBTPrefix prefixes the SettlementPositions venue of the
	// tokenised central-bank accounts on a chain: "CBT-ETH".
	venueCBTPrefix = "CBT-"
	// ProofVenueBOJ and ProofVenueCBToken are the SettlementProofRef venues
	// (004) of a yen and of a non-yen cycle's settlement.
	ProofVenueBOJ     = "IGS_BOJ"
	ProofVenueCBToken = "CB_TOKEN"
)

// VenueCBT is the SettlementPositions venue of the tokenised central-bank
// current accounts on chain (each row one bank and currency).
func VenueCBT(chain string) string { return venueCBTPrefix + chain }

// SettlementChainOf is the chain a cycle in currency fixes: "" (classic
// BOJ-NET) for yen, otherwise the configured chain or
// DefaultSettlementChain.
func (s *Service) SettlementChainOf(currency string) string {
	if currency == "JPY" {
		return ""
	}
	s.mu.Lock()
	c := s.chains[currency]
	s.mu.Unlock()
	if c != "" {
		return c
	}
	return DefaultSettlementChain
}

// SetSettlementChain fixes the chain the cycles of a non-JPY currency opened
// from now on settle on (a cycle keeps the chain it was opened with).
func (s *Service) SetSettlementChain(currency, chain string) error {
	if err := checkCurrency(currency); err != nil {
		return err
	}
	if currency == "JPY" {
		return domainerr.New("INVALID_REQUEST", "yen settles on the classic BOJ accounts, not on a chain", map[string]any{"currency": currency})
	}
	if chain == "" || strings.ToUpper(chain) != chain || strings.ContainsAny(chain, " -:/") {
		return domainerr.New("INVALID_REQUEST", "a settlement chain is an upper-case name like ETH", map[string]any{"settlement_chain": chain})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chains == nil {
		s.chains = map[string]string{}
	}
	s.chains[currency] = chain
	return nil
}

// venueOf is the SettlementPositions venue a cycle of currency on chain
// settles on.
func venueOf(chain string) string {
	if chain == "" {
		return VenueBOJ
	}
	return VenueCBT(chain)
}

// proofVenueOf is the finality venue recorded for a settlement on venue.
func proofVenueOf(venue string) string {
	if venue == VenueBOJ {
		return ProofVenueBOJ
	}
	return ProofVenueCBToken
}

// Venue is the SettlementPositions venue the cycle settles on.
func (c Cycle) Venue() string { return venueOf(c.SettlementChain) }

// settlementAccount names a bank's central-bank account on a settlement
// leg (GtidLegs.account_hash): "BOJ:{bank}" for the classic yen account,
// {bank}-CBT-{CCY}-{CHAIN} for a tokenised one (003).
func settlementAccount(c Cycle, bankID string) string {
	if c.SettlementChain == "" {
		return VenueBOJ + ":" + bankID
	}
	return bankID + "-CBT-" + c.Currency + "-" + c.SettlementChain
}
