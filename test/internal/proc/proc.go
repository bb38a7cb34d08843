// Package proc runs the real zcgw binary as child processes for the
// cross-process suites (test/chaos, test/brokers, test/multinode): it
// builds ./cmd/zcgw once per test binary, starts a process with its
// stderr in a log file, watches its stdout for the line that says it is
// ready, and signals, stops and reads it. It is the one copy of that
// harness; the suites keep only what is theirs (schedules, audits).
package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Main is a suite's TestMain body: it builds ./cmd/zcgw into a temporary
// folder, stores the binary's path in *bin, runs the tests and removes
// the folder. suite names the suite in error messages.
func Main(m *testing.M, suite string, bin *string) int {
	dir, err := os.MkdirTemp("", "zcgw-"+suite+"-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, suite+": temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "zcgw")
	_, here, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", *bin, "./cmd/zcgw")
	build.Dir = filepath.Join(filepath.Dir(here), "..", "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: go build ./cmd/zcgw: %v\n%s", suite, err, out)
		return 1
	}
	return m.Run()
}

// Config is one process to start.
type Config struct {
	Bin  string   // the binary (Main's)
	Args []string // its arguments
	// Log is the file its stderr is appended to (the node's JSON log).
	Log string
	// Ready is the start of the stdout line that says the process is
	// ready ("zcgw serving on "); "" means ready at once.
	Ready string
	// Env is added to the inherited environment, after Drop removed the
	// variables it names (e.g. ZCGW_FAILPOINTS, so a suite's own
	// settings never leak into its children).
	Env  []string
	Drop []string
}

// Proc is one started process.
type Proc struct {
	Cmd     *exec.Cmd
	Log     string
	Started time.Time
	ReadyAt time.Time        // when the Ready line came (zero: not yet)
	State   *os.ProcessState // once exited
	ready   chan struct{}
	exited  chan struct{}
}

// Start starts the process and returns at once; Ready and Exited say
// what became of it.
func Start(c Config) (*Proc, error) {
	p := &Proc{Log: c.Log, ready: make(chan struct{}), exited: make(chan struct{})}
	errf, err := os.OpenFile(c.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	p.Cmd = exec.Command(c.Bin, c.Args...)
	env := make([]string, 0, len(os.Environ())+len(c.Env))
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		drop := false
		for _, d := range c.Drop {
			drop = drop || name == d
		}
		if !drop {
			env = append(env, e)
		}
	}
	p.Cmd.Env = append(env, c.Env...)
	p.Cmd.Stderr = errf
	out, err := p.Cmd.StdoutPipe()
	if err != nil {
		errf.Close()
		return nil, err
	}
	p.Started = time.Now()
	if err := p.Cmd.Start(); err != nil {
		errf.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(c.Bin), err)
	}
	if c.Ready == "" {
		p.ReadyAt = p.Started
		close(p.ready)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if c.Ready != "" && p.ReadyAt.IsZero() && strings.HasPrefix(sc.Text(), c.Ready) {
				p.ReadyAt = time.Now()
				close(p.ready)
			}
		}
		io.Copy(io.Discard, out)
		err := p.Cmd.Wait()
		var ee *exec.ExitError
		if err == nil || errors.As(err, &ee) {
			p.State = p.Cmd.ProcessState
		}
		errf.Close()
		close(p.exited)
	}()
	return p, nil
}

// StartReady starts the process and waits until it is ready: a process
// that exits first, or is not ready within limit (then killed), fails t
// with its log's tail. The process is killed when t ends.
func StartReady(t testing.TB, c Config, limit time.Duration) *Proc {
	t.Helper()
	p, err := Start(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := p.WaitReady(limit); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(c.Log), err, p.Tail(30))
	}
	return p
}

// WaitReady waits until the process is ready; it fails when the process
// exits first or limit passes (then it is killed).
func (p *Proc) WaitReady(limit time.Duration) error {
	select {
	case <-p.ready:
		return nil
	case <-p.exited:
		return fmt.Errorf("exited before it was ready (%s)", p.State)
	case <-time.After(limit):
		p.Kill()
		return fmt.Errorf("not ready %s after exec (killed)", limit)
	}
}

// Ready is closed when the process printed its ready line.
func (p *Proc) Ready() <-chan struct{} { return p.ready }

// Exited is closed when the process is gone.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// IsReady reports whether the ready line came.
func (p *Proc) IsReady() bool {
	select {
	case <-p.ready:
		return true
	default:
		return false
	}
}

// Alive reports whether the process still runs.
func (p *Proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Signal sends s and waits until the process is gone.
func (p *Proc) Signal(s syscall.Signal) {
	_ = p.Cmd.Process.Signal(s)
	<-p.exited
}

// Kill sends SIGKILL and waits until the process is gone.
func (p *Proc) Kill() { p.Signal(syscall.SIGKILL) }

// Stop sends SIGTERM and waits at most limit for the exit (then kills
// it); it returns the exit code.
func (p *Proc) Stop(limit time.Duration) (exitCode int, err error) {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(limit):
		p.Kill()
		return -1, fmt.Errorf("did not exit %s after SIGTERM (killed)", limit)
	}
	if p.State == nil {
		return -1, errors.New("no exit status")
	}
	return p.State.ExitCode(), nil
}

// Tail is the last n lines of the log that are not INFO or DEBUG lines.
func (p *Proc) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" && !strings.Contains(l, `"level":"INFO"`) && !strings.Contains(l, `"level":"DEBUG"`) {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, "\n")
}
