package embedded

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

const (
	envHelperFile = "ZCGW_MQ_HELPER_FILE"
	envHelperMode = "ZCGW_MQ_HELPER_MODE"
	helperQueue   = "SHARED"
)

// TestHelperProcess is not a test: it is the body of the child processes
// started by the cross-process tests below.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(envHelperFile)
	if path == "" {
		t.Skip("helper process for the cross-process tests; runs only as their child")
	}
	ctx := context.Background()
	// A crashing child needs a short lease (the parent waits for it to run
	// out); a consuming one a lease that survives a starved scheduler.
	lease := 10 * time.Second
	switch os.Getenv(envHelperMode) {
	case "crash":
		lease = time.Second
	case "claim-crash":
		lease = time.Hour // the parent must not need the lease to run out
	}
	c, err := New(path, Options{PollInterval: 10 * time.Millisecond, LeaseTTL: lease}).Connect(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s, _ := c.Session(ctx)
	switch os.Getenv(envHelperMode) {
	case "consume":
		for {
			gctx, cancel := context.WithTimeout(ctx, time.Second)
			m, err := s.Get(gctx, helperQueue, mq.Any)
			cancel()
			if errors.Is(err, mq.ErrNoMessage) {
				break
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			if err := s.Commit(ctx); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			fmt.Printf("GOT %s\n", m.Body)
		}
		_ = c.Close()
		os.Exit(0)
	case "claim-crash":
		if _, err := c.ClaimConsumer(ctx, helperQueue); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		m, err := s.Get(ctx, helperQueue, mq.Any)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("HELD %s\n", m.Body)
		os.Exit(3)
	case "crash":
		m, err := s.Get(ctx, helperQueue, mq.Any)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("HELD %s\n", m.Body)
		os.Exit(3) // die inside the unit of work
	}
	os.Exit(2)
}

func helper(t *testing.T, path, mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envHelperFile+"="+path, envHelperMode+"="+mode)
	return cmd
}

func fill(t *testing.T, tr *Transport, n int) mq.Connection {
	t.Helper()
	ctx := context.Background()
	c, err := tr.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeclareQueue(ctx, mq.QueueSpec{Name: helperQueue}); err != nil {
		t.Fatal(err)
	}
	s, _ := c.Session(ctx)
	for i := 0; i < n; i++ {
		if err := s.Put(ctx, helperQueue, &mq.Message{Body: []byte(fmt.Sprintf("m%03d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// Two child processes and this one drain one queue file together; every
// message is committed by exactly one of them.
func TestConcurrentProcessesShareQueueFile(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) { concurrentProcessesShareQueueFile(t, b.Location(t, "shared")) })
}

func concurrentProcessesShareQueueFile(t *testing.T, path string) {
	tr := New(path, Options{PollInterval: 10 * time.Millisecond})
	const n = 150
	c := fill(t, tr, n)
	defer c.Close()

	var mu sync.Mutex
	seen := map[string]int{}
	record := func(body string) { mu.Lock(); seen[body]++; mu.Unlock() }
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		cmd := helper(t, path, "consume")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				t.Errorf("child: %v: %s", err, errOut.String())
			}
			sc := bufio.NewScanner(&out)
			for sc.Scan() {
				if body, ok := strings.CutPrefix(sc.Text(), "GOT "); ok {
					record(body)
				}
			}
		}()
	}
	s, _ := c.Session(context.Background())
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m, err := s.Get(ctx, helperQueue, mq.Any)
		cancel()
		if errors.Is(err, mq.ErrNoMessage) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		record(string(m.Body))
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct messages consumed, want %d", len(seen), n)
	}
	for body, k := range seen {
		if k != 1 {
			t.Fatalf("%s consumed %d times", body, k)
		}
	}
}

// A child process dies holding an uncommitted get; once its lease runs out
// this process gets the message back with BackoutCount 1.
func TestCrashedProcessGetIsRestored(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) { crashedProcessGetIsRestored(t, b.Location(t, "crash")) })
}

func crashedProcessGetIsRestored(t *testing.T, path string) {
	tr := New(path, Options{PollInterval: 10 * time.Millisecond, LeaseTTL: time.Second})
	c := fill(t, tr, 1)
	defer c.Close()
	out, err := helper(t, path, "crash").Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "HELD m000") {
		t.Fatalf("child did not die holding the message: %v %q", err, out)
	}
	s, _ := c.Session(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := s.Get(ctx, helperQueue, mq.Any)
	if err != nil {
		t.Fatalf("message not restored after the child's lease expired: %v", err)
	}
	if string(m.Body) != "m000" || m.BackoutCount != 1 {
		t.Fatalf("restored %q with BackoutCount %d, want m000 1", m.Body, m.BackoutCount)
	}
	if err := s.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The queue's claimed consumer dies (a node killed with SIGKILL) holding
// an uncommitted get, with a lease of an hour. Its restart on the same host
// claims the queue at once, because the holder's pid no longer runs (or is
// a zombie its parent has not reaped yet), and gets the message back with
// BackoutCount 1 without waiting for the lease. On PostgreSQL the queues
// are a schema several nodes share, and the same holds across processes.
func TestDeadConsumerProcessIsTakenOverAtOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) { deadConsumerProcessIsTakenOverAtOnce(t, b) })
}

func deadConsumerProcessIsTakenOverAtOnce(t *testing.T, b storetest.Backend) {
	for _, reaped := range []bool{true, false} {
		t.Run(fmt.Sprintf("reaped=%v", reaped), func(t *testing.T) {
			path := b.Location(t, "claim")
			tr := New(path, Options{PollInterval: 10 * time.Millisecond})
			c := fill(t, tr, 1)
			defer c.Close()
			cmd := helper(t, path, "claim-crash")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			if !strings.Contains(line, "HELD m000") {
				t.Fatalf("child did not take the message: %q", line)
			}
			if reaped {
				var ee *exec.ExitError
				if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
					t.Fatalf("child: %v", err)
				}
			} else {
				defer cmd.Wait()
				deadline := time.Now().Add(10 * time.Second)
				for state, _ := procStat(cmd.Process.Pid); state != "Z"; state, _ = procStat(cmd.Process.Pid) {
					if time.Now().After(deadline) {
						t.Fatalf("child never became a zombie (state %q)", state)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := c.ClaimConsumer(ctx, helperQueue); err != nil {
				t.Fatalf("claim after the holder process died: %v", err)
			}
			s, _ := c.Session(ctx)
			m, err := s.Get(ctx, helperQueue, mq.Any)
			if err != nil || string(m.Body) != "m000" || m.BackoutCount != 1 {
				t.Fatalf("get after take-over: %v %v, want m000 with BackoutCount 1", m, err)
			}
		})
	}
}
