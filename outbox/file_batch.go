package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/entitystate"
	"github.com/zcgw/zcgw/coordinator/store"
)

// FileAnswer is the core's answer to one posting of an overnight file.
type FileAnswer struct {
	Ref     string
	Applied bool
	Reason  string // the refusal's reason code when not Applied ("" = BANK_ERROR)
	CoreRef string
	// ID and TxID, when ID is not 0, are the posting's as FileEntriesAfter
	// read them in the same transaction: the posting is then not looked up
	// again by Ref (its guarded UPDATE still requires IN_FILE and FILE).
	ID   int64
	TxID string
}

// settleRows is how many postings SettleFromFileAll reads in one query.
const settleRows = 256

// SettleFromFileAll is SettleFromFile for every answer of a result file,
// inside tx, with the same guard, states, columns, state log and log
// lines; the postings whose answer has no ID are read by chunks of refs,
// each answer is applied by its own guarded UPDATE, and the state log rows
// are written by multi-row INSERTs (entitystate.RecordAll). A posting that
// is not IN_FILE is a STATE_GUARD error (the caller rolls back).
func (o *Outbox) SettleFromFileAll(ctx context.Context, tx *store.Tx, answers []FileAnswer) error {
	now := clock.Stamp(o.clk.Now())
	facts := make([]entitystate.Fact, 0, len(answers))
	inFile := string(InFile)
	seen := make(map[string]bool, len(answers))
	for lo := 0; lo < len(answers); lo += settleRows {
		part := answers[lo:min(lo+settleRows, len(answers))]
		var args []any
		for _, a := range part {
			if a.ID == 0 {
				args = append(args, a.Ref)
			}
		}
		type row struct {
			id           int64
			txid, status string
		}
		rows := make(map[string]row, len(args))
		if len(args) > 0 {
			rs, err := tx.QueryContext(ctx, `SELECT ref, id, txid, status FROM AdapterOutbox WHERE route = 'FILE' AND ref IN (?`+
				strings.Repeat(", ?", len(args)-1)+`)`, args...)
			if err != nil {
				return fmt.Errorf("outbox: settle from file: %w", err)
			}
			for rs.Next() {
				var ref string
				var r row
				if err := rs.Scan(&ref, &r.id, &r.txid, &r.status); err != nil {
					rs.Close()
					return fmt.Errorf("outbox: settle from file: %w", err)
				}
				rows[ref] = r
			}
			rs.Close()
			if err := rs.Err(); err != nil {
				return fmt.Errorf("outbox: settle from file: %w", err)
			}
		}
		// Each answer by its own guarded UPDATE (IN_FILE, FILE) through one
		// cached prepared statement per outcome: measured cheaper per row
		// than one UPDATE ... FROM (VALUES ...) per part (SQLite builds the
		// joined rows into a temporary table first; docs/PERFORMANCE.md,
		// session 7).
		for _, a := range part {
			r, ok := rows[a.Ref]
			if a.ID != 0 {
				r, ok = row{id: a.ID, txid: a.TxID, status: inFile}, true
			}
			if !ok || r.status != inFile {
				status := r.status
				if !ok {
					status = "not a FILE posting"
				}
				return domainerr.New("STATE_GUARD", fmt.Sprintf("outbox: posting %s is %s, not IN_FILE", a.Ref, status),
					map[string]any{"ref": a.Ref, "status": status})
			}
			if seen[a.Ref] { // the same ref twice in answers
				return domainerr.New("STATE_GUARD", fmt.Sprintf("outbox: posting %s is answered twice", a.Ref), map[string]any{"ref": a.Ref})
			}
			seen[a.Ref] = true
			to, event, reason := Applied, "OutboxFileApplied", ""
			var res sql.Result
			var err error
			if a.Applied {
				res, err = tx.ExecContext(ctx, `UPDATE AdapterOutbox SET status = 'APPLIED', sends = sends + 1, reason_code = NULL,
					core_ref = ?, applied_at = ?, updated_at = ?, last_error = NULL
					WHERE id = ? AND status = 'IN_FILE' AND route = 'FILE'`, nullStr(a.CoreRef), now, now, r.id)
			} else {
				to, event, reason = Blocked, "OutboxFileBlocked", a.Reason
				if reason == "" {
					reason = "BANK_ERROR"
				}
				res, err = tx.ExecContext(ctx, `UPDATE AdapterOutbox SET status = ?, sends = sends + 1, reason_code = ?,
					core_ref = NULL, applied_at = NULL, updated_at = ?, last_error = ?
					WHERE id = ? AND status = 'IN_FILE' AND route = 'FILE'`,
					string(to), reason, now, nullStr(blockedMsg(false, reason)), r.id)
			}
			ok, err = store.Applied(res, err)
			if err != nil {
				return fmt.Errorf("outbox: settle from file %s: %w", a.Ref, err)
			}
			if !ok {
				return domainerr.New("STATE_GUARD", fmt.Sprintf("outbox: posting %s is no longer IN_FILE", a.Ref), map[string]any{"ref": a.Ref})
			}
			from := inFile
			facts = append(facts, entitystate.Fact{EntityType: EntityType, EntityID: strconv.FormatInt(r.id, 10), EventType: event, From: &from,
				To: string(to), ReasonCode: reason, Actor: o.actor, Payload: settledPayload{Ref: a.Ref, TxID: r.txid}})
			if a.Applied {
				o.log.InfoContext(ctx, "outbox.apply", "id", r.id, "ref", a.Ref, "txid", r.txid, "core_ref", a.CoreRef, "via", "file")
			} else {
				o.log.WarnContext(ctx, "outbox.blocked", "id", r.id, "ref", a.Ref, "txid", r.txid, "reason_code", reason, "via", "file")
			}
		}
	}
	if err := entitystate.RecordAll(ctx, tx, o.clk, facts); err != nil {
		return fmt.Errorf("outbox: state log of %d file postings: %w", len(facts), err)
	}
	return nil
}
