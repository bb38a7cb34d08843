package lsm

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
)

var closeAt = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC) // 09:00 JST

func at(minutesBeforeClose int) string {
	return clock.Stamp(closeAt.Add(-time.Duration(minutesBeforeClose) * time.Minute))
}

func after(minutes int) string { return clock.Stamp(closeAt.Add(time.Duration(minutes) * time.Minute)) }

func mkCand(id, payer string, amount int64, arrivedMinAgo int, due string) Candidate {
	return Candidate{TxID: id, PayerBankID: payer, PayeeBankID: "999", Amount: amount, Currency: "JPY", ArrivedAt: at(arrivedMinAgo), DueAt: due}
}

func constraints(h map[string]int64) Constraints {
	av := map[string]int64{}
	for b, v := range h {
		av[HKey(b, "JPY")] = v
	}
	return Constraints{WindowID: "BULK-20261202-0900", ClosedAt: clock.Stamp(closeAt), DueHorizon: after(120),
		FairnessAgeSeconds: 3600, Available: av, ThrottlePerPayer: 2}
}

func reasons(r Result) map[string]string {
	out := map[string]string{}
	for _, d := range r.Trace {
		out[d.TxID] = d.Reason
	}
	return out
}

// The lexicographic objective: urgent (due before the next window) first —
// as many as H allows —, then the candidates that waited longest, then as
// many of the rest as fit.
func TestOptimizedObjective(t *testing.T) {
	in := Input{Constraints: constraints(map[string]int64{"001": 10000, "002": 1000}), Candidates: []Candidate{
		mkCand("U-BIG", "001", 7000, 5, after(60)),    // urgent but too big once the two smaller urgent ones are in
		mkCand("U-1", "001", 3000, 5, after(30)),      // urgent
		mkCand("U-2", "001", 2500, 5, after(90)),      // urgent
		mkCand("OLD", "001", 2000, 180, after(24*60)), // aged (3h): fairness
		mkCand("Y-1", "001", 1000, 10, ""),            // young, no due date: throughput
		mkCand("Y-2", "001", 1500, 10, ""),            // young: fills H exactly
		mkCand("Y-3", "001", 2600, 20, ""),            // does not fit
		mkCand("B2", "002", 1500, 500, ""),            // payer 002 lacks H
	}}
	r, err := Solve(in, Optimized)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"U-1": "URGENT", "U-2": "URGENT", "OLD": "AGED", "Y-1": "THROUGHPUT", "Y-2": "THROUGHPUT",
		"U-BIG": "H_INSUFFICIENT", "Y-3": "H_INSUFFICIENT", "B2": "H_INSUFFICIENT"}
	if got := reasons(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("decisions = %v\nwant %v", got, want)
	}
	if !reflect.DeepEqual(r.Selected, []string{"U-2", "U-1", "OLD", "Y-1", "Y-2"}) {
		t.Fatalf("commit order = %v", r.Selected)
	}
	m := r.Metrics
	if m.Urgent != 3 || m.UrgentSelected != 2 || m.DueOverrun != 1 || m.Aged != 2 || m.AgedSelected != 1 ||
		m.Selected != 5 || m.Deferred != 3 || m.SelectedAmount != 10000 || m.ThroughputSelected != 2 ||
		m.PayersWithCandidates != 2 || m.PayersServed != 1 || m.MaxWaitDeferredSeconds != 500*60 || m.Degraded {
		t.Fatalf("metrics = %+v", m)
	}
	if !reflect.DeepEqual(r.Deferred, []string{"B2", "U-BIG", "Y-3"}) {
		t.Fatalf("deferred = %v", r.Deferred)
	}
}

