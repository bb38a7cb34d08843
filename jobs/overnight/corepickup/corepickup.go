// Package corepickup is the simulated core's side of the overnight file
// exchange: in the core's batch window it picks up the posting files
// delivered to its inbound folder, runs each through coresim's
// RunBatchFile (which validates the whole file, posts it in one
// transaction under the core's batch control and writes the result file by
// temporary name and rename), and then moves the posting file to
// inbound/processed/. A crash anywhere repeats at most the run of a file,
// which the core's batch control answers from its stored result without
// posting again.
//
// It exists for tests and the simulator only; it must not be imported by
// production packages (jobs/overnight does not).
package corepickup

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"github.com/zcgw/zcgw/jobs/overnight"
)

// Processed is the folder (under the inbound folder) files are moved to.
const Processed = "processed"

// PickUp processes every delivered posting file in inbound (names
// ZCGW-POST-*.dat; dot-files are being written and are ignored) if the
// core is in its batch window now, writing results to results. It returns
// how many files it ran.
func PickUp(ctx context.Context, core *coresim.Core, clk clock.Clock, inbound, results string, crash func(point string) error) (int, error) {
	if clk == nil {
		clk = clock.System{}
	}
	if !core.InBatchWindow(clk.Now()) {
		return 0, nil
	}
	ents, err := os.ReadDir(inbound)
	if err != nil {
		return 0, fmt.Errorf("corepickup: %w", err)
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && !strings.HasPrefix(n, ".") && strings.HasPrefix(n, "ZCGW-POST-") && strings.HasSuffix(n, ".dat") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if err := os.MkdirAll(filepath.Join(inbound, Processed), 0o755); err != nil {
		return 0, fmt.Errorf("corepickup: %w", err)
	}
	ran := 0
	for _, n := range names {
		if _, err := core.RunBatchFile(ctx, filepath.Join(inbound, n), filepath.Join(results, overnight.ResultName(n))); err != nil {
			return ran, fmt.Errorf("corepickup: %s: %w", n, err)
		}
		if crash != nil {
			if err := crash("core:ran"); err != nil {
				return ran, err
			}
		}
		if err := os.Rename(filepath.Join(inbound, n), filepath.Join(inbound, Processed, n)); err != nil {
			return ran, fmt.Errorf("corepickup: %w", err)
		}
		ran++
	}
	return ran, nil
}

// RunConfig is what Run needs: the core, its folders and how often it
// looks.
type RunConfig struct {
	Core             *coresim.Core
	Clock            clock.Clock // the business clock the batch window is read on (default system)
	Inbound, Results string
	// Every is how often the core looks into its inbound folder (default
	// 1s): a file arrives at most a few times a business day, and a look
	// is one directory read (nothing at all outside the batch window).
	Every  time.Duration
	Logger *slog.Logger
}

// Run is the simulated core's own batch processing, as a real core runs
// it on its side: every cfg.Every it picks up (PickUp) the posting files
// delivered to its inbound folder, inside its batch window, and writes
// their result files. A failed pickup is logged (corepickup.failed) and
// tried again at the next look, which PickUp makes safe. It returns ctx's
// error.
func Run(ctx context.Context, cfg RunConfig) error {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	log := zclog.OrDiscard(cfg.Logger)
	for clock.Sleep(ctx, cfg.Every) {
		if _, err := PickUp(ctx, cfg.Core, cfg.Clock, cfg.Inbound, cfg.Results, nil); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "corepickup.failed", "bank_id", cfg.Core.Bank(), "error", err.Error())
		}
	}
	return ctx.Err()
}
