package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"github.com/zcgw/zcgw/gateway/filedrop"
	"github.com/zcgw/zcgw/gateway/node"
	"github.com/zcgw/zcgw/jobs/dns"
	"github.com/zcgw/zcgw/jobs/eod"
	"github.com/zcgw/zcgw/jobs/scheduler"
	"github.com/zcgw/zcgw/outbox/events"
)

// DefaultStart is 09:00 JST on the demo's business date.
var DefaultStart = time.Date(2026, 12, 2, 9, 0, 0, 0, clock.JST)

// RunDir is the folder under Options.DataDir that holds one run's state.
const RunDir = "demo"

// markerFile marks a folder as the demo's own, so a rerun may remove it.
const markerFile = ".zcgw-demo"

// Options configure a demo run.
type Options struct {
	// DataDir is the data folder (./var by default in the CLI); the run's
	// state goes to DataDir/demo, removed and recreated on every run.
	DataDir string
	// Out receives the human-readable account of the day (nil: discard).
	Out io.Writer
	// Clock is the day's manual clock, driven through the JST business day
	// (09:00, 12:00, 13:00, 16:00, 23:30 …) for the scheduler and its jobs
	// and the file drop; its JST date is the business date, and it is moved
	// to 09:00 when it starts earlier (nil: clock.NewManual(DefaultStart)).
	// The node runs on its own clock that starts at the same instant and
	// runs at real speed (see nodeClock).
	Clock *clock.Manual
	// Logger receives the JSON event log of every component (nil: a JSON
	// log in DataDir/demo/zcgw.log).
	Logger *slog.Logger
	// MQ is the node's queue manager (nil: the embedded queue file). On a
	// broker the day's core queues are this run's own (DEMO<id>.<bank>.…,
	// unless MQ.Queues names them) and are deleted when the day ends.
	MQ *node.MQConfig
}