func TestFallbackModes(t *testing.T) {
	in := Input{Constraints: constraints(map[string]int64{"001": 6000}), Candidates: []Candidate{
		mkCand("A", "001", 3000, 50, ""),         // first to arrive
		mkCand("B", "001", 4000, 40, after(200)), // second; due soon-ish
		mkCand("C", "001", 1000, 30, after(100)), // third; due first
		mkCand("D", "001", 500, 20, ""),
	}}
	for _, tc := range []struct {
		mode Mode
		sel  []string
		why  map[string]string
	}{
		// FIFO: arrival order, stops at the first that does not fit (no overtaking).
		{FIFO, []string{"A"}, map[string]string{"A": "FIFO", "B": "H_INSUFFICIENT", "C": "FIFO_BLOCKED", "D": "FIFO_BLOCKED"}},
		// PRIORITY: earliest due first, then arrival, first fit.
		{Priority, []string{"C", "B", "D"}, map[string]string{"C": "PRIORITY", "B": "PRIORITY", "A": "H_INSUFFICIENT", "D": "PRIORITY"}},
		// THROTTLE: arrival order, at most 2 per payer.
		{Throttle, []string{"A", "C"}, map[string]string{"A": "THROTTLE", "B": "H_INSUFFICIENT", "C": "THROTTLE", "D": "THROTTLED"}},
	} {
		r, err := Solve(in, tc.mode)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.Selected, tc.sel) || !reflect.DeepEqual(reasons(r), tc.why) {
			t.Errorf("%s: selected %v reasons %v", tc.mode, r.Selected, reasons(r))
		}
		// Plan falls back to the configured mode when the optimizer's
		// budget is exceeded, and says so.
		p, err := Plan(in, Options{MaxOptimize: 3, Fallback: tc.mode})
		if err != nil {
			t.Fatal(err)
		}
		if p.Mode != tc.mode || !p.Metrics.Degraded || p.Metrics.FallbackReason == "" || p.ExecutionSetHash != r.ExecutionSetHash {
			t.Errorf("%s: plan = mode %s degraded %v reason %q", tc.mode, p.Mode, p.Metrics.Degraded, p.Metrics.FallbackReason)
		}
	}
	p, err := Plan(in, Options{})
	if err != nil || p.Mode != Optimized || p.Metrics.Degraded {
		t.Fatalf("plan within budget = %s degraded %v %v", p.Mode, p.Metrics.Degraded, err)
	}
	p, err = Plan(in, Options{Force: FIFO})
	if err != nil || p.Mode != FIFO || !p.Metrics.Degraded {
		t.Fatalf("forced FIFO = %s degraded %v %v", p.Mode, p.Metrics.Degraded, err)
	}
	if _, err := Plan(in, Options{Fallback: Optimized}); err == nil {
		t.Fatal("OPTIMIZED accepted as a fallback")
	}
}

func TestStoppedPayerGetsNothing(t *testing.T) {
	k := constraints(map[string]int64{"001": 1 << 40, "002": 1 << 40})
	k.Stopped = []string{"002"}
	r, err := Solve(Input{Constraints: k, Candidates: []Candidate{mkCand("A", "001", 10, 1, ""), mkCand("B", "002", 10, 1, "")}}, Optimized)
	if err != nil || !reflect.DeepEqual(r.Selected, []string{"A"}) || reasons(r)["B"] != "STOPPED" {
		t.Fatalf("selected %v reasons %v %v", r.Selected, reasons(r), err)
	}
}

