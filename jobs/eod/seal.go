package eod

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/workbook"
)

// WorkbookKeyFile is the node's secret workbook key in the data folder:
// 32 random bytes as hex, 0600, created on first use (like the ZC signing
// key zc-ed25519.key). Every exception row of a workbook the node writes
// carries an HMAC-SHA256 under it, and `zcgw recon apply` accepts only rows
// whose MAC it recomputes. It never leaves the data folder.
const WorkbookKeyFile = "recon-workbook.key"

// WorkbookKey reads the node's workbook key from dataDir. With create, a
// missing key is created (random, 0600; two processes creating it at once
// end up with the same key: it is linked into place, never overwritten).
// It is the only place the key is read.
func WorkbookKey(dataDir string, create bool) ([]byte, error) {
	path := filepath.Join(dataDir, WorkbookKeyFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := createWorkbookKey(dataDir, path); err != nil {
			return nil, err
		}
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("eod: workbook key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) != workbook.KeySize {
		return nil, fmt.Errorf("eod: workbook key %s: not %d hex-encoded bytes", path, workbook.KeySize)
	}
	return key, nil
}

func createWorkbookKey(dataDir, path string) error {
	key := make([]byte, workbook.KeySize)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("eod: workbook key: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("eod: workbook key: %w", err)
	}
	tmp, err := os.CreateTemp(dataDir, WorkbookKeyFile+".*.tmp") // 0600
	if err != nil {
		return fmt.Errorf("eod: workbook key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Link, not rename: a key another process created first is kept.
		if err = os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("eod: workbook key: %w", err)
	}
	return nil
}

// IssueWorkbook writes rep to path as a workbook the node issues: a fresh
// workbook id, every exception row MACed under the node's workbook key
// (created on first use), and — once the file is in place — the id with
// the rows written recorded in ReconWorkbooks, in one transaction with
// inTx (nil: nothing else). A workbook whose recording failed is on disk
// but not issued: ApplyWorkbook refuses it.
func IssueWorkbook(ctx context.Context, db *store.DB, dataDir, path string, rep workbook.Report, clk clock.Clock,
	inTx func(*store.Tx, workbook.Stats) error) (workbook.Stats, error) {
	key, err := WorkbookKey(dataDir, true)
	if err != nil {
		return workbook.Stats{}, err
	}
	id, err := workbook.NewWorkbookID()
	if err != nil {
		return workbook.Stats{}, err
	}
	rep.Seal = workbook.Seal{WorkbookID: id, Key: key}
	st, err := workbook.Write(path, rep)
	if err != nil {
		return st, err
	}
	err = db.Write(ctx, func(tx *store.Tx) error {
		if inTx != nil {
			if err := inTx(tx, st); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO ReconWorkbooks (workbook_id, business_date, exception_rows, rows, path, issued_at)
			VALUES (?, ?, ?, ?, ?, ?)`, id, rep.BusinessDate, st.Exceptions, st.Rows, path, clock.Stamp(clk.Now()))
		return err
	})
	if err != nil {
		return st, fmt.Errorf("eod: record workbook %s: %w", id, err)
	}
	return st, nil
}

// IssuedWorkbooks lists the workbooks the node issued for a business date.
func IssuedWorkbooks(ctx context.Context, db *store.DB, date string) ([]workbook.Issued, error) {
	var out []workbook.Issued
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT workbook_id, exception_rows, rows FROM ReconWorkbooks
			WHERE business_date = ? ORDER BY issued_at, workbook_id`, date)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var w workbook.Issued
			if err := rows.Scan(&w.WorkbookID, &w.ExceptionRows, &w.Rows); err != nil {
				return err
			}
			out = append(out, w)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("eod: issued workbooks of %s: %w", date, err)
	}
	return out, nil
}
