package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// StepContext is what a step body gets about its run.
type StepContext struct {
	Job          string
	BusinessDate string // JST YYYY-MM-DD
	RunKey       string
	RunID        int64
	Attempt      int // 1 on the first attempt of the run, +1 per restart
	Lease        ledger.Lease
	Ledger       *ledger.Ledger
	Clock        clock.Clock
	Logger       *slog.Logger
}

// Fence fails with ledger.ErrFenced unless this run still holds the job's
// lease. A step writing to the ledger's database outside TxStep calls it
// first in its own transaction.
func (sc StepContext) Fence(ctx context.Context, tx *store.Tx) error {
	return ledger.CheckFence(ctx, tx, sc.Lease)
}

// StepFunc is a step whose effects live outside the ledger's database (a
// file, a message, another SQLite file). It MUST be idempotent: a crash
// after its effects and before its completion row is recorded runs it
// again on restart. It returns a one-line summary of what it did.
type StepFunc func(ctx context.Context, sc StepContext) (summary string, err error)

// TxStepFunc is a step whose effects are rows in the ledger's database
// (the coordinator's zc.db). The Runner calls it inside one store.Write
// transaction that first checks the fencing token and then records the
// step's completion, so its effects and its completion commit together:
// exactly once, however often the run is restarted.
type TxStepFunc func(ctx context.Context, tx *store.Tx, sc StepContext) (summary string, err error)

// Step is one named step of a job: exactly one of Run or RunTx.
type Step struct {
	Name  string
	Run   StepFunc
	RunTx TxStepFunc
}

// Job is a job body: its name (as configured) and its ordered steps.
type Job struct {
	Name  string
	Steps []Step
	// Result, when set, is the outcome of a recorded run as the HTTP
	// trigger answers it: its JSON object's fields are merged at the top
	// level of the RunView (e.g. finality-audit's chains_checked, spec 004).
	Result func(ctx context.Context, run ledger.Run) (any, error)
}

// Registry holds the job bodies by name.
type Registry struct {
	jobs map[string]Job
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{jobs: map[string]Job{}} }

// Register adds a job body. A job needs a name, at least one step, unique
// step names, and exactly one of Run/RunTx per step.
func (r *Registry) Register(j Job) error {
	if j.Name == "" {
		return errors.New("scheduler: register: job without a name")
	}
	if _, dup := r.jobs[j.Name]; dup {
		return fmt.Errorf("scheduler: register: job %s registered twice", j.Name)
	}
	if len(j.Steps) == 0 {
		return fmt.Errorf("scheduler: register: job %s has no steps", j.Name)
	}
	seen := map[string]bool{}
	for i, s := range j.Steps {
		if s.Name == "" || seen[s.Name] {
			return fmt.Errorf("scheduler: register: job %s step %d: empty or duplicate name %q", j.Name, i+1, s.Name)
		}
		seen[s.Name] = true
		if (s.Run == nil) == (s.RunTx == nil) {
			return fmt.Errorf("scheduler: register: job %s step %s: set exactly one of Run and RunTx", j.Name, s.Name)
		}
	}
	r.jobs[j.Name] = j
	return nil
}

// Lookup returns the body registered under name.
func (r *Registry) Lookup(name string) (Job, bool) {
	j, ok := r.jobs[name]
	return j, ok
}

// Names lists the registered job names in order.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.jobs))
	for n := range r.jobs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
