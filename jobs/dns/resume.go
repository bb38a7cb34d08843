package dns

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// ResumeInTx retries the settlement of a HOLD_ACTIVE cycle inside the
// caller's write transaction (POST /internal/dns/resume, spec 004: called
// after bridge liquidity was provided). It re-checks every net debtor's
// BOJ balance: when the gaps are covered the cycle settles (DnsResumed then
// DnsSettled, igs_mode back to NORMAL, public_message_id cleared); when a
// gap remains nothing changes and Held/Shortfalls say what is missing.
// A SETTLED cycle is returned unchanged (a re-run changes nothing); any
// other state is INVALID_STATE.
func (s *Service) ResumeInTx(ctx context.Context, tx *store.Tx, cycleID string) (SettleResult, error) {
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
	default:
		return SettleResult{}, domainerr.New("INVALID_STATE", "only a held DNS cycle can be resumed", map[string]any{"cycle_id": cycleID, "state": c.State})
	}
	sf, err := s.shortfalls(ctx, tx, c)
	if err != nil {
		return SettleResult{}, err
	}
	if len(sf) > 0 {
		s.logger.WarnContext(ctx, "dns.resume_still_short", "cycle_id", cycleID, "shortfalls", len(sf))
		return SettleResult{Cycle: c, Held: true, Shortfalls: sf}, nil
	}
	return s.settleFunded(ctx, tx, c, StateHoldActive)
}

// Resume is ResumeInTx in its own write transaction.
func (s *Service) Resume(ctx context.Context, cycleID string) (r SettleResult, err error) {
	err = s.db.Write(ctx, func(tx *store.Tx) error {
		r, err = s.ResumeInTx(ctx, tx, cycleID)
		return err
	})
	return r, err
}

// Funding is bridge liquidity credited to a bank's central-bank account.
type Funding struct {
	BankID       string `json:"bank_id"`
	Amount       int64  `json:"amount"`
	BalanceAfter int64  `json:"balance_after"`
}

// FundResult reports a fund-and-resume.
type FundResult struct {
	Settle   SettleResult
	Fundings []Funding
}

// FundAndResumeInTx funds a HOLD_ACTIVE cycle and resumes it inside the
// caller's write transaction: with bankID and amount it credits that
// bank's central-bank account; with neither it credits each short net
// debtor exactly its gap. Then it resumes (ResumeInTx): the cycle settles
// when every gap is covered, or stays held with the remaining shortfalls
// (the funding is kept: it is money on the account). A cycle that is not
// held is INVALID_STATE and nothing is funded.
func (s *Service) FundAndResumeInTx(ctx context.Context, tx *store.Tx, cycleID, bankID string, amount int64) (FundResult, error) {
	if (bankID == "") != (amount == 0) {
		return FundResult{}, domainerr.New("MISSING_FIELD", "give bank_id and amount together, or neither (cover every gap)",
			map[string]any{"field": map[bool]string{true: "bank_id", false: "amount"}[bankID == ""]})
	}
	if err := s.gate.CheckWritable(ctx, tx); err != nil {
		return FundResult{}, err
	}
	c, err := GetInTx(ctx, tx, cycleID)
	if err != nil {
		return FundResult{}, err
	}
	if c.State != StateHoldActive {
		return FundResult{}, domainerr.New("INVALID_STATE", "only a held DNS cycle can be funded", map[string]any{"cycle_id": cycleID, "state": c.State})
	}
	want := []Funding{{BankID: bankID, Amount: amount}}
	if bankID == "" {
		sf, err := s.shortfalls(ctx, tx, c)
		if err != nil {
			return FundResult{}, err
		}
		want = want[:0]
		for _, f := range sf {
			want = append(want, Funding{BankID: f.BankID, Amount: f.Gap})
		}
	}
	var out FundResult
	for _, f := range want {
		bal, err := s.FundInTx(ctx, tx, f.BankID, c.Currency, f.Amount)
		if err != nil {
			return FundResult{}, err
		}
		f.BalanceAfter = bal
		out.Fundings = append(out.Fundings, f)
	}
	out.Settle, err = s.ResumeInTx(ctx, tx, cycleID)
	return out, err
}

// FundAndResume is FundAndResumeInTx in its own write transaction.
func (s *Service) FundAndResume(ctx context.Context, cycleID, bankID string, amount int64) (r FundResult, err error) {
	err = s.db.Write(ctx, func(tx *store.Tx) error {
		r, err = s.FundAndResumeInTx(ctx, tx, cycleID, bankID, amount)
		return err
	})
	return r, err
}
