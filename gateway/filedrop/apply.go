package filedrop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/zengin"
)

// Failpoints of a file drop (coordinator/failpoint; docs/chaos.md), in
// the order a file meets them. Each names what a kill there leaves.
const (
	// FailAfterClaim: the file renamed into processing/, no FileDrops row.
	FailAfterClaim = "filedrop.after-claim"
	// FailAfterValidated: the drop recorded APPLYING, nothing applied.
	FailAfterValidated = "filedrop.after-validated"
	// FailAfterChunk: a chunk's transfers and checkpoint committed, the
	// next chunk not submitted.
	FailAfterChunk = "filedrop.after-chunk"
	// FailAfterApplied: every chunk committed, the drop still APPLYING.
	FailAfterApplied = "filedrop.after-applied"
	// FailAfterAccepted: the drop ACCEPTED, the file still in processing/.
	FailAfterAccepted = "filedrop.after-accepted"
	// FailAfterResultFile: the result file renamed into outbound/, the
	// drop not yet RESULTED.
	FailAfterResultFile = "filedrop.after-result-file"
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
	// The records are read and mapped here while the previous chunk is
	// being committed (one chunk ahead); chunks are committed one at a
	// time, in file order, so applied_through only moves forward.
	type batch struct {
		jobs    []job
		through int
		data    int64
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// From here the submitting goroutine owns d until done is received.
	todo := make(chan batch, 1)
	done := make(chan error, 1)
	go func() {
		var first error
		for c := range todo {
			if first != nil {
				continue
			}
			refused, err := p.submit(ctx, b, d.ID, c.jobs, c.through)
			if err != nil {
				first = err
				cancel()
				continue
			}
			failpoint.Hit(FailAfterChunk)
			d.AppliedThrough = c.through
			d.RefusedCount += refused
			if p.cfg.Progress != nil {
				p.cfg.Progress(b.ID, d.FileName, c.data, d.RecordCount)
			}
		}
		done <- first
	}()
	readErr := p.readChunks(ctx, b, d.ProcessingName, d.SHA256, d.AppliedThrough, file, func(jobs []job, through int, data int64) bool {
		select {
		case todo <- batch{jobs, through, data}:
			return true
		case <-ctx.Done():
			return false
		}
	})
	close(todo)
	if err := <-done; err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	return nil
}

// readChunks streams the data records after file record number from as jobs,
// Chunk at a time, to emit (with the file record number of the chunk's
// last record, or of the file's last record for the final chunk, and the
// data records read so far); it stops when emit returns false.
func (p *Processor) readChunks(ctx context.Context, b Bank, name, hash string, from int, file *os.File, emit func(jobs []job, through int, data int64) bool) error {
	payees := map[string]string{}
	var h *zengin.Header
	n, data := 0, int64(0)
	chunk := make([]job, 0, p.cfg.Chunk)
	for rec, err := range zengin.NewReaderOptions(file, zengin.Options{Names: b.Names}).Records() {
		if err != nil {
			return fmt.Errorf("filedrop: %s changed after validation: %w", name, err)
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
		if n <= from {
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
		req := payment(p.cfg.accountHash, hash, n, h, b.ID, payee, acc, amount)
		req.EdiRef = recordEDI(rec)
		chunk = append(chunk, job{record: n, key: IdempotencyKey(hash, n), req: req})
		if len(chunk) == p.cfg.Chunk {
			if !emit(chunk, n, data) {
				return nil
			}
			chunk = make([]job, 0, p.cfg.Chunk)
		}
	}
	if n > from {
		emit(chunk, n, data)
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
