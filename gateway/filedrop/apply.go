package filedrop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/formats/zengin"
)

// job is one data record to submit.
type job struct {
	record int
	key    string
	req    orchestrator.PaymentInitiated
}

// apply submits every data record after d.AppliedThrough as a BULK
// PaymentInitiated, Chunk records at a time (Workers at once), and
// checkpoints applied_through after each chunk. A record submitted before
// a crash but after the last checkpoint is submitted again under the same
// key and body: the coordinator replays its stored answer, so no record is
// applied twice and none is skipped. A refusal of the coordinator (a limit,
// an inactive participant) is recorded for the result file; an error that
// may pass (a retryable category, read-only mode, I/O) stops the pass and
// the next pass resumes from the checkpoint.
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
		refused, err := p.submit(ctx, b, chunk)
		if err != nil {
			return err
		}
		if err := p.led.checkpoint(ctx, d.ID, through, refused); err != nil {
			return err
		}
		d.AppliedThrough = through
		d.RefusedCount += len(refused)
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

// submit submits a chunk with Workers goroutines. It returns the records
// the coordinator refused, or the first error that stops the pass.
func (p *Processor) submit(ctx context.Context, b Bank, chunk []job) ([]refusal, error) {
	var (
		mu      sync.Mutex
		refused []refusal
		first   error
		wg      sync.WaitGroup
	)
	next := make(chan job)
	for w := 0; w < min(p.cfg.Workers, max(len(chunk), 1)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				_, err := p.cfg.Coordinator.Submit(ctx, j.req, j.key, b.ID)
				if err == nil {
					continue
				}
				mu.Lock()
				if retryLater(err) {
					if first == nil {
						first = fmt.Errorf("filedrop: submit record %d: %w", j.record, err)
					}
				} else {
					de, _ := domainerr.As(err)
					refused = append(refused, refusal{record: j.record, code: de.Code, message: de.Message})
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range chunk {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		next <- j
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return refused, first
}
