package orchestrator

import (
	"context"
	"time"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/store"
)

// staleRow is a candidate of the timeout sweep.
type staleRow struct{ txid, lane string }

// stale lists rows in state, owned by ZC, whose wait began before cutoff
// (COALESCE(pending_since, updated_at): rows written before pending_since
// existed still expire). Rows owned by a venue, a DNS cycle or a chain are
// invisible to the sweep by construction (spec 000 §5.1).
func (o *Orchestrator) stale(ctx context.Context, state lane.TxState, cutoff time.Time) ([]staleRow, error) {
	var out []staleRow
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT txid, lane FROM Transactions
			WHERE state = ? AND owner = ? AND COALESCE(pending_since, updated_at) < ? ORDER BY COALESCE(pending_since, updated_at)`,
			string(state), lane.OwnerZC, clock.Stamp(cutoff))
		if err != nil {
			return wrapDB("sweep select", err)
		}
		defer rows.Close()
		for rows.Next() {
			var s staleRow
			if err := rows.Scan(&s.txid, &s.lane); err != nil {
				return wrapDB("sweep scan", err)
			}
			out = append(out, s)
		}
		return rows.Err()
	})
	return out, err
}

func (o *Orchestrator) sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	now := o.clk.Now()
	to, err := o.timeouts(ctx)
	if err != nil {
		return res, err
	}
	// T2: DECIDED_TO_SETTLE without the payer's execution in time.
	rows, err := o.stale(ctx, lane.DecidedToSettle, now.Add(-to.Exec))
	if err != nil {
		return res, err
	}
	for _, s := range rows {
		r, err := o.lanes.SuspendTx(ctx, lane.Suspend{TxID: s.txid, From: lane.DecidedToSettle, To: lane.Suspended,
			ReasonCode: ReasonSuspendExecTimeout, Payload: map[string]any{"timeout_sec": int64(to.Exec / time.Second)},
			SideUpdates: o.gtidSuspendSide(s.lane, s.txid, ReasonSuspendExecTimeout)})
		if err != nil {
			return res, err
		}
		if r.Applied {
			res.ExecTimeouts++
		}
	}
	// T2': PAYER_EXEC_CONFIRMED without the payee's execution in time.
	if rows, err = o.stale(ctx, lane.PayerExecConfirmed, now.Add(-to.PayeeProof)); err != nil {
		return res, err
	}
	for _, s := range rows {
		r, err := o.lanes.SuspendTx(ctx, lane.Suspend{TxID: s.txid, From: lane.PayerExecConfirmed, To: lane.Suspended,
			ReasonCode: ReasonSuspendPayeeProofTimeout, Payload: map[string]any{"timeout_sec": int64(to.PayeeProof / time.Second)},
			SideUpdates: o.gtidSuspendSide(s.lane, s.txid, ReasonSuspendPayeeProofTimeout)})
		if err != nil {
			return res, err
		}
		if r.Applied {
			res.PayeeProofTimeouts++
		}
	}
	// T3: SUSPENDED for longer than the limit -> FAILED_EXECUTION, with a Case.
	if rows, err = o.stale(ctx, lane.Suspended, now.Add(-to.Suspended)); err != nil {
		return res, err
	}
	for _, s := range rows {
		applied := false
		err := o.db.Write(ctx, func(tx *store.Tx) error {
			opened, err := o.cases.OpenCase(ctx, tx, cases.OpenRequest{ReasonCode: ReasonFailedExecTimeout, OpenedBy: "ZC",
				RelatedTxID: s.txid, DetectionPath: "orchestrator.timeout_sweep",
				Description: "SUSPENDED longer than the limit; moved to FAILED_EXECUTION"})
			if err != nil {
				return err
			}
			r, err := o.lanes.TransitionInTx(ctx, tx, lane.Transition{TxID: s.txid, From: lane.Suspended, To: lane.FailedExecution,
				EventType: finality.FailedExecution, SetColumns: map[string]any{"reason_code": ReasonFailedExecTimeout, "case_id": opened.CaseID},
				Payload: map[string]any{"reason_code": ReasonFailedExecTimeout, "case_id": opened.CaseID,
					"timeout_sec": int64(to.Suspended / time.Second)}})
			if err != nil {
				return err
			}
			if !r.Applied {
				return errNotApplied // roll the case back too
			}
			applied = true
			_, err = o.h.ReleaseForTx(ctx, tx, s.txid)
			return err
		})
		if err != nil && err != errNotApplied {
			return res, err
		}
		if applied {
			res.FailedTimeouts++
		}
	}
	// HTLC: outer timelocks reached (lease reclaimed from the chain first).
	if res.HtlcTimelockExpired, res.HtlcLeaseReclaimed, res.HtlcReceivedExpired, err = o.sweepHTLC(ctx, now); err != nil {
		return res, err
	}
	// Windows: requeue transfers waiting for a payee window that is open now.
	n, err := o.resumeWindows(ctx, now)
	res.WindowResumed = n
	if err != nil {
		return res, err
	}
	// GTIDs and RTP requests past their expires_at (gtid_drive.go, rtp.go).
	if res.GtidTimeouts, err = o.sweepGtid(ctx, now); err != nil {
		return res, err
	}
	if res.RtpExpired, err = o.sweepRtp(ctx, now); err != nil {
		return res, err
	}
	if res != (SweepResult{}) {
		o.log.InfoContext(ctx, "orchestrator.sweep", "suspend_exec_timeout", res.ExecTimeouts,
			"suspend_payee_proof_timeout", res.PayeeProofTimeouts, "failed_exec_timeout", res.FailedTimeouts,
			"window_resumed", res.WindowResumed, "gtid_timeout", res.GtidTimeouts, "rtp_expired", res.RtpExpired,
			"htlc_timelock_expired", res.HtlcTimelockExpired, "htlc_lease_reclaimed", res.HtlcLeaseReclaimed,
			"htlc_received_expired", res.HtlcReceivedExpired)
	}
	return res, nil
}

type sentinel string

func (s sentinel) Error() string { return string(s) }

const errNotApplied = sentinel("not applied")

// resumeWindows resumes every ZC-owned transfer parked with
// COUNTERPARTY_WINDOW_CLOSED whose payee window is open at now
// (PRECHECKED_SUSPENDED -> PRECHECKED, Resumed) and requeues its DRIVE item
// in the same commit, so a worker continues it from PRECHECKED.
func (o *Orchestrator) resumeWindows(ctx context.Context, now time.Time) (int, error) {
	type cand struct{ txid, lane, payee string }
	var cands []cand
	err := o.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT txid, lane, payee_bank_id FROM Transactions
			WHERE state = ? AND owner = ? AND reason_code = ?`, string(lane.PrecheckedSuspended), lane.OwnerZC, ReasonCounterpartyWindowClosed)
		if err != nil {
			return wrapDB("window select", err)
		}
		defer rows.Close()
		for rows.Next() {
			var c cand
			if err := rows.Scan(&c.txid, &c.lane, &c.payee); err != nil {
				return wrapDB("window scan", err)
			}
			cands = append(cands, c)
		}
		return rows.Err()
	})
	if err != nil || len(cands) == 0 {
		return 0, err
	}
	n := 0
	err = o.db.Write(ctx, func(tx *store.Tx) error {
		n = 0
		for _, c := range cands {
			p, err := participants.GetInTx(ctx, tx, c.payee)
			if err != nil {
				return err
			}
			if !p.WindowOpen(now) {
				continue
			}
			r, err := o.lanes.TransitionInTx(ctx, tx, lane.Transition{TxID: c.txid, From: lane.PrecheckedSuspended, To: lane.Prechecked,
				EventType: finality.Resumed, SetColumns: map[string]any{"reason_code": nil, "pending_request_json": nil},
				Payload: map[string]any{"resumed_from": ReasonCounterpartyWindowClosed, "by": "timeout_sweep"}})
			if err != nil {
				return err
			}
			if !r.Applied {
				continue
			}
			if err := o.enqueue(ctx, tx, KindDrive, c.txid, c.lane, StatusReady, now); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
