package scheduler

import (
	"context"
	"errors"
	"log/slog"

	"github.com/robfig/cron/v3"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// cronLogger adapts slog to cron.Logger (events cron.*).
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron."+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron."+msg, append(kv, "error", err.Error())...)
}

// NewCron builds the cron trigger: one entry per enabled job with a
// registered body, with an explicit Recover and SkipIfStillRunning chain.
// Each entry only calls Trigger; cron's own clock decides nothing but when
// to fire. The caller starts and stops it (see Serve).
func (r *Runner) NewCron(ctx context.Context) (*cron.Cron, error) {
	cl := cronLogger{r.log}
	c := cron.New(
		cron.WithParser(cronParser),
		cron.WithLogger(cl),
		cron.WithChain(cron.Recover(cl), cron.SkipIfStillRunning(cl)),
	)
	for _, name := range r.cfg.Names() {
		jc := r.cfg.Jobs[name]
		if !jc.Enabled {
			continue
		}
		if _, ok := r.reg.Lookup(name); !ok {
			r.log.Info("job.unwired", "job", name, "schedule", jc.Schedule)
			continue
		}
		if _, err := c.AddFunc(jc.Schedule, func() { r.Trigger(ctx, name) }); err != nil {
			return nil, &ConfigError{Source: ConfigFileName, Job: name, Field: "schedule", Problem: err.Error()}
		}
	}
	return c, nil
}

// Trigger is what a cron entry runs: Run for the current business date
// and slot (trigger "cron"). Losing the race to another instance (lease
// held, already completed) is normal and logged at info by Run.
func (r *Runner) Trigger(ctx context.Context, job string) {
	_, err := r.Run(ctx, Request{Job: job, Trigger: "cron"})
	if err != nil && !errors.Is(err, ledger.ErrLeaseHeld) && !errors.Is(err, ledger.ErrAlreadyCompleted) {
		r.log.Error("job.trigger_failed", "job", job, "error", err.Error())
	}
}

// Serve catches up missed daily runs, then runs the cron trigger until ctx
// ends, and waits for running jobs to finish. A catch-up failure is
// logged and does not stop the schedule.
func (r *Runner) Serve(ctx context.Context) error {
	if _, err := r.CatchUp(ctx); err != nil {
		r.log.Error("job.catchup_failed", "error", err.Error())
	}
	c, err := r.NewCron(ctx)
	if err != nil {
		return err
	}
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
	return nil
}
