package outbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Requeue is the operator's decision that a BLOCKED posting may be sent
// again (the cause, e.g. missing funds, has been resolved): BLOCKED ->
// PENDING. Safe because the core refused it, so it was never posted. The
// move is recorded in EntityStateLog with the operator and the reason.
func (o *Outbox) Requeue(ctx context.Context, id int64, operator, reason string) error {
	return o.operatorMove(ctx, id, operator, reason, Pending, "OutboxRequeued")
}

// WriteOff is the operator's decision that a BLOCKED posting will never be
// sent: BLOCKED -> WRITTEN_OFF, recorded in EntityStateLog.
func (o *Outbox) WriteOff(ctx context.Context, id int64, operator, reason string) error {
	return o.operatorMove(ctx, id, operator, reason, WrittenOff, "OutboxWrittenOff")
}

func (o *Outbox) operatorMove(ctx context.Context, id int64, operator, reason string, to Status, event string) error {
	if strings.TrimSpace(operator) == "" {
		return domainerr.New("MISSING_FIELD", "outbox: operator is required", map[string]any{"field": "operator", "id": id})
	}
	if strings.TrimSpace(reason) == "" {
		return domainerr.New("MISSING_FIELD", "outbox: reason is required", map[string]any{"field": "reason", "id": id})
	}
	var current string
	moved := false
	err := o.db.Write(ctx, func(tx *store.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE AdapterOutbox SET status = ?, updated_at = ?
			WHERE id = ? AND status = 'BLOCKED'`, string(to), clock.Stamp(o.clk.Now()), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			err := tx.QueryRowContext(ctx, `SELECT status FROM AdapterOutbox WHERE id = ?`, id).Scan(&current)
			if err != nil {
				current = ""
			}
			return nil
		}
		moved = true
		return o.stateLog(ctx, tx, id, event, Blocked, to, "", "OPS",
			map[string]any{"operator": operator, "reason": reason})
	})
	if err != nil {
		return fmt.Errorf("outbox: %s %d: %w", event, id, err)
	}
	if !moved {
		if current == "" {
			return domainerr.New("TX_NOT_FOUND", fmt.Sprintf("outbox: no posting with id %d", id), map[string]any{"id": id})
		}
		return domainerr.New("STATE_GUARD", fmt.Sprintf("outbox: posting %d is %s, only BLOCKED can be moved by an operator", id, current),
			map[string]any{"id": id, "status": current, "to": string(to)})
	}
	ev := "outbox.requeue"
	if to == WrittenOff {
		ev = "outbox.write_off"
	} else {
		o.Wake()
	}
	o.log.InfoContext(ctx, ev, "id", id, "operator", operator, "reason", reason)
	return nil
}
