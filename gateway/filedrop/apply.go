package filedrop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/zengin"
)

// job is one data record to submit.
type job struct {
	record int
	key    string
	req    orchestrator.PaymentInitiated
}

// apply submits every data record after d.AppliedThrough as a BULK
// PaymentInitiated, Chunk records per SubmitBulk: one commit holds a
// chunk's transfers, the refusals among them and the checkpoint
// applied_through, so a crash loses or keeps a whole chunk and the next
// pass resumes exactly after the last committed one. A record submitted
// again anyway (two processes resuming the same file) carries the same
// key and body: the coordinator replays its stored answer, so no record
// is applied twice and none is skipped. A refusal of the coordinator (a
// limit, an inactive participant) is recorded for the result file; an
// error that may pass (a retryable category, read-only mode, I/O) rolls
// the chunk back and stops the pass, and the next pass resumes from the
// checkpoint. The file is streamed: memory holds one chunk, whatever the
// file's size.
func (p *Processor) apply(ctx context.Context, b Bank, d *Drop) error {
	path := filepath.Join(b.Folders().Processing, d.ProcessingName)
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("filedrop: %w", err)
	}
	defer file.Close()
	payees := map[string]string{}
	var h *zengin.Header
	n, data := 0, int64(0)
	chunk := make([]job, 0, p.cfg.Chunk)
	flush := func(through int) error {
		refused, err := p.submit(ctx, b, d.ID, chunk, through)
		if err != nil {
			return err
		}
		d.AppliedThrough = through
		d.RefusedCount += refused
		chunk = chunk[:0]
		if p.cfg.Progress != nil {
			p.cfg.Progress(b.ID, d.FileName, data, d.RecordCount)
		}
		return nil
	}
	for rec, err := range zengin.NewReaderOptions(file, zengin.Options{Names: b.Names}).Records() {
		if err != nil {
			return fmt.Errorf("filedrop: %s changed after validation: %w", d.ProcessingName, err)
		}
		n++
		switch r := rec.(type) {
		case *zengin.Header:
			h = r
			continue
		}
		acc, amount, ok := dataAccount(rec)
		if !ok {
			continue
		}
		data++
		if n <= d.AppliedThrough {
			continue
		}
		payee, found := payees[acc.BankCode]
		if !found {
			if payee, err = p.resolve(ctx, acc.BankCode); err != nil {
				return err
			}
			payees[acc.BankCode] = payee
		}
		if payee == "" {
			// Validated as a participant moments ago and gone since: the
			// coordinator refuses it the same way.
			payee = acc.BankCode
		}
		chunk = append(chunk, job{record: n, key: IdempotencyKey(d.SHA256, n), req: payment(p.cfg.AccountSalt, d.SHA256, n, h, b.ID, payee, acc, amount)})
		if len(chunk) == p.cfg.Chunk {
			if err := flush(n); err != nil {
				return err
			}
		}
	}
	if n > d.AppliedThrough {
		return flush(n)
	}
	return nil
}

// submit submits a chunk in one SubmitBulk whose transaction also records
// the refusals and checkpoints applied_through = through. It returns how
// many records the coordinator refused, or the error that stops the pass
// (then nothing of the chunk was committed).
func (p *Processor) submit(ctx context.Context, b Bank, dropID string, chunk []job, through int) (int, error) {
	items := make([]orchestrator.BulkItem, len(chunk))
	for i, j := range chunk {
		items[i] = orchestrator.BulkItem{Req: j.req, Key: j.key}
	}
	var refused int
	_, err := p.cfg.Coordinator.SubmitBulk(ctx, b.ID, items, func(ctx context.Context, tx *store.Tx, out []orchestrator.BulkOutcome) error {
		var rs []refusal
		for i, o := range out {
			if o.Err == nil {
				continue
			}
			if retryLater(o.Err) {
				return fmt.Errorf("filedrop: submit record %d: %w", chunk[i].record, o.Err)
			}
			de, _ := domainerr.As(o.Err)
			rs = append(rs, refusal{record: chunk[i].record, code: de.Code, message: de.Message})
		}
		refused = len(rs)
		return p.led.checkpointTx(ctx, tx, dropID, through, rs)
	})
	if err != nil {
		return 0, err
	}
	return refused, nil
}
