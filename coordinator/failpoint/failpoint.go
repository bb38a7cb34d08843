package failpoint

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvPoints and EnvSeed are the environment variables that arm points.
const (
	EnvPoints = "ZCGW_FAILPOINTS"
	EnvSeed   = "ZCGW_FAILPOINT_SEED"
)

// Action is what an armed point does when it fires.
type Action struct {
	Prob  float64 // kill@P: probability per hit (0 when At is set)
	At    int64   // kill#N: the hit that fires (0 when Prob is set)
	hits  int64
	fired bool
}

// Set is a parsed ZCGW_FAILPOINTS: point name → action.
type Set map[string]*Action

// armed is nil unless the environment armed at least one point; Hit's
// fast path is this nil check.
var (
	armed   Set
	armErr  error
	mu      sync.Mutex
	rng     *rand.Rand
	killing = func(name string, hit int64) {
		fmt.Fprintf(os.Stderr, "failpoint: kill at %s hit %d\n", name, hit)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		for { // SIGKILL cannot be caught; never return into the caller
			time.Sleep(time.Second)
		}
	}
)

func init() { arm(os.Getenv(EnvPoints), os.Getenv(EnvSeed)) }

// arm parses the environment's spec and seed into the package state.
func arm(spec, seedText string) {
	armed, armErr, rng = nil, nil, nil
	if spec == "" {
		return
	}
	var seed uint64
	if seedText != "" {
		v, err := strconv.ParseUint(seedText, 10, 64)
		if err != nil {
			armed, armErr = Set{}, fmt.Errorf("failpoint: %s=%q: not an unsigned integer", EnvSeed, seedText)
			return
		}
		seed = v
	}
	armed, armErr = Parse(spec)
	if armed == nil {
		armed = Set{} // armed with an error: Hit reports it
	}
	rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Parse reads "name=kill@P;name=kill#N;…" (';' or ',' between entries).
// Each error names the entry and what is wrong with it.
func Parse(spec string) (Set, error) {
	s := Set{}
	for i, entry := range strings.FieldsFunc(spec, func(r rune) bool { return r == ';' || r == ',' }) {
		entry = strings.TrimSpace(entry)
		name, act, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("failpoint: %s entry %d %q: want name=kill@P or name=kill#N", EnvPoints, i+1, entry)
		}
		if _, dup := s[name]; dup {
			return nil, fmt.Errorf("failpoint: %s entry %d %q: point %s armed twice", EnvPoints, i+1, entry, name)
		}
		act = strings.TrimSpace(act)
		switch {
		case strings.HasPrefix(act, "kill@"):
			p, err := strconv.ParseFloat(strings.TrimPrefix(act, "kill@"), 64)
			if err != nil || !(p > 0 && p <= 1) { // NaN fails both
				return nil, fmt.Errorf("failpoint: %s entry %d %q: probability must be in (0, 1]", EnvPoints, i+1, entry)
			}
			s[name] = &Action{Prob: p}
		case strings.HasPrefix(act, "kill#"):
			n, err := strconv.ParseInt(strings.TrimPrefix(act, "kill#"), 10, 64)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("failpoint: %s entry %d %q: hit number must be a positive integer", EnvPoints, i+1, entry)
			}
			s[name] = &Action{At: n}
		default:
			return nil, fmt.Errorf("failpoint: %s entry %d %q: unknown action %q (want kill@P or kill#N)", EnvPoints, i+1, entry, act)
		}
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("failpoint: %s=%q arms no point", EnvPoints, spec)
	}
	return s, nil
}

// Hit marks that execution reached the named point. Unarmed it returns at
// once; armed for name, it may kill the process (it never returns then).
func Hit(name string) {
	if armed == nil {
		return
	}
	hit(name)
}

func hit(name string) {
	if armErr != nil {
		panic(armErr)
	}
	a := armed[name]
	if a == nil {
		return
	}
	mu.Lock()
	a.hits++
	fire := !a.fired && ((a.At > 0 && a.hits == a.At) || (a.Prob > 0 && rng.Float64() < a.Prob))
	if fire {
		a.fired = true
	}
	n := a.hits
	mu.Unlock()
	if fire {
		killing(name, n)
	}
}
