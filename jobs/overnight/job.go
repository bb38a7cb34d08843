package overnight

import (
	"context"
	"fmt"

	"github.com/zcgw/zcgw/jobs/scheduler"
)

// Job names. They must be added to the scheduler's catalogue
// (jobs/scheduler/config.go) before Register's registry is given to
// scheduler.NewRunner.
const (
	SendJob    = "overnight-send"    // cut and deliver tonight's files, before the cores' batch windows
	ReceiveJob = "overnight-receive" // ingest the result files, after the batch windows
)

// Send cuts the bank's file for businessDate (or continues the unfinished
// one) and delivers it. It returns the file, or ok=false when nothing was
// queued.
func (x *Exchange) Send(ctx context.Context, businessDate string) (File, bool, error) {
	f, ok, err := x.Cut(ctx, businessDate)
	if err != nil || !ok {
		return f, ok, err
	}
	f, err = x.Deliver(ctx, f)
	return f, true, err
}

// Receive ingests the result of the bank's unfinished file, if the core
// has answered, and opens the Cases of BLOCKED postings.
func (x *Exchange) Receive(ctx context.Context) (Ingested, bool, error) {
	var in Ingested
	f, ok, err := x.Unfinished(ctx)
	if err != nil {
		return in, false, err
	}
	if ok {
		if f.State == FileCut {
			// Cut but not recorded as delivered (a crash): deliver it now
			// (not rewritten if the core has it or answered it already).
			if f, err = x.Deliver(ctx, f); err != nil {
				return in, false, err
			}
		}
		if in, ok, err = x.Ingest(ctx, f); err != nil {
			return in, ok, err
		}
	}
	if _, err := x.OpenMissingCases(ctx); err != nil {
		return in, ok, err
	}
	return in, ok, nil
}

// Register registers SendJob and ReceiveJob over the given banks'
// exchanges. Both are idempotent Run steps: the exchange records its own
// progress (see the package documentation).
func Register(reg *scheduler.Registry, banks []*Exchange) error {
	send := func(ctx context.Context, sc scheduler.StepContext) (string, error) {
		files, records := 0, 0
		for _, x := range banks {
			f, ok, err := x.Send(ctx, sc.BusinessDate)
			if err != nil {
				return "", fmt.Errorf("bank %s: %w", x.cfg.Bank, err)
			}
			if ok {
				files++
				records += f.Records
			}
		}
		return fmt.Sprintf("delivered %d files, %d postings", files, records), nil
	}
	receive := func(ctx context.Context, sc scheduler.StepContext) (string, error) {
		answered, waiting, posted, rejected := 0, 0, 0, 0
		for _, x := range banks {
			_, pending, err := x.Unfinished(ctx)
			if err != nil {
				return "", err
			}
			in, ok, err := x.Receive(ctx)
			if err != nil {
				return "", fmt.Errorf("bank %s: %w", x.cfg.Bank, err)
			}
			switch {
			case ok:
				answered++
				posted += in.Posted
				rejected += in.Rejected
			case pending:
				waiting++
			}
		}
		if waiting > 0 {
			return "", fmt.Errorf("%d banks have not answered their overnight file yet (%d answered)", waiting, answered)
		}
		return fmt.Sprintf("ingested %d result files: %d posted, %d blocked", answered, posted, rejected), nil
	}
	if err := reg.Register(scheduler.Job{Name: SendJob, Steps: []scheduler.Step{{Name: "cut-and-deliver", Run: send}}}); err != nil {
		return err
	}
	return reg.Register(scheduler.Job{Name: ReceiveJob, Steps: []scheduler.Step{{Name: "ingest-results", Run: receive}}})
}
