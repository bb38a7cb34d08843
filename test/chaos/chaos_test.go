package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment of a run (docs/chaos.md).
const (
	envSeed    = "ZCGW_CHAOS_SEED"    // the run's seed (default: drawn from the clock, printed)
	envKills   = "ZCGW_CHAOS_KILLS"   // SIGKILLs before the last start (default 5)
	envClients = "ZCGW_CHAOS_CLIENTS" // concurrent clients (default 4)
	envSettle  = "ZCGW_CHAOS_SETTLE"  // bound on the wait for quiescence after the last start (default 60s)
	envKeep    = "ZCGW_CHAOS_KEEP"    // 1: keep the data folder and the logs, and print where
)

// points are the failpoints a life may be armed with, and the range of
// the hit that kills (kill#N, N drawn in [1, max]): how often each point
// is reached decides how far into a life it lands.
var points = []struct {
	name string
	max  int
}{
	{"adapter.after-record", 80},      // a command's record committed, its answer not sent
	{"adapter.after-claim", 6},        // name/authority check claimed PROCESSING, core not asked yet
	{"bankclient.after-answer", 80},   // the bank answered, the coordinator has not recorded it
	{"store.before-group-commit", 30}, // Submits of a group applied, not committed
	{"store.after-group-commit", 30},  // a group committed, its callers not answered
	{"outbox.after-claim", 40},        // a posting claimed, not yet sent to its core
}

// life is how one start of the node ends, drawn from the run's seed.
type life struct {
	mode   string        // startup | timer | failpoint | final
	delay  time.Duration // startup: after exec; timer: after ready; failpoint: fallback after ready
	point  string        // failpoint spec armed for this life
	fpSeed uint64
}

func schedule(rng *rand.Rand, kills int) []life {
	var out []life
	for i := 0; i < kills; i++ {
		switch r := rng.IntN(10); {
		case r < 2:
			out = append(out, life{mode: "startup", delay: time.Duration(rng.IntN(900)) * time.Millisecond})
		case r < 5:
			out = append(out, life{mode: "timer", delay: time.Duration(500+rng.IntN(4500)) * time.Millisecond})
		default:
			p := points[rng.IntN(len(points))]
			out = append(out, life{mode: "failpoint", delay: 8 * time.Second,
				point: fmt.Sprintf("%s=kill#%d", p.name, 1+rng.IntN(p.max)), fpSeed: rng.Uint64()})
		}
	}
	return append(out, life{mode: "final"})
}

// lifeReport is what one life measured.
type lifeReport struct {
	life
	n             int
	startedAt     time.Time
	readyAfter    time.Duration // 0: never ready
	endedAfter    time.Duration
	fired         string // the failpoint it died at ("" none)
	stale         claims // what the previous life left claimed when it died
	staleResolved time.Duration
	flightDone    time.Duration
	staleOpen     int // claims of the previous life still held when this life ended
	flightOpen    int
	firstSettled  time.Duration // from start to the first SETTLED after it (filled from the FinalityLog)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runConfig is one run's parameters.
type runConfig struct {
	seed           uint64
	kills, clients int
	settle         time.Duration
	keep           bool
}

// runResult is what the audit reads: the stopped node's files and what
// the clients sent and were answered.
type runResult struct {
	fs      *files
	w       *world
	all     []*sent
	replays []string // replay-byte-identical findings
	seed    uint64
	quiet   bool
	dir     string
}

// TestChaosKillRestart is the suite: load, kills, restarts, quiescence,
// replays, audit. Every failure names its check, the transfer and the seed.
func TestChaosKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos suite: not in -short")
	}
	cfg := runConfig{seed: uint64(time.Now().UnixNano()), kills: envInt(t, envKills, 5), clients: envInt(t, envClients, 4),
		settle: 60 * time.Second, keep: os.Getenv(envKeep) == "1"}
	if v := os.Getenv(envSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", envSeed, v)
		}
		cfg.seed = s
	}
	if v := os.Getenv(envSettle); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration", envSettle, v)
		}
		cfg.settle = d
	}
	repro := fmt.Sprintf("%s=%d %s=%d %s=%d", envSeed, cfg.seed, envKills, cfg.kills, envClients, cfg.clients)
	t.Logf("chaos run: %s (re-run with: %s go test -count=1 -run TestChaosKillRestart ./test/chaos)", repro, repro)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos run FAILED with %s", repro)
		}
	})
	r := runChaos(t, cfg)
	audit(context.Background(), t, r).report(t)
}

