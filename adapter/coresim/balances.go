package coresim

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/coreacct"
	"github.com/zcgw/zcgw/formats/corebalance"
)

// WriteBalanceFile writes the core balance file (formats/corebalance) of
// businessDate (JST YYYY-MM-DD) to w: every account's ledger balance, in
// account order, read in one transaction, so the file is one snapshot. The
// cutoff is the clock read before the snapshot, to the second, rounded
// down: every posting committed before the cutoff is in the balances, and
// one committed after the snapshot began is not (one committed in between
// is in, which a reader that treats activity from the cutoff on as not
// comparable tolerates). Memory stays flat in the number of accounts.
func (c *Core) WriteBalanceFile(ctx context.Context, w io.Writer, businessDate string) (corebalance.Summary, error) {
	var sum corebalance.Summary
	day, err := clock.ParseBusinessDate(businessDate)
	if err != nil {
		return sum, fmt.Errorf("coresim: balance file: %w", err)
	}
	cutoff := c.clk.Now().In(clock.JST)
	hdr := &corebalance.Header{Version: 1, BankCode: fmt.Sprintf("%04s", c.bank),
		BusinessDate: corebalance.Date{Year: day.Year(), Month: int(day.Month()), Day: day.Day()},
		CutoffAt:     cutoff.Format("20060102150405")}
	bw := corebalance.NewWriter(w)
	if err := bw.WriteHeader(hdr); err != nil {
		return sum, err
	}
	err = c.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT account, balance, status FROM CoreAccounts ORDER BY account`)
		if err != nil {
			return err
		}
		defer rows.Close()
		var acct, status string
		var bal int64
		for rows.Next() {
			if err := rows.Scan(&acct, &bal, &status); err != nil {
				return err
			}
			key, err := coreacct.Parse(acct)
			if err != nil {
				return fmt.Errorf("coresim: balance file: %w", err)
			}
			st := corebalance.Open
			if status == "CLOSED" {
				st = corebalance.Closed
			}
			if err := bw.WriteDetail(&corebalance.Detail{Account: key, Status: st, Balance: bal}); err != nil {
				return err
			}
			sum.Count++
			sum.BalanceTotal += bal
		}
		return rows.Err()
	})
	if err != nil {
		return sum, fmt.Errorf("coresim: balance file: %w", err)
	}
	if err := bw.Close(); err != nil {
		return sum, err
	}
	sum.Header = *hdr
	c.log.InfoContext(ctx, "coresim.balance_file", "bank", c.bank, "business_date", businessDate,
		"details", sum.Count, "cutoff", hdr.CutoffAt)
	return sum, nil
}

// DropBalanceFile writes the balance file of businessDate into dir under
// corebalance.FileName, as a core drops it in its batch window: to a
// temporary name, fsynced, renamed, the folder fsynced. It returns the
// file's path.
func (c *Core) DropBalanceFile(ctx context.Context, dir, businessDate string) (string, error) {
	day, err := clock.ParseBusinessDate(businessDate)
	if err != nil {
		return "", fmt.Errorf("coresim: balance file: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("coresim: balance file: %w", err)
	}
	path := filepath.Join(dir, corebalance.FileName(fmt.Sprintf("%04s", c.bank),
		corebalance.Date{Year: day.Year(), Month: int(day.Month()), Day: day.Day()}))
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("coresim: balance file: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := c.WriteBalanceFile(ctx, f, businessDate); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("coresim: balance file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("coresim: balance file: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("coresim: balance file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return "", fmt.Errorf("coresim: balance file: sync folder: %w", err)
		}
	}
	return path, nil
}
