package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/jobs/ledger"
)

// 2026-12-01 23:30 JST, when eod fires by default.
var eodTime = time.Date(2026, 12, 1, 23, 30, 0, 0, clock.JST)

// probe is a 4-step test job body. Steps 1 and 3 are TxSteps writing an
// Effects row (in the ledger's database); steps 2 and 4 are plain steps
// counting their completions. fail[step] makes that step fail (error or
// panic) the given number of times.
type probe struct {
	mu       sync.Mutex
	calls    map[string]int // body invocations per "step@date"
	done     map[string]int // successful plain-step bodies per "step@date"
	order    []string       // "job@date" when step 1 ran
	fail     map[string]int
	panicky  bool
	blockCh  chan struct{} // when set, step 2 waits on it
	enteredC chan struct{}
}

func newProbe() *probe {
	return &probe{calls: map[string]int{}, done: map[string]int{}, fail: map[string]int{}}
}

const effectsDDL = `CREATE TABLE IF NOT EXISTS Effects (job TEXT, business_date TEXT, step TEXT)`

func (p *probe) enter(step string, sc StepContext) error {
	p.mu.Lock()
	p.calls[step+"@"+sc.BusinessDate]++
	if step == "s1" {
		p.order = append(p.order, sc.Job+"@"+sc.BusinessDate)
	}
	failNow := p.fail[step] > 0
	if failNow {
		p.fail[step]--
	}
	panicky := p.panicky
	p.mu.Unlock()
	if failNow {
		if panicky {
			panic("crash in " + step)
		}
		return fmt.Errorf("crash in %s", step)
	}
	return nil
}

func (p *probe) job(name string) Job {
	tx := func(step string) TxStepFunc {
		return func(ctx context.Context, tx *store.Tx, sc StepContext) (string, error) {
			if _, err := tx.ExecContext(ctx, `INSERT INTO Effects VALUES (?, ?, ?)`, sc.Job, sc.BusinessDate, step); err != nil {
				return "", err
			}
			// the effect is written before the crash: the rollback must undo it
			if err := p.enter(step, sc); err != nil {
				return "", err
			}
			return step + " wrote 1 row", nil
		}
	}
	plain := func(step string) StepFunc {
		return func(ctx context.Context, sc StepContext) (string, error) {
			if err := p.enter(step, sc); err != nil {
				return "", err
			}
			if step == "s2" && p.blockCh != nil {
				p.enteredC <- struct{}{}
				<-p.blockCh
			}
			p.mu.Lock()
			p.done[step+"@"+sc.BusinessDate]++
			p.mu.Unlock()
			return step + " ok", nil
		}
	}
	return Job{Name: name, Steps: []Step{
		{Name: "s1", RunTx: tx("s1")}, {Name: "s2", Run: plain("s2")}, {Name: "s3", RunTx: tx("s3")}, {Name: "s4", Run: plain("s4")},
	}}
}

type env struct {
	path string
	clk  *clock.Manual
	led  *ledger.Ledger
	reg  *Registry
	cfg  Config
	logs *bytes.Buffer
	r    *Runner
}

func newEnv(t *testing.T, jobs ...Job) *env { return newEnvB(t, jobs...) }

func newEnvB(t testing.TB, jobs ...Job) *env {
	t.Helper()
	return newEnvAt(t, filepath.Join(t.TempDir(), ledger.FileName), jobs...)
}

// newEnvAt is newEnv with the ledger at path (a SQLite file or a
// PostgreSQL location of storetest).
func newEnvAt(t testing.TB, path string, jobs ...Job) *env {
	t.Helper()
	e := &env{path: path, clk: clock.NewManual(eodTime), cfg: DefaultConfig(), logs: &bytes.Buffer{}}
	e.led = e.openLedger(t)
	e.reg = NewRegistry()
	for _, j := range jobs {
		if err := e.reg.Register(j); err != nil {
			t.Fatal(err)
		}
	}
	e.r = e.runner(t, e.led, "runner-a", e.logs)
	return e
}

func (e *env) openLedger(t testing.TB) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), e.path, e.clk)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.DB().Write(context.Background(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(context.Background(), effectsDDL)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func (e *env) runner(t testing.TB, l *ledger.Ledger, holder string, logs *bytes.Buffer) *Runner {
	t.Helper()
	var lg *slog.Logger
	if logs != nil {
		lg = slog.New(slog.NewJSONHandler(&syncWriter{w: logs}, nil))
	}
	r, err := NewRunner(Options{Ledger: l, Registry: e.reg, Config: e.cfg, Clock: e.clk, Logger: lg, Holder: holder})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// effects counts Effects rows per "step@date".
func (e *env) effects(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := e.led.DB().Read(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(context.Background(), `SELECT step, business_date, COUNT(*) FROM Effects GROUP BY step, business_date`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s, d string
			var n int
			if err := rows.Scan(&s, &d, &n); err != nil {
				return err
			}
			out[s+"@"+d] = n
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// logEvents parses the JSON log lines.
func logEvents(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func keys(m map[string]int) string {
	var ks []string
	for k, v := range m {
		ks = append(ks, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(ks)
	return strings.Join(ks, " ")
}