// runChaos runs the node through cfg.kills kills and a last life, waits
// for quiescence, checks replays and stops the node with SIGTERM.
func runChaos(t *testing.T, cfg runConfig) *runResult {
	t.Helper()
	seed, kills, clients, settle := cfg.seed, cfg.kills, cfg.clients, cfg.settle
	root := t.TempDir()
	if cfg.keep {
		var err error
		if root, err = os.MkdirTemp("", "zcgw-chaos-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("keeping the data folder and logs under %s", root)
	}
	dir, logDir := filepath.Join(root, "data"), filepath.Join(root, "logs")
	for _, d := range []string{dir, logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w := newWorld()
	if err := w.writeConfig(dir); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	rng := rand.New(rand.NewPCG(seed, 0x636861_6f73))
	plan := schedule(rng, kills)

	ctx := context.Background()
	ld := newLoad(w, "http://"+addr, seed, 5000)
	stopLoad, giveUp := make(chan struct{}), make(chan struct{})
	var stopOnce, giveOnce sync.Once
	endLoad := func() { stopOnce.Do(func() { close(stopLoad) }) }
	endRetries := func() { giveOnce.Do(func() { close(giveUp) }) }
	defer endLoad()
	defer endRetries()
	clientsWG := ld.run(clients, stopLoad, giveUp)

	var fs *files // opened once a life has served (the files exist then)
	t.Cleanup(func() {
		if fs != nil {
			fs.close()
		}
	})
	var reports []*lifeReport
	var stale claims
	var cur *nodeLife
	defer func() {
		if cur != nil && cur.Alive() {
			cur.Kill()
		}
	}()
	runStart := time.Now()
	watchFinal := func() {}
	for i, l := range plan {
		rep := &lifeReport{life: l, n: i + 1, stale: stale}
		reports = append(reports, rep)
		spec := ""
		if l.mode == "failpoint" {
			spec = l.point
		}
		p, err := startNode(dir, logDir, addr, i+1, spec, l.fpSeed)
		if err != nil {
			t.Fatal(err)
		}
		cur, rep.startedAt = p, p.Started
		watch := observe(ctx, fs, rep, p)
		if l.mode == "final" {
			watchFinal = watch
			break
		}
		switch l.mode {
		case "startup":
			select {
			case <-time.After(l.delay):
			case <-p.Exited():
			}
		case "timer", "failpoint":
			select {
			case <-p.Ready():
				select {
				case <-time.After(l.delay):
				case <-p.Exited():
				}
			case <-p.Exited():
			case <-time.After(30 * time.Second):
				t.Errorf("check startup (seed %d): life %d not serving 30 s after exec; stderr:\n%s", seed, p.n, p.Tail(20))
			}
		}
		if p.Alive() {
			p.Kill()
		}
		watch()
		if fs == nil && p.IsReady() {
			// A life that served has created every file: open them now
			// that nobody writes (the first life may die before that).
			if fs, err = openFiles(ctx, dir); err != nil {
				t.Fatal(err)
			}
		}
		if rep.fired = p.firedPoint(); rep.fired == "" && l.mode == "failpoint" {
			rep.fired = "not reached: SIGKILL"
		}
		if p.IsReady() {
			rep.readyAfter = p.ReadyAt.Sub(p.Started)
		}
		rep.endedAfter = time.Since(p.Started)
		if !p.IsReady() && p.State != nil && !strings.Contains(p.State.String(), "killed") {
			t.Errorf("check startup (seed %d): life %d exited by itself (%s) before serving:\n%s", seed, p.n, p.State, p.Tail(20))
		}
		if fs != nil {
			if stale, err = fs.readClaims(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	final := cur
	select {
	case <-final.Ready():
	case <-final.Exited():
		t.Fatalf("check startup (seed %d): the final life exited before serving (%s):\n%s", seed, final.State, final.Tail(30))
	case <-time.After(60 * time.Second):
		t.Fatalf("check startup (seed %d): the final life is not serving 60 s after exec:\n%s", seed, final.Tail(30))
	}
	reports[len(reports)-1].readyAfter = final.ReadyAt.Sub(final.Started)
	if fs == nil {
		var err error
		if fs, err = openFiles(ctx, dir); err != nil {
			t.Fatal(err)
		}
	}
	// The final life runs under load a little, then the clients stop and
	// every transfer still without an answer is sent again (same key, same
	// body) until it has one.
	time.Sleep(3 * time.Second)
	endLoad()
	resend := time.AfterFunc(30*time.Second, endRetries)
	clientsWG.Wait()
	resend.Stop()
	endRetries()
	killedFor := time.Since(runStart)

	// Quiescence: nothing in flight anywhere, or the bound expires.
	settleStart := time.Now()
	var last busy
	for {
		b, err := fs.readBusy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = b
		if b.zero() || time.Since(settleStart) > settle {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	settledAfter := time.Since(settleStart)
	quiet := last.zero()
	if !quiet {
		t.Errorf("check quiescence (seed %d): not quiescent %s after the load stopped: %s", seed, settle, last)
	}

	// Replays, while the node still serves.
	replayed, replays := checkReplays(ld, rng)

	code, err := final.Stop(30 * time.Second)
	watchFinal()
	reports[len(reports)-1].endedAfter = time.Since(final.Started)
	if err != nil || code != 0 {
		t.Errorf("check graceful-stop (seed %d): SIGTERM: exit %d, %v\n%s", seed, code, err, final.Tail(20))
	}
	fillFirstSettled(ctx, t, fs, reports)
	logRecovery(t, reports, seed)
	all := ld.snapshot()
	t.Logf("run: %d lives (%d kills) in %s, %d transfers sent (%d accepted), quiescent after %s (%v), %d replays compared",
		len(reports), len(reports)-1, killedFor.Round(time.Millisecond), len(all), countAccepted(all), settledAfter.Round(time.Millisecond), quiet, replayed)
	return &runResult{fs: fs, w: w, all: all, replays: replays, seed: seed, quiet: quiet, dir: dir}
}

func countAccepted(all []*sent) int {
	n := 0
	for _, s := range all {
		if s.accepted() != nil {
			n++
		}
	}
	return n
}
