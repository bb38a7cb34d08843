package dns

import (
	"context"
	"encoding/json"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

// CutoffResult reports an intraday cutoff.
type CutoffResult struct {
	Closed Cycle // the cycle that was cut off (now SETTLED or HOLD_ACTIVE)
	Kick   KickResult
	Settle SettleResult
	Next   Cycle // the newly opened cycle
}

// IntradayCutoffInTx closes the OPEN cycle of (businessDate, currency) and
// opens the next one, inside the caller's write transaction (job
// dns-intraday-cutoff, POST /internal/dns/intraday-cutoff; rolling
// settlement): the open cycle (created as the next NN when there is none)
// is kicked and settled — or held when a debtor lacks funds; the next
// cycle opens either way — and DnsIntradayCutoff is appended on the closed
// cycle's chain. Each call is one cutoff: a second call closes the cycle
// the first one opened.
func (s *Service) IntradayCutoffInTx(ctx context.Context, tx *store.Tx, businessDate, currency string) (CutoffResult, error) {
	open, _, err := s.OpenCycleInTx(ctx, tx, businessDate, currency)
	if err != nil {
		return CutoffResult{}, err
	}
	k, err := s.KickInTx(ctx, tx, open.CycleID)
	if err != nil {
		return CutoffResult{}, err
	}
	st, err := s.SettleInTx(ctx, tx, open.CycleID)
	if err != nil {
		return CutoffResult{}, err
	}
	next, err := s.createCycle(ctx, tx, businessDate, currency, open.IntradaySeq+1)
	if err != nil {
		return CutoffResult{}, err
	}
	if _, err := s.appendCycleEvent(ctx, tx, open.CycleID, finality.DnsIntradayCutoff, st.Cycle.State, st.Cycle.State, map[string]any{
		"cycle_id": open.CycleID, "next_cycle_id": next.CycleID, "business_date": businessDate, "currency": currency,
		"tx_count": k.TxCount, "held": st.Held,
	}); err != nil {
		return CutoffResult{}, err
	}
	s.logger.InfoContext(ctx, "dns.intraday_cutoff", "closed", open.CycleID, "next", next.CycleID, "state", st.Cycle.State)
	return CutoffResult{Closed: st.Cycle, Kick: k, Settle: st, Next: next}, nil
}

// IntradayCutoff is IntradayCutoffInTx in its own write transaction.
func (s *Service) IntradayCutoff(ctx context.Context, businessDate, currency string) (r CutoffResult, err error) {
	err = s.db.Write(ctx, func(tx *store.Tx) error {
		r, err = s.IntradayCutoffInTx(ctx, tx, businessDate, currency)
		return err
	})
	return r, err
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
