package filedrop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

// Drop statuses (FileDrops.status).
const (
	StatusApplying  = "APPLYING"  // valid; records being submitted
	StatusAccepted  = "ACCEPTED"  // every record submitted; waiting for decisions
	StatusResulted  = "RESULTED"  // result file written
	StatusRejected  = "REJECTED"  // invalid; nothing applied
	StatusDuplicate = "DUPLICATE" // same content as DuplicateOf; not applied
)

// Drop is one FileDrops row: a file taken from a bank's inbound folder.
type Drop struct {
	ID             string `json:"drop_id"`
	BankID         string `json:"bank_id"`
	FileName       string `json:"file_name"`
	ProcessingName string `json:"processing_name"`
	SHA256         string `json:"file_sha256"`
	Size           int64  `json:"file_size"`
	Status         string `json:"status"`
	DuplicateOf    string `json:"duplicate_of,omitempty"`
	RecordCount    int64  `json:"record_count"`
	TotalAmount    int64  `json:"total_amount"`
	AppliedThrough int    `json:"applied_through"`
	RefusedCount   int    `json:"refused_count"`
	ErrorCount     int    `json:"error_count"`
	ReportName     string `json:"report_name,omitempty"`
	ResultName     string `json:"result_name,omitempty"`
	ReceivedAt     string `json:"received_at"`
	UpdatedAt      string `json:"updated_at"`
}

const dropColumns = `drop_id, bank_id, file_name, processing_name, file_sha256, file_size, status, duplicate_of,
	record_count, total_amount, applied_through, refused_count, error_count, report_name, result_name, received_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanDrop(s scanner) (Drop, error) {
	var d Drop
	var dup, report, result sql.NullString
	err := s.Scan(&d.ID, &d.BankID, &d.FileName, &d.ProcessingName, &d.SHA256, &d.Size, &d.Status, &dup,
		&d.RecordCount, &d.TotalAmount, &d.AppliedThrough, &d.RefusedCount, &d.ErrorCount, &report, &result, &d.ReceivedAt, &d.UpdatedAt)
	d.DuplicateOf, d.ReportName, d.ResultName = dup.String, report.String, result.String
	return d, err
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ledger reads and writes FileDrops and FileDropRefusals.
type ledger struct {
	db  *store.DB
	clk clock.Clock
}

func (l ledger) get(ctx context.Context, id string) (d Drop, found bool, err error) {
	err = l.db.Read(ctx, func(tx *store.Tx) error {
		d, err = scanDrop(tx.QueryRowContext(ctx, `SELECT `+dropColumns+` FROM FileDrops WHERE drop_id = ?`, id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Drop{}, false, nil
	}
	if err != nil {
		return Drop{}, false, fmt.Errorf("filedrop: read drop %s: %w", id, err)
	}
	return d, true, nil
}

// original returns the applied (not DUPLICATE, not REJECTED) drop with
// this content hash, if any.
func (l ledger) original(ctx context.Context, hash string) (d Drop, found bool, err error) {
	err = l.db.Read(ctx, func(tx *store.Tx) error {
		d, err = scanDrop(tx.QueryRowContext(ctx, `SELECT `+dropColumns+` FROM FileDrops
			WHERE file_sha256 = ? AND status NOT IN ('DUPLICATE', 'REJECTED')`, hash))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Drop{}, false, nil
	}
	if err != nil {
		return Drop{}, false, fmt.Errorf("filedrop: look up hash: %w", err)
	}
	return d, true, nil
}

// list returns the drops of a bank in a status, oldest first.
func (l ledger) list(ctx context.Context, bankID, status string) ([]Drop, error) {
	var out []Drop
	err := l.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+dropColumns+` FROM FileDrops
			WHERE status = ? AND bank_id = ? ORDER BY received_at, drop_id`, status, bankID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDrop(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("filedrop: list %s drops: %w", status, err)
	}
	return out, nil
}

// errMoved is returned when a guarded update found the drop already moved
// on (by another process).
var errMoved = errors.New("moved on by another process")

// errHashTaken is returned by insert when an applied drop already has the
// content hash (the unique index idx_filedrops_sha256 refused the row).
var errHashTaken = errors.New("filedrop: content hash already applied")

func (l ledger) insert(ctx context.Context, d Drop) error {
	now := clock.Stamp(l.clk.Now())
	d.ReceivedAt, d.UpdatedAt = now, now
	err := l.db.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO FileDrops (`+dropColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ID, d.BankID, d.FileName, d.ProcessingName, d.SHA256, d.Size, d.Status, nullable(d.DuplicateOf),
			d.RecordCount, d.TotalAmount, d.AppliedThrough, d.RefusedCount, d.ErrorCount, nullable(d.ReportName), nullable(d.ResultName),
			d.ReceivedAt, d.UpdatedAt)
		return err
	})
	if store.IsUniqueViolation(err) {
		return errHashTaken
	}
	if err != nil {
		return fmt.Errorf("filedrop: record drop %s: %w", d.ID, err)
	}
	return nil
}