// Run plays one simulated business day and checks its invariants. The
// returned Summary is filled as far as the day got; the error is an
// *InvariantError when an invariant failed, or the error that stopped the
// day.
func Run(ctx context.Context, opts Options) (Summary, error) {
	started := time.Now()
	if opts.DataDir == "" {
		return Summary{}, errors.New("demo: Options.DataDir is required")
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Clock == nil {
		opts.Clock = clock.NewManual(DefaultStart)
	}
	dir := filepath.Join(opts.DataDir, RunDir)
	if err := freshRunDir(dir); err != nil {
		return Summary{}, err
	}
	if opts.Logger == nil {
		f, err := os.OpenFile(filepath.Join(dir, "zcgw.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return Summary{}, fmt.Errorf("demo: %w", err)
		}
		defer f.Close()
		opts.Logger = zclog.New(f, zclog.Options{})
	}
	d := &day{ctx: ctx, out: opts.Out, clk: opts.Clock, dir: dir, log: opts.Logger, oob: map[string]int64{}, mq: runQueues(opts.MQ)}
	d.sum.DataDir, _ = filepath.Abs(dir)
	d.sum.BusinessDate = clock.BusinessDate(d.clk.Now())
	d.at("09:00")
	d.nodeClk = newNodeClock(d.clk.Now())
	over := "on the embedded defaults"
	if d.mq != nil {
		over = "over " + d.mq.Kind + " (core queues " + d.mq.Queues.Prefix + "…)"
	}
	d.printf("zcgw demo: one simulated business day (%s JST) of three banks %s\n", d.sum.BusinessDate, over)
	err := d.play()
	if cerr := d.close(); err == nil && cerr != nil {
		err = fmt.Errorf("demo: shutting the node down: %w", cerr)
	}
	if cerr := d.deleteRunQueues(); err == nil && cerr != nil {
		err = fmt.Errorf("demo: deleting the run's queues: %w", cerr)
	}
	d.sum.Elapsed = time.Since(started)
	d.summary(err)
	return d.sum, err
}

// freshRunDir removes a previous run's folder (only when it carries the
// marker) and creates an empty one with the marker.
func freshRunDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		if _, err := os.Stat(filepath.Join(dir, markerFile)); err != nil {
			return fmt.Errorf("demo: %s exists and is not a demo folder (no %s); move it away or pick another --data", dir, markerFile)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("demo: removing the previous run: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, markerFile), []byte("state of `zcgw demo`; removed by the next run\n"), 0o644)
}

// day is one run of the demo.
type day struct {
	ctx     context.Context
	out     io.Writer
	clk     *clock.Manual // the scheduler's day
	nodeClk clock.Clock   // the node's real-speed clock
	dir     string
	log     *slog.Logger
	mq      *node.MQConfig // nil: the embedded queue file
	n       *node.Node
	api     *apiClient
	flog    *finality.Log
	sum     Summary

	dns    *dns.Service
	eod    *eod.EOD
	runner *scheduler.Runner

	files *filedrop.Processor

	transfers     []*Transfer
	fileTransfers []*Transfer
	oob           map[string]int64 // account key -> out-of-band change
	opening       map[string]int64 // "bank/venue" -> settlement position at the opening
	closers       []func() error
}

func (d *day) close() error {
	var err error
	for i := len(d.closers) - 1; i >= 0; i-- {
		err = errors.Join(err, d.closers[i]())
	}
	d.closers = nil
	return err
}

// now is the simulated JST time of day.
func (d *day) now() string { return d.clk.Now().In(clock.JST).Format("15:04") }

func (d *day) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

// section prints a heading with the simulated JST time.
func (d *day) section(title string) { d.printf("\n== %s JST  %s\n", d.now(), title) }

// at moves the day's clock forward to hh:mm JST of the business date
// (never backwards: a clock given in Options may start later).
func (d *day) at(hhmm string) {
	t, err := time.ParseInLocation("2006-01-02 15:04", d.sum.BusinessDate+" "+hhmm, clock.JST)
	if err != nil {
		panic("demo: bad time " + hhmm)
	}
	if t.After(d.clk.Now()) {
		d.clk.Set(t)
	}
}

// pause waits for real time dt (the node's clock moves meanwhile).
func (d *day) pause(dt time.Duration) error {
	select {
	case <-d.ctx.Done():
		return d.ctx.Err()
	case <-time.After(dt):
		return nil
	}
}

// nodeClock is the node's clock: it starts at the day's first instant and
// runs at real speed. The node cannot share the manual clock while that
// clock jumps hours ahead: the embedded MQ stamps its connection
// heartbeats with the node's clock but sends them on a real-time ticker,
// so a jump longer than the lease TTL makes every connection look dead to
// the others (they reap each other and the cores become unreachable).
type nodeClock struct {
	origin  time.Time
	started time.Time
}

func newNodeClock(origin time.Time) *nodeClock {
	return &nodeClock{origin: origin, started: time.Now()}
}

// Now is the origin plus the real time elapsed since the clock was made.
func (c *nodeClock) Now() time.Time { return c.origin.Add(time.Since(c.started)) }

// play is the day's script.
func (d *day) play() error {
	steps := []struct {
		name string
		fn   func() error
	}{
		{"start the node", d.start},
		{"morning transfers over HTTP", d.morning},
		{"GTID multi-leg", d.gtidScene},
		{"request to pay", d.rtpScene},
		{"HTLC", d.htlc},
		{"core offline", d.offline},
		{"lost reply", d.lostReply},
		{"DNS intraday cutoff", d.intradayCutoff},
		{"out-of-band change", d.outOfBand},
		{"FX conduit", d.fxScene},
		{"file drop", d.fileDrop},
		{"BULK window", d.bulkWindow},
		{"DNS kick and settle", d.dnsClose},
		{"overnight file", d.night},
		{"end of day", d.endOfDay},
		{"quiesce", func() error { return d.quiesce(20 * time.Second) }},
		{"balances", d.checkBalances},
		{"H", d.checkH},
		{"DNS netting", d.checkDNS},
		{"chains", d.checkChains},
		{"events", d.checkEvents},
	}
	for _, s := range steps {
		if err := s.fn(); err != nil {
			var inv *InvariantError
			if errors.As(err, &inv) {
				return err
			}
			return fmt.Errorf("demo: %s: %w", s.name, err)
		}
	}
	return nil
}

// start opens a node on the embedded defaults under the run folder, on a
// free loopback port, with every FinalityLog append also writing its event
// outbox row.
func (d *day) start() error {
	d.section("opening: the node starts")
	// The node appends to its own FinalityLog (with the event outbox hook
	// installed by the node); the day's jobs append to one on the day's
	// clock, with the same hook: every entry writes its event outbox row
	// in the entry's own transaction.
	cfg := nodeConfig()
	cfg.MQ = d.mq
	n, err := node.Start(d.ctx, node.Options{DataDir: d.dir, Config: &cfg, Addr: "127.0.0.1:0", Clock: d.nodeClk, Logger: d.log})
	if err != nil {
		return err
	}
	d.n = n
	d.flog = finality.New(d.clk)
	events.Install(d.flog, events.Producer{}, n.EventSigner)
	d.closers = append(d.closers, n.Close)
	d.api = newAPIClient(n)
	d.printf("gateway listening on %s (data %s)\n", n.URL, d.sum.DataDir)
	for _, b := range banks {
		mode := "real-time"
		if !b.RealTime {
			mode = "batch window (name checks deferred, sends Zengin files)"
		}
		d.printf("  bank %s %-32s %s\n", b.ID, b.Name, mode)
		for _, a := range accounts {
			if a.Bank == b.ID {
				d.printf("      %-14s core %s  %-12s opening %s\n", a.Key, a.Core(), a.Name, money(a.Currency, a.Opening))
			}
		}
	}
	if err := d.snapshotPositions(); err != nil {
		return err
	}
	return d.openScheduler()
}

func yen(v int64) string {
	neg := v < 0
	if neg {
		v = -v
	}
	s := fmt.Sprintf("%d", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return "¥" + s
}

// runQueues gives a broker run core queues of its own, so runs sharing a
// broker never meet (nil stays nil: the embedded file is the run's own).
func runQueues(m *node.MQConfig) *node.MQConfig {
	if m == nil || m.Kind == node.MQEmbedded {
		return nil
	}
	c := *m
	if c.Queues == nil {
		c.Queues = &node.MQQueues{Prefix: "DEMO" + randomSecret()[:8] + ".{bank}."}
	}
	return &c
}

// deleteRunQueues deletes the core queues of a broker run.
func (d *day) deleteRunQueues() error {
	if d.mq == nil || d.mq.Queues == nil || !strings.HasPrefix(d.mq.Queues.Prefix, "DEMO") {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.ctx), 30*time.Second)
	defer cancel()
	ids := make([]string, 0, len(banks))
	for _, b := range banks {
		ids = append(ids, b.ID)
	}
	return node.DeleteCoreQueues(ctx, d.mq, ids, d.log)
}
