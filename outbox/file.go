package outbox

import (
	"context"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"math"
	"strconv"
	"strings"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/entitystate"
	"github.com/zcgw/zcgw/coordinator/store"
)

// The field widths of the overnight posting file (docs/eod.md): a
// RouteFILE posting must fit them, or it could never be written.
const (
	FileMaxRef  = 32 // 記帳参照番号 and 取消対象の記帳参照番号
	FileMaxTxID = 36
)

// FitsFile reports why p cannot be written into an overnight posting file
// (nil when it can): Ref and ReversalOf at most FileMaxRef bytes, TxID at
// most FileMaxTxID, Account "BBB-T-NNNNNNN" (branch, type, number).
func FitsFile(p Posting) error {
	if len(p.Ref) > FileMaxRef || len(p.ReversalOf) > FileMaxRef {
		return fmt.Errorf("ref %q or reversal_of %q longer than %d bytes", p.Ref, p.ReversalOf, FileMaxRef)
	}
	if len(p.TxID) > FileMaxTxID {
		return fmt.Errorf("txid %q longer than %d bytes", p.TxID, FileMaxTxID)
	}
	if _, err := coreacct.Parse(p.Account); err != nil {
		return err
	}
	return nil
}

// fileable selects the PENDING FILE rows of a bank that may go into a file
// now. Per-account order: no earlier row of the account may be in flight
// over MQ (PENDING MQ, CLAIMED, IN_DOUBT) or in an unanswered file
// (IN_FILE). Earlier PENDING FILE rows are no obstacle: they are taken
// first (id order) into the same file, and the core applies a file in
// detail order. A reversal waits while the reversed posting is unsettled
// outside this file or BLOCKED awaiting an operator.
//
// The in-flight rows are found once per cut (the CTE blocked: each
// account's first in-flight id, read through the status and route
// indexes), not once per candidate row by a scan of the account's earlier
// rows. Parameters: bank, bank, bank.
const fileable = `WITH blocked AS MATERIALIZED (SELECT account, MIN(id) AS first FROM (
		SELECT account, id FROM AdapterOutbox WHERE status IN ('CLAIMED','IN_DOUBT','IN_FILE') AND bank = ?
		UNION ALL
		SELECT account, id FROM AdapterOutbox WHERE bank = ? AND route = 'MQ' AND status = 'PENDING') AS f
	GROUP BY account),
fileable AS (SELECT o.id FROM AdapterOutbox o
	WHERE o.bank = ? AND o.route = 'FILE' AND o.status = 'PENDING'
	AND NOT EXISTS (SELECT 1 FROM blocked b WHERE b.account = o.account AND b.first < o.id)
	AND (o.reversal_of IS NULL OR NOT EXISTS (SELECT 1 FROM AdapterOutbox r
		WHERE r.ref = o.reversal_of
		  AND (r.status IN ('CLAIMED','IN_DOUBT','BLOCKED','IN_FILE') OR (r.status = 'PENDING' AND r.route = 'MQ')))))
`

// filedPayload and settledPayload are the state log payloads of a file's
// postings: the JSON of the maps {"ref", "file_id"} and {"ref", "txid"}
// (keys in the order encoding/json sorts a map's), without a map per row.
type filedPayload struct {
	FileID string `json:"file_id"`
	Ref    string `json:"ref"`
}

type settledPayload struct {
	Ref  string `json:"ref"`
	TxID string `json:"txid"`
}

// logSlice is how many state log rows a cut builds before writing them.
const logSlice = 4096

// TakeForFile moves up to limit fileable FILE postings of bank, oldest
// first, from PENDING to IN_FILE under fileID, numbering them 1..n (the
// file's detail numbers), inside the caller's transaction (the exchange's
// cut). It returns how many it took. Only this call and SettleFromFile
// move FILE rows.
func (o *Outbox) TakeForFile(ctx context.Context, tx *store.Tx, bank, fileID string, limit int) (int, error) {
	if strings.TrimSpace(fileID) == "" || limit <= 0 {
		return 0, domainerr.New("INVALID_REQUEST", "outbox: TakeForFile needs a file id and a positive limit",
			map[string]any{"file_id": fileID, "limit": limit})
	}
	now := clock.Stamp(o.clk.Now())
	rows, err := tx.QueryContext(ctx, fileable+`UPDATE AdapterOutbox SET status = 'IN_FILE', file_id = ?, file_seq = r.rn, updated_at = ?
		FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM fileable ORDER BY id LIMIT ?) AS r
		WHERE AdapterOutbox.id = r.id AND AdapterOutbox.status = 'PENDING' AND AdapterOutbox.route = 'FILE'
		RETURNING AdapterOutbox.id, AdapterOutbox.ref`, bank, bank, bank, fileID, now, limit)
	if err != nil {
		return 0, fmt.Errorf("outbox: take for file %s: %w", fileID, err)
	}
	type taken struct {
		id  int64
		ref string
	}
	var got []taken
	for rows.Next() {
		var t taken
		if err := rows.Scan(&t.id, &t.ref); err != nil {
			rows.Close()
			return 0, fmt.Errorf("outbox: take for file %s: %w", fileID, err)
		}
		got = append(got, t)
	}
	if err := rows.Close(); err != nil {
		return 0, fmt.Errorf("outbox: take for file %s: %w", fileID, err)
	}
	// The state log rows of the cut by multi-row INSERTs, a slice at a time.
	from := string(Pending)
	facts := make([]entitystate.Fact, 0, min(len(got), logSlice))
	for lo := 0; lo < len(got); lo += logSlice {
		facts = facts[:0]
		for _, t := range got[lo:min(lo+logSlice, len(got))] {
			facts = append(facts, entitystate.Fact{EntityType: EntityType, EntityID: strconv.FormatInt(t.id, 10), EventType: "OutboxFiled",
				From: &from, To: string(InFile), Actor: o.actor, Payload: filedPayload{FileID: fileID, Ref: t.ref}})
		}
		if err := entitystate.RecordAll(ctx, tx, o.clk, facts); err != nil {
			return 0, fmt.Errorf("outbox: state log of %d filed postings: %w", len(facts), err)
		}
	}
	if len(got) > 0 {
		o.log.InfoContext(ctx, "outbox.file_take", "bank", bank, "file_id", fileID, "postings", len(got))
	}
	return len(got), nil
}

