package node

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/hlimit"
)

// openFX applies a bank's FX configuration to its Participants row: the
// FX provider flag and its H limits in currencies other than JPY (set on
// every start, as node.json says).
func (n *Node) openFX(ctx context.Context, bc BankConfig) error {
	if bc.FxProvider {
		if err := n.Orchestrator.Participants().SetFxProvider(ctx, bc.BankID, true); err != nil {
			return err
		}
	}
	for ccy, limit := range bc.CurrencyLimits {
		if err := hlimit.SetCurrencyLimitDB(ctx, n.DB, bc.BankID, ccy, limit); err != nil {
			return err
		}
	}
	return nil
}
