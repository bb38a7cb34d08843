package entitystate

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/uuid"
)

// recordRows is how many EntityStateLog rows one multi-row INSERT writes.
const recordRows = 128

var logColumns = []string{"log_id", "entity_type", "entity_id", "event_type", "state_from", "state_to", "reason_code",
	"actor", "payload_json", "occurred_at"}

// RecordAll appends the rows of facts inside tx, in order, exactly as
// Record would one by one (one occurred_at for all), by multi-row
// INSERTs: for a batch that changed many entities in one transaction (an
// overnight result file settling its postings).
func RecordAll(ctx context.Context, tx *store.Tx, clk clock.Clock, facts []Fact) error {
	t := clk.Now()
	now := clock.Stamp(t)
	args := make([]any, 0, min(len(facts), recordRows)*len(logColumns)) // Record: one row, not a full slice
	for lo := 0; lo < len(facts); lo += recordRows {
		part := facts[lo:min(lo+recordRows, len(facts))]
		args = args[:0]
		for _, f := range part {
			if _, ok := Lookup(f.EntityType); !ok {
				return domainerr.New("INVALID_REQUEST", "unknown entity type", map[string]any{"entity_type": f.EntityType})
			}
			var payload sql.NullString
			if f.Payload != nil {
				raw, err := json.Marshal(f.Payload)
				if err != nil {
					return fmt.Errorf("entitystate: encode payload of %s %s: %w", f.EntityType, f.EntityID, err)
				}
				payload = sql.NullString{String: string(raw), Valid: true}
			}
			args = append(args, "ESL-"+uuid.NewV7(t), f.EntityType, f.EntityID, f.EventType, f.From, f.To,
				nullable(f.ReasonCode), nullable(f.Actor), payload, now)
		}
		if _, err := tx.ExecContext(ctx, store.InsertRows("EntityStateLog", logColumns, len(part)), args...); err != nil {
			return fmt.Errorf("entitystate: log %d facts: %w", len(part), err)
		}
	}
	return nil
}