// FileEntry is one posting of an overnight file.
type FileEntry struct {
	ID      int64 // the outbox row's id
	Seq     int64 // detail number in the file, 1..n
	Posting Posting
	Side    byte // 'D' debits the account, 'C' credits it
	Status  Status
}

// FileEntries returns the postings of fileID in detail order, with the side
// each moves the account (a reversal moves it opposite to the reversed
// posting). tx may be a read transaction. For a large file use
// FileEntriesAfter, a slice at a time.
func (o *Outbox) FileEntries(ctx context.Context, tx *store.Tx, fileID string) ([]FileEntry, error) {
	return o.FileEntriesAfter(ctx, tx, fileID, 0, math.MaxInt32)
}

// FileEntriesAfter returns up to limit postings of fileID whose detail
// numbers follow after, in detail order, as FileEntries does (the file's
// index on file_id, file_seq: a slice costs its own rows only).
func (o *Outbox) FileEntriesAfter(ctx context.Context, tx *store.Tx, fileID string, after int64, limit int) ([]FileEntry, error) {
	rows, err := tx.QueryContext(ctx, `SELECT o.id, o.file_seq, o.ref, o.txid, o.bank, o.account, o.kind, o.amount,
		COALESCE(o.reversal_of,''), o.status,
		CASE o.kind WHEN 'DEBIT' THEN 'D' WHEN 'CREDIT' THEN 'C'
		     ELSE CASE (SELECT r.kind FROM AdapterOutbox r WHERE r.ref = o.reversal_of) WHEN 'CREDIT' THEN 'D' ELSE 'C' END END
		FROM AdapterOutbox o WHERE o.file_id = ? AND o.file_seq > ? ORDER BY o.file_seq LIMIT ?`, fileID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("outbox: file entries %s: %w", fileID, err)
	}
	defer rows.Close()
	var out []FileEntry
	for rows.Next() {
		var e FileEntry
		var kind, status, side string
		if err := rows.Scan(&e.ID, &e.Seq, &e.Posting.Ref, &e.Posting.TxID, &e.Posting.Bank, &e.Posting.Account, &kind,
			&e.Posting.Amount, &e.Posting.ReversalOf, &status, &side); err != nil {
			return nil, fmt.Errorf("outbox: file entries %s: %w", fileID, err)
		}
		e.Posting.Kind, e.Posting.Route, e.Status, e.Side = Kind(kind), RouteFILE, Status(status), side[0]
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("outbox: file entries %s: %w", fileID, err)
	}
	return out, nil
}

// FileWaiting counts the postings of fileID still IN_FILE (waiting for the
// core's answer).
func (o *Outbox) FileWaiting(ctx context.Context, tx *store.Tx, fileID string) (int, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterOutbox WHERE file_id = ? AND status = 'IN_FILE'`, fileID).Scan(&n); err != nil {
		return 0, fmt.Errorf("outbox: postings waiting in %s: %w", fileID, err)
	}
	return n, nil
}

// SettleFromFile records the core's answer to an IN_FILE posting, inside
// the caller's transaction (the exchange's ingestion of the result file):
// applied -> APPLIED (the shadow balance now includes it), otherwise
// BLOCKED with reason; the Case of a BLOCKED posting is opened by the next
// OpenMissingCases, after the transaction commits (DedupKey keeps it to
// one). A posting that is not IN_FILE is a STATE_GUARD error, so an answer
// is never applied twice.
func (o *Outbox) SettleFromFile(ctx context.Context, tx *store.Tx, ref string, applied bool, reason, coreRef string) error {
	return o.SettleFromFileAll(ctx, tx, []FileAnswer{{Ref: ref, Applied: applied, Reason: reason, CoreRef: coreRef}})
}

func blockedMsg(applied bool, reason string) string {
	if applied {
		return ""
	}
	return "core refused the posting in its result file: " + reason
}
