package chaos_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/zcgw/zcgw/coordinator/failpoint"
)

// proc is one life of `zcgw serve` on the run's data folder.
type proc struct {
	n       int // life number, from 1
	cmd     *exec.Cmd
	started time.Time
	ready   chan struct{} // closed when the node printed that it serves
	readyAt time.Time
	exited  chan struct{} // closed when the process is gone
	state   *os.ProcessState
	stderr  string // path of the life's stderr (the node's JSON log)
}

// startNode starts `zcgw serve --data dir --addr addr`, with the given
// failpoints armed ("" none). The process's stdout is watched for the
// serving line; its stderr goes to logs/life-N.log beside the data folder.
func startNode(dir, logDir, addr string, n int, points string, fpSeed uint64) (*proc, error) {
	p := &proc{n: n, ready: make(chan struct{}), exited: make(chan struct{}),
		stderr: filepath.Join(logDir, fmt.Sprintf("life-%03d.log", n))}
	errf, err := os.Create(p.stderr)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(zcgwBin, "serve", "--data", dir, "--addr", addr)
	env := make([]string, 0, len(os.Environ())+2)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, failpoint.EnvPoints+"=") && !strings.HasPrefix(e, failpoint.EnvSeed+"=") &&
			!strings.HasPrefix(e, "ZCGW_DATA=") {
			env = append(env, e)
		}
	}
	if points != "" {
		env = append(env, failpoint.EnvPoints+"="+points, fmt.Sprintf("%s=%d", failpoint.EnvSeed, fpSeed))
	}
	p.cmd.Env = env
	p.cmd.Stderr = errf
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		errf.Close()
		return nil, err
	}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		errf.Close()
		return nil, fmt.Errorf("start zcgw serve: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "zcgw serving on ") {
				p.readyAt = time.Now()
				close(p.ready)
			}
		}
		io.Copy(io.Discard, out)
		err := p.cmd.Wait()
		var ee *exec.ExitError
		if err == nil || errors.As(err, &ee) {
			p.state = p.cmd.ProcessState
		}
		errf.Close()
		close(p.exited)
	}()
	return p, nil
}

// kill sends SIGKILL and waits until the process is gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM and waits at most limit for the exit.
func (p *proc) stop(limit time.Duration) (exitCode int, err error) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(limit):
		p.kill()
		return -1, fmt.Errorf("zcgw serve did not exit %s after SIGTERM (killed)", limit)
	}
	if p.state == nil {
		return -1, errors.New("zcgw serve: no exit status")
	}
	return p.state.ExitCode(), nil
}

func (p *proc) isReady() bool {
	select {
	case <-p.ready:
		return true
	default:
		return false
	}
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

var fpLine = regexp.MustCompile(`failpoint: kill at (\S+) hit (\d+)`)

// firedPoint is the failpoint line the life wrote before it died ("" none).
func (p *proc) firedPoint() string {
	b, _ := os.ReadFile(p.stderr)
	if m := fpLine.FindSubmatch(b); m != nil {
		return string(m[1]) + " hit " + string(m[2])
	}
	return ""
}

// tail is the last lines of the life's stderr that are not info logs.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.stderr)
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
