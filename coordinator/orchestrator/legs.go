package orchestrator

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// This file is the orchestrator's entry point for a transfer that was
// materialised already decided (a GTID leg, lane.MaterialiseLegTxInTx):
// it skips precheck, reserve and decision and is driven from
// DECIDED_TO_SETTLE like any decided transfer.

// AcceptDecidedLegInTx takes over txid, a DECIDED_TO_SETTLE transfer just
// materialised in tx, inside the same transaction: its progress row
// (issuer, the payer bank's hold bankRes, which execute-debit consumes),
// the execute-debit body it will send (recorded now, with the execution
// deadline from now) and a DRIVE work item due now. It returns
// TX_NOT_FOUND for an unknown txid and INVALID_STATE for a transfer that
// is not DECIDED_TO_SETTLE or was accepted before.
func (o *Orchestrator) AcceptDecidedLegInTx(ctx context.Context, tx *store.Tx, txid, issuer, bankRes string) error {
	r, err := readTx(ctx, tx, txid)
	if err != nil {
		return err
	}
	if r.State != lane.DecidedToSettle || r.RequestJSON != "" {
		return domainerr.New("INVALID_STATE", "only a newly materialised DECIDED_TO_SETTLE transfer can be accepted",
			map[string]any{"txid": txid, "state": string(r.State)})
	}
	now := o.clk.Now()
	stamp := clock.Stamp(now)
	if _, err := tx.ExecContext(ctx, `INSERT INTO OrchestratorTransfers (`+progressColumns+`, bank_reservation_ref)
		VALUES (?, ?, ?, ?, ?, ?)`, txid, issuer, `{"materialised":true}`, stamp, stamp, nullIfEmpty(bankRes)); err != nil {
		return wrapDB("accept leg: progress", err)
	}
	to, err := o.timeoutsTx(ctx, tx)
	if err != nil {
		return err
	}
	r.BankRes = bankRes
	if r.DecisionProofRef == "" {
		r.DecisionProofRef = decisionProofRef(txid)
	}
	if err := recordRequestInTx(ctx, tx, txid, executeDebitRequest(r, now.Add(to.Exec)), now); err != nil {
		return err
	}
	if err := o.enqueue(ctx, tx, KindDrive, txid, r.Lane, StatusReady, now); err != nil {
		return err
	}
	o.log.InfoContext(ctx, "orchestrator.leg_accepted", "txid", txid, "lane", r.Lane, "bank_reservation_ref", bankRes)
	return nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
