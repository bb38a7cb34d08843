package filedrop

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/formats/zengin"
)

// ResultSuffix names a result file: outbound/<processing name>.result.
const ResultSuffix = ".result"

// ResultCode is the 振替結果コード a transfer gets in the result file once
// its outcome is final:
//
//	0 振替済         SETTLED: the money moved
//	1 資金不足       cancelled for INSUFFICIENT_FUNDS, BOJ_INSUFFICIENT_FUNDS, H_LIMIT_EXCEEDED
//	2 預金取引なし   ACCOUNT_NOT_FOUND
//	3 預金者都合     ACCOUNT_FROZEN
//	8 委託者都合     CANCEL_BY_PAYER
//	9 その他         any other cancel or failed execution, or a record the
//	                 coordinator refused at submit
//
// final is false while the outcome can still change: before the batch
// window decides, after a decision to settle until SETTLED, and while a
// transfer is SUSPENDED waiting for a Case to be resolved. A bank is never
// told 振替済 for money that has not moved, so the result file waits.
func ResultCode(v orchestrator.View) (code zengin.ResultCode, final bool) {
	switch v.State {
	case string(lane.Settled):
		return zengin.ResultDone, true
	case string(lane.DecidedCancel), string(lane.Cancelled), string(lane.FailedExecution):
		return reasonResult(v.ReasonCode), true
	}
	return 0, false
}

func reasonResult(reason string) zengin.ResultCode {
	switch reason {
	case "INSUFFICIENT_FUNDS", "BOJ_INSUFFICIENT_FUNDS", "H_LIMIT_EXCEEDED":
		return zengin.ResultNoFunds
	case "ACCOUNT_NOT_FOUND":
		return zengin.ResultNoAccount
	case "ACCOUNT_FROZEN":
		return zengin.ResultStoppedByPayer
	case "CANCEL_BY_PAYER":
		return zengin.ResultStoppedByClient
	}
	return zengin.ResultOther
}