func TestInvalidInput(t *testing.T) {
	k := constraints(map[string]int64{"001": 100})
	for name, cs := range map[string][]Candidate{
		"duplicate": {mkCand("A", "001", 1, 1, ""), mkCand("A", "001", 2, 1, "")},
		"zero":      {mkCand("A", "001", 0, 1, "")},
		"bad time":  {{TxID: "A", PayerBankID: "001", Amount: 1, Currency: "JPY", ArrivedAt: "yesterday"}},
		"no payer":  {{TxID: "A", Amount: 1, Currency: "JPY", ArrivedAt: at(1)}},
	} {
		if _, err := Plan(Input{Constraints: k, Candidates: cs}, Options{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func randomInput(rng *rand.Rand, n, banks int) Input {
	h := map[string]int64{}
	for b := 1; b <= banks; b++ {
		h[fmt.Sprintf("%03d", b)] = int64(rng.Intn(50_000_000))
	}
	in := Input{Constraints: constraints(h)}
	for i := 0; i < n; i++ {
		due := ""
		switch rng.Intn(3) {
		case 0:
			due = after(rng.Intn(240))
		case 1:
			due = after(-rng.Intn(60))
		}
		in.Candidates = append(in.Candidates, mkCand(fmt.Sprintf("TX-%06d", i), fmt.Sprintf("%03d", 1+rng.Intn(banks)),
			int64(1+rng.Intn(2_000_000)), rng.Intn(600), due))
	}
	return in
}

// Properties of every mode on random inputs: no payer goes over its H,
// every candidate is either selected or deferred (never dropped), the result
// does not depend on the candidates' order, and the optimizer takes the
// largest possible number of urgent candidates.
func TestSolverProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(14))
	for iter := 0; iter < 60; iter++ {
		in := randomInput(rng, rng.Intn(300), 1+rng.Intn(6))
		for _, mode := range []Mode{Optimized, FIFO, Priority, Throttle} {
			r, err := Solve(in, mode)
			if err != nil {
				t.Fatal(err)
			}
			used := map[string]int64{}
			byID := map[string]Candidate{}
			for _, c := range in.Candidates {
				byID[c.TxID] = c
			}
			for _, id := range r.Selected {
				c := byID[id]
				used[HKey(c.PayerBankID, c.Currency)] += c.Amount
			}
			for k, u := range used {
				if u > in.Constraints.Available[k] {
					t.Fatalf("%s: payer %s uses %d of %d", mode, k, u, in.Constraints.Available[k])
				}
			}
			all := append(append([]string(nil), r.Selected...), r.Deferred...)
			sort.Strings(all)
			if len(all) != len(in.Candidates) || len(r.Trace) != len(in.Candidates) {
				t.Fatalf("%s: %d selected + %d deferred of %d", mode, len(r.Selected), len(r.Deferred), len(in.Candidates))
			}
			for i := 1; i < len(all); i++ {
				if all[i] == all[i-1] {
					t.Fatalf("%s: %s both selected and deferred", mode, all[i])
				}
			}
			shuffled := in
			shuffled.Candidates = append([]Candidate(nil), in.Candidates...)
			rng.Shuffle(len(shuffled.Candidates), func(i, j int) {
				shuffled.Candidates[i], shuffled.Candidates[j] = shuffled.Candidates[j], shuffled.Candidates[i]
			})
			r2, _ := Solve(shuffled, mode)
			if r2.ExecutionSetHash != r.ExecutionSetHash || r2.TraceDigest != r.TraceDigest || SnapshotID(shuffled) != SnapshotID(in) {
				t.Fatalf("%s: result depends on candidate order", mode)
			}
			if mode == Optimized {
				if want := maxUrgent(in); r.Metrics.UrgentSelected != want {
					t.Fatalf("urgent selected %d, best possible %d", r.Metrics.UrgentSelected, want)
				}
			}
		}
	}
}

// maxUrgent is the largest number of urgent candidates the payers' H can
// carry (per payer: the most items under a capacity = smallest first).
func maxUrgent(in Input) int {
	horizon, _ := clock.ParseStamp(in.Constraints.DueHorizon)
	by := map[string][]int64{}
	for _, c := range in.Candidates {
		if c.DueAt == "" {
			continue
		}
		if d, _ := clock.ParseStamp(c.DueAt); !d.After(horizon) {
			k := HKey(c.PayerBankID, c.Currency)
			by[k] = append(by[k], c.Amount)
		}
	}
	n := 0
	for k, as := range by {
		sort.Slice(as, func(i, j int) bool { return as[i] < as[j] })
		h := in.Constraints.Available[k]
		for _, a := range as {
			if a > h {
				break
			}
			h -= a
			n++
		}
	}
	return n
}

// Speed of the optimizer in candidates per second.
func BenchmarkSolveOptimized(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		in := randomInput(rand.New(rand.NewSource(1)), n, 20)
		b.Run(fmt.Sprintf("candidates=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := Solve(in, Optimized); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "candidates/s")
		})
	}
}
