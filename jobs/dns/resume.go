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
