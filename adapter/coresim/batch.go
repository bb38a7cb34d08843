package coresim

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/overnight"
)

// BatchSummary is what one overnight run did.
type BatchSummary struct {
	Records, Applied, Refused int
	Replayed                  bool // the file had been processed before; its stored result was written again
}

// InBatchWindow reports whether t is inside one of the core's batch
// windows (always true when none are configured).
func (c *Core) InBatchWindow(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.batch) == 0 {
		return true
	}
	m := clock.MinutesOfDay(t)
	for _, w := range c.batch {
		if w.Contains(m) {
			return true
		}
	}
	return false
}

// RunBatchFile processes an overnight posting file (formats/overnight) in
// the core's batch window and writes the result file to resultPath. The
// whole file is validated first; a file with any error is refused and
// nothing is posted. All postings of the file commit together with the
// record of the run, keyed by the header's bank, business date and file
// sequence: running the same file again posts nothing and writes the
// stored result again (the core's batch control, not posting
// idempotency). The result file is written to a temporary name and renamed.
func (c *Core) RunBatchFile(ctx context.Context, postingPath, resultPath string) (BatchSummary, error) {
	var sum BatchSummary
	if !c.InBatchWindow(c.clk.Now()) {
		return sum, domainerr.New("INVALID_REQUEST", "coresim: outside the batch window", map[string]any{"bank": c.bank})
	}
	f, err := os.Open(postingPath)
	if err != nil {
		return sum, fmt.Errorf("coresim: batch: %w", err)
	}
	defer f.Close()
	vs, err := overnight.Validate(f)
	if err != nil {
		return sum, fmt.Errorf("coresim: batch file %s refused: %w", postingPath, err)
	}
	if vs.Header.FileType != overnight.Postings {
		return sum, fmt.Errorf("coresim: batch file %s is a %s file, not a posting file", postingPath, vs.Header.FileType)
	}
	if vs.Header.BankCode != fmt.Sprintf("%04s", c.bank) {
		return sum, fmt.Errorf("coresim: batch file %s is for bank %s, this core is %s", postingPath, vs.Header.BankCode, c.bank)
	}
	key := fmt.Sprintf("%s/%s/%d", vs.Header.BankCode, vs.Header.BusinessDate, vs.Header.FileSeq)
	var result []byte
	err = c.db.Write(ctx, func(tx *store.Tx) error {
		// fn may run again (store.Write on PostgreSQL): start from the top.
		sum.Records, sum.Applied, sum.Refused = 0, 0, 0
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, `SELECT result FROM CoreBatchRuns WHERE run_key = ?`, key).Scan(&result)
		if err == nil {
			sum.Replayed = true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var buf bytes.Buffer
		w := overnight.NewWriter(&buf)
		now := c.clk.Now()
		if err := w.WriteHeader(&overnight.Header{FileType: overnight.Results, Version: 1, BankCode: vs.Header.BankCode,
			BusinessDate: vs.Header.BusinessDate, FileSeq: vs.Header.FileSeq,
			CreatedAt: now.In(clock.JST).Format("20060102150405")}); err != nil {
			return err
		}
		// Postings are decided and written a chunk at a time (batchPoster),
		// exactly as post would one by one; results are written in file order.
		bp := &batchPoster{c: c, tx: tx, now: clock.Stamp(now), emit: func(it *batchItem) error {
			d := it.tag.(*overnight.PostingDetail)
			res := &overnight.ResultDetail{Seq: d.Seq, Kind: d.Kind, Side: d.Side, TxID: d.TxID, Ref: d.Ref,
				Account: d.Account, Amount: d.Amount, Code: resultCode(it.out.ReasonCode)}
			if it.out.Applied {
				sum.Applied++
				res.CoreRef = journalNo(it.out.JournalID)
				res.PostedDate = vs.Header.BusinessDate
			} else {
				sum.Refused++
			}
			return w.WriteResult(res)
		}}
		r := overnight.NewReader(f)
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("coresim: batch file %s: %w", postingPath, err)
			}
			d, ok := rec.(*overnight.PostingDetail)
			if !ok {
				continue
			}
			sum.Records++
			in := PostIn{Ref: d.Ref, TxID: d.TxID, Amount: d.Amount, ReversalOf: d.OriginalRef,
				Account: coreacct.Format(d.BranchCode, d.AccountType, d.AccountNumber)}
			switch {
			case d.Kind == overnight.Reversal:
				in.Kind = KindReversal
			case d.Side == overnight.Debit:
				in.Kind = KindDebit
			default:
				in.Kind = KindCredit
			}
			if err := bp.add(ctx, in, d); err != nil {
				return err
			}
		}
		if err := bp.flush(ctx); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		result = buf.Bytes()
		_, err = tx.ExecContext(ctx, `INSERT INTO CoreBatchRuns (run_key, file_name, records, applied, refused, result, ran_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, key, filepath.Base(postingPath), sum.Records, sum.Applied, sum.Refused, result,
			clock.Stamp(now))
		return err
	})
	if err != nil {
		return sum, err
	}
	tmp := resultPath + ".tmp"
	if err := os.WriteFile(tmp, result, 0o644); err != nil {
		return sum, fmt.Errorf("coresim: write result file: %w", err)
	}
	if err := os.Rename(tmp, resultPath); err != nil {
		return sum, fmt.Errorf("coresim: write result file: %w", err)
	}
	c.log.InfoContext(ctx, "coresim.batch", "bank", c.bank, "file", postingPath, "result", resultPath,
		"records", sum.Records, "applied", sum.Applied, "refused", sum.Refused, "replayed", sum.Replayed)
	return sum, nil
}

func resultCode(reason string) overnight.ResultCode {
	switch reason {
	case "":
		return overnight.Posted
	case ReasonInsufficientFunds:
		return overnight.InsufficientFunds
	case ReasonAccountNotFound:
		return overnight.NoSuchAccount
	case ReasonClosing:
		return overnight.AccountClosed
	case ReasonOriginalNotFound:
		return overnight.OriginalNotFound
	}
	return overnight.OtherFailure
}
