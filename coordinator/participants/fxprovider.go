package participants

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
)

// SetFxProvider sets Participants.is_fx_provider (001 §17.1, the FXP
// capability flag): only an FX provider may quote rates (coordinator/fx).
// The currencies it deals in are those it has an H limit in
// (ParticipantCurrencyLimits, hlimit.SetCurrencyLimit). An unknown bank is
// PARTICIPANT_NOT_FOUND.
func (r *Registry) SetFxProvider(ctx context.Context, bankID string, provider bool) error {
	return r.db.Write(ctx, func(tx *store.Tx) error {
		if err := (sysmode.Gate{}).CheckWritable(ctx, tx); err != nil {
			return err
		}
		ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE Participants SET is_fx_provider = ? WHERE bank_id = ?`, boolInt(provider), bankID))
		if err != nil {
			return fmt.Errorf("participants: set is_fx_provider of %s: %w", bankID, err)
		}
		if !ok {
			return notFound(bankID)
		}
		return nil
	})
}