// result writes the result file of an ACCEPTED drop once every transfer
// is decided, and marks the drop RESULTED. It reports false (and writes
// nothing) while a transfer is undecided. Decisions already seen are
// remembered, so a pass only queries the records not yet known decided.
func (p *Processor) result(ctx context.Context, b Bank, d Drop) (bool, error) {
	f := b.Folders()
	refused, err := p.led.refusals(ctx, d.ID)
	if err != nil {
		return false, err
	}
	path := filepath.Join(f.Processed, d.ProcessingName)
	// Pass 1: are all decided? (cheap on later passes: starts after the
	// records already known decided)
	p.mu.Lock()
	known := p.decided[d.ID]
	p.mu.Unlock()
	i := 0
	err = p.eachData(b, path, func(n int, _ *zengin.Header, _ zengin.Record) error {
		i++
		if i <= known {
			return nil
		}
		if _, ok := refused[n]; ok {
			known = i
			return nil
		}
		v, err := p.cfg.Coordinator.Query(ctx, TxID(d.SHA256, n))
		if err != nil {
			return fmt.Errorf("filedrop: query record %d of %s: %w", n, d.ID, err)
		}
		if _, ok := ResultCode(v); !ok {
			return errNotReady
		}
		known = i
		return nil
	})
	p.mu.Lock()
	p.decided[d.ID] = known
	p.mu.Unlock()
	if err == errNotReady {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// Pass 2: write it.
	name := d.ProcessingName + ResultSuffix
	var done, failed int64
	err = writeAtomic(filepath.Join(f.Outbound, name), func(out io.Writer) error {
		w := zengin.NewWriter(out)
		w.ResultFile = true
		w.Names = b.Names
		var group *zengin.Header
		err := p.eachRecord(b, path, func(n int, rec zengin.Record) error {
			switch r := rec.(type) {
			case *zengin.Header:
				if group != nil {
					if err := w.WriteTrailer(); err != nil {
						return err
					}
					if err := w.WriteEnd(); err != nil {
						return err
					}
				}
				h := *r
				h.Kind = zengin.KindDebit
				group = r
				return w.WriteHeader(&h)
			case *zengin.TransferData, *zengin.PayrollData:
				acc, amount, _ := dataAccount(rec)
				code, err := p.recordResult(ctx, d, n, refused)
				if err != nil {
					return err
				}
				if code == zengin.ResultDone {
					done++
				} else {
					failed++
				}
				return w.WriteData(&zengin.DebitData{Account: resultAccount(acc), Amount: amount, NewCode: newCode(rec),
					CustomerNumber: fmt.Sprintf("%020d", n), Result: code})
			}
			return nil
		})
		if err != nil {
			return err
		}
		if group != nil {
			if err := w.WriteTrailer(); err != nil {
				return err
			}
			if err := w.WriteEnd(); err != nil {
				return err
			}
		}
		return w.Flush()
	})
	if err != nil {
		return false, err
	}
	failpoint.Hit(FailAfterResultFile)
	if err := p.led.advance(ctx, d.ID, StatusAccepted, StatusResulted, map[string]any{"result_name": name}); err != nil {
		return false, err
	}
	p.mu.Lock()
	delete(p.decided, d.ID)
	p.mu.Unlock()
	p.log.InfoContext(ctx, "filedrop.resulted", "bank_id", b.ID, "file", d.FileName, "drop_id", d.ID,
		"result_file", name, "done", done, "failed", failed)
	return true, nil
}

func (p *Processor) recordResult(ctx context.Context, d Drop, n int, refused map[int]string) (zengin.ResultCode, error) {
	if reason, ok := refused[n]; ok {
		return reasonResult(reason), nil
	}
	v, err := p.cfg.Coordinator.Query(ctx, TxID(d.SHA256, n))
	if err != nil {
		return 0, fmt.Errorf("filedrop: query record %d of %s: %w", n, d.ID, err)
	}
	code, ok := ResultCode(v)
	if !ok {
		return 0, domainerr.New("INVARIANT_VIOLATION", "a decided transfer is undecided again", map[string]any{"txid": v.TxID})
	}
	return code, nil
}

// resultAccount is a payee account as the result file (口座振替 layout)
// carries it: that layout's 預金種目 are 1, 2, 3 and 9, so a 貯蓄 (4)
// account of a 総合振込/給与 record is reported as 9 (その他). The record
// is identified by its 顧客番号 (the input record number), not by the
// account.
func resultAccount(a zengin.Account) zengin.Account {
	if a.AccountType == 4 {
		a.AccountType = 9
	}
	return a
}

func newCode(r zengin.Record) uint8 {
	switch d := r.(type) {
	case *zengin.TransferData:
		return d.NewCode
	case *zengin.PayrollData:
		return d.NewCode
	}
	return 0
}

// eachRecord streams the records of a (validated) file with their file
// record numbers.
func (p *Processor) eachRecord(b Bank, path string, fn func(n int, rec zengin.Record) error) error {
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("filedrop: %w", err)
	}
	defer file.Close()
	n := 0
	for rec, err := range zengin.NewReaderOptions(file, zengin.Options{Names: b.Names}).Records() {
		if err != nil {
			return fmt.Errorf("filedrop: %s: %w", filepath.Base(path), err)
		}
		n++
		if err := fn(n, rec); err != nil {
			return err
		}
	}
	return nil
}

// eachData streams the data records with their group header.
func (p *Processor) eachData(b Bank, path string, fn func(n int, h *zengin.Header, rec zengin.Record) error) error {
	var h *zengin.Header
	return p.eachRecord(b, path, func(n int, rec zengin.Record) error {
		if hd, ok := rec.(*zengin.Header); ok {
			h = hd
			return nil
		}
		if _, _, ok := dataAccount(rec); ok {
			return fn(n, h, rec)
		}
		return nil
	})
}