// advance moves a drop from one status to another (guarded by the old
// status) and sets the given columns.
func (l ledger) advance(ctx context.Context, id, from, to string, set map[string]any) error {
	q := `UPDATE FileDrops SET status = ?, updated_at = ?`
	args := []any{to, clock.Stamp(l.clk.Now())}
	for _, col := range []string{"applied_through", "result_name"} {
		if v, ok := set[col]; ok {
			q += ", " + col + " = ?"
			args = append(args, v)
		}
	}
	q += ` WHERE drop_id = ? AND status = ?`
	args = append(args, id, from)
	return l.db.Write(ctx, func(tx *store.Tx) error {
		ok, err := store.Applied(tx.ExecContext(ctx, q, args...))
		if err != nil {
			return fmt.Errorf("filedrop: update drop %s: %w", id, err)
		}
		if !ok {
			return fmt.Errorf("filedrop: drop %s is no longer %s: %w", id, from, errMoved)
		}
		return nil
	})
}

// checkpointTx records, in the caller's transaction (the chunk's bulk
// submission), that every data record up to file record number through
// is decided, and the refusals met on the way. It is guarded on the drop
// being APPLYING; applied_through never goes back (two processes resuming
// the same drop commit the same chunk twice, the second as replays).
func (l ledger) checkpointTx(ctx context.Context, tx *store.Tx, id string, through int, refused []refusal) error {
	now := clock.Stamp(l.clk.Now())
	for _, r := range refused {
		if _, err := store.Insert(ctx, tx, "FileDropRefusals", refusalColumns, id, r.record, r.code, r.message, now); err != nil {
			return fmt.Errorf("filedrop: record refusal: %w", err)
		}
	}
	ok, err := store.Applied(tx.ExecContext(ctx, `UPDATE FileDrops SET applied_through = CASE WHEN applied_through > ? THEN applied_through ELSE ? END, updated_at = ?,
		refused_count = (SELECT COUNT(*) FROM FileDropRefusals WHERE drop_id = ?)
		WHERE drop_id = ? AND status = ?`, through, through, now, id, id, StatusApplying)) // CASE: SQLite's two-argument MAX is not PostgreSQL's
	if err != nil {
		return fmt.Errorf("filedrop: checkpoint %s: %w", id, err)
	}
	if !ok {
		return fmt.Errorf("filedrop: drop %s is no longer %s: %w", id, StatusApplying, errMoved)
	}
	return nil
}

var refusalColumns = []string{"drop_id", "record_no", "reason_code", "message", "created_at"}

// refusal is a data record the coordinator refused at submit.
type refusal struct {
	record        int
	code, message string
}

// refusals returns the refused records of a drop by record number.
func (l ledger) refusals(ctx context.Context, id string) (map[int]string, error) {
	out := map[int]string{}
	err := l.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT record_no, reason_code FROM FileDropRefusals WHERE drop_id = ?`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n int
			var code string
			if err := rows.Scan(&n, &code); err != nil {
				return err
			}
			out[n] = code
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("filedrop: read refusals of %s: %w", id, err)
	}
	return out, nil
}
