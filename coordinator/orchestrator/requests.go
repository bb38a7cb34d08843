package orchestrator

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/hlimit"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Every ZC->bank command is deterministic under its request_id: whatever a
// retry sends is byte for byte what the first attempt sent, so the bank
// answers a replay and never IDEMPOTENCY_KEY_CONFLICT.
//
// Two kinds of commands:
//
//   - recorded: the body holds a value derived when the send is decided
//     (execute-debit's execution_deadline, debit-settled's settled_at). The
//     body is recorded in OrchestratorRequests in the commit that decides
//     the send (the decision commit; the settlement commit), and every
//     send, first or retry, sends the recorded body. A row without a
//     recorded body (a transfer decided by an older build) records the
//     body built the old way in its own commit before the first send.
//   - pure: every field comes from the accepted transfer or from an
//     earlier answer of the bank (reserve-funds' reservation_ref, itself a
//     replay), fixed before the command is first sent: reserve-funds,
//     authority-check, name-check, release-reserve, execute-credit,
//     credit-notify. They are built the same way each time.
//
// leg-ready-check (GTID legs) and rtp-notify (one request_id per
// attempt) are pure too. The orchestrator does not send account-verify,
// initialize-bank or cleanup-bank; their callers pass bodies without
// derived values (test/e2e TestRetryIsReplayForEveryCommand).

// recorded reports whether cmd's body is recorded at the decision to send.
func recorded(cmd bankapi.Command) bool {
	return cmd == bankapi.ExecuteDebit || cmd == bankapi.DebitSettled || cmd == bankapi.Compensate
}

// recordRequestInTx records req's body under its request_id inside tx; a
// body already recorded is kept (the first decision wins).
func recordRequestInTx(ctx context.Context, tx *store.Tx, txid string, req bankapi.Request, now time.Time) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("orchestrator: encode %s body: %w", req.Command(), err)
	}
	_, err = store.Insert(ctx, tx, "OrchestratorRequests", []string{"request_id", "txid", "command", "body", "created_at"},
		req.RequestID(), txid, string(req.Command()), string(body), clock.Stamp(now))
	return wrapDB("record "+string(req.Command()), err)
}

// recordedRequest returns the body recorded under requestID, decoded as
// cmd's request type, or nil when none is recorded.
func (o *Orchestrator) recordedRequest(ctx context.Context, cmd bankapi.Command, requestID string) (bankapi.Request, error) {
	var body, stored string
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT command, body FROM OrchestratorRequests WHERE request_id = ?`, requestID).Scan(&stored, &body)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapDB("read recorded "+string(cmd), err)
	}
	req, ok := bankapi.NewRequest(cmd)
	if !ok || stored != string(cmd) {
		return nil, fmt.Errorf("orchestrator: request %s is recorded as %s, not %s", requestID, stored, cmd)
	}
	if err := json.Unmarshal([]byte(body), req); err != nil {
		return nil, fmt.Errorf("orchestrator: decode recorded %s %s: %w", cmd, requestID, err)
	}
	return req, nil
}

// send calls the bank. A recorded command sends the body recorded under
// req's request_id; when none is recorded yet (a transfer decided by an
// older build), req is recorded in its own commit first. A pure command is
// sent as built.
func (o *Orchestrator) send(ctx context.Context, bankID, txid string, req bankapi.Request, resp any) error {
	if recorded(req.Command()) {
		got, err := o.recordedRequest(ctx, req.Command(), req.RequestID())
		if err != nil {
			return err
		}
		if got == nil {
			if err := o.db.Write(ctx, func(tx *store.Tx) error {
				return recordRequestInTx(ctx, tx, txid, req, o.clk.Now())
			}); err != nil {
				return err
			}
			// Another worker may have recorded first: send what is recorded.
			if got, err = o.recordedRequest(ctx, req.Command(), req.RequestID()); err != nil {
				return err
			}
		}
		req = got
	}
	return o.banks.Call(ctx, bankID, req, resp)
}

// executeDebitRequest is the execute-debit body of r with the given
// execution deadline.
func executeDebitRequest(r txRow, deadline time.Time) *bankapi.ExecuteDebitRequest {
	req := &bankapi.ExecuteDebitRequest{RequestIDValue: requestID(r.TxID, bankapi.ExecuteDebit), TxID: r.TxID,
		Amount: r.amount(), DecisionProofRef: r.DecisionProofRef, Lane: r.Lane, ExecutionDeadline: clock.Stamp(deadline)}
	if r.Lane == LaneHighValue || r.BankRes == "" {
		req.PayerAccountHash = r.PayerAcct
	} else {
		req.HReservation = &bankapi.HReservation{ReservationID: r.BankRes, Mode: hlimit.ModeReserved}
	}
	return req
}

// debitSettledRequest is the debit-settled body of r settled at settledAt.
func debitSettledRequest(r txRow, settledAt string) *bankapi.DebitSettledRequest {
	return &bankapi.DebitSettledRequest{RequestIDValue: requestID(r.TxID, bankapi.DebitSettled),
		TxID: r.TxID, Amount: r.amount(), PayeeBankID: r.PayeeBank, SettledAt: settledAt}
}

// decideInTx applies the decision (from -> DECIDED_TO_SETTLE) inside tx
// and records the execute-debit body it decides to send, its execution
// deadline fixed now: the decision instant plus the exec timeout in force. bankRes is
// the payer bank's reservation_ref ("" without a reservation).
func (o *Orchestrator) decideInTx(ctx context.Context, tx *store.Tx, r txRow, from lane.TxState, bankRes string) error {
	if err := o.applyInTx(ctx, tx, o.decision(r.TxID, from)); err != nil {
		return err
	}
	to, err := o.timeoutsTx(ctx, tx)
	if err != nil {
		return err
	}
	now := o.clk.Now()
	r.DecisionProofRef, r.BankRes = decisionProofRef(r.TxID), bankRes
	return recordRequestInTx(ctx, tx, r.TxID, executeDebitRequest(r, now.Add(to.Exec)), now)
}
