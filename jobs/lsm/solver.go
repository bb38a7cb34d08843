package lsm

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
)

// Mode is how a run chose its set (LsmRuns.mode).
type Mode string

const (
	Optimized Mode = "OPTIMIZED" // the lexicographic objective
	FIFO      Mode = "FIFO"      // fallback: arrival order, no overtaking
	Priority  Mode = "PRIORITY"  // fallback: earliest due date first
	Throttle  Mode = "THROTTLE"  // fallback: arrival order, at most N per payer
)

// Valid reports whether m is one of the four modes.
func (m Mode) Valid() bool {
	switch m {
	case Optimized, FIFO, Priority, Throttle:
		return true
	}
	return false
}

// Candidate is one transfer waiting for the window (BULK/DEFERRED in
// RECEIVED), as snapshotted at the window's close.
type Candidate struct {
	TxID        string `json:"txid"`
	PayerBankID string `json:"payer_bank_id"`
	PayeeBankID string `json:"payee_bank_id"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	ArrivedAt   string `json:"arrived_at"`       // RFC3339 (Transactions.created_at)
	DueAt       string `json:"due_at,omitempty"` // RFC3339 (Transactions.expires_at); "" = no due date
}

// Constraints are everything besides the candidates that the choice
// depends on (constraints_digest covers all of it).
type Constraints struct {
	WindowID string `json:"window_id"`
	ClosedAt string `json:"closed_at"` // the window close instant (RFC3339)
	// DueHorizon: a candidate due at or before it is urgent — if it is not
	// executed in this window it will be late (normally the next window's
	// close).
	DueHorizon string `json:"due_horizon"`
	// FairnessAge: a candidate that has waited at least this long (seconds)
	// is served before younger ones (starvation guard).
	FairnessAgeSeconds int64 `json:"fairness_age_seconds"`
	// Available is each payer's available H per currency, keyed
	// HKey(bank, currency), read in the same transaction as the snapshot.
	Available map[string]int64 `json:"h_available"`
	// Stopped payers get nothing in this window (stop conditions: an
	// inactive participant).
	Stopped []string `json:"stopped,omitempty"`
	// ThrottlePerPayer is the THROTTLE fallback's per-payer cap.
	ThrottlePerPayer int `json:"throttle_per_payer"`
}

// HKey is the key of Constraints.Available.
func HKey(bank, currency string) string { return bank + "/" + currency }

// Input is one window's snapshot.
type Input struct {
	Candidates  []Candidate `json:"candidates"` // any order; canonicalized by txid
	Constraints Constraints `json:"constraints"`
}

// Decision is one line of the trace: what happened to a candidate and why.
type Decision struct {
	TxID     string `json:"txid"`
	Selected bool   `json:"selected"`
	Reason   string `json:"reason"` // URGENT|AGED|THROUGHPUT|FIFO|PRIORITY|THROTTLE or H_INSUFFICIENT|STOPPED|THROTTLED|FIFO_BLOCKED
	Rank     int    `json:"rank"`   // position in the payer's evaluation order (0-based)
	HBefore  int64  `json:"h_before"`
}

// Metrics are the objective's achievement (LsmRuns.objective_metrics).
type Metrics struct {
	Degraded       bool   `json:"degraded"`
	FallbackReason string `json:"fallback_reason,omitempty"`
	Candidates     int    `json:"candidates"`
	Selected       int    `json:"selected"`
	Deferred       int    `json:"deferred"`
	SelectedAmount int64  `json:"selected_amount"`
	// (1) due dates: urgent candidates and how many of them will be late.
	Urgent         int `json:"urgent"`
	UrgentSelected int `json:"urgent_selected"`
	DueOverrun     int `json:"due_overrun"`
	// (2) fairness: waited time served, and the longest wait left behind.
	Aged                   int   `json:"aged"`
	AgedSelected           int   `json:"aged_selected"`
	WaitServedSeconds      int64 `json:"wait_served_seconds"`
	MaxWaitDeferredSeconds int64 `json:"max_wait_deferred_seconds"`
	PayersWithCandidates   int   `json:"payers_with_candidates"`
	PayersServed           int   `json:"payers_served"`
	// (3) throughput
	ThroughputSelected int `json:"throughput_selected"`
}

// Result is a solver run.
type Result struct {
	Mode     Mode
	Selected []string // commit order (payer, then evaluation order)
	Deferred []string // txid order
	Trace    []Decision
	Metrics  Metrics
	// ExecutionSetHash is the digest of the selected set (order-free);
	// TraceDigest the digest of the mode and the trace.
	ExecutionSetHash string
	TraceDigest      string
}

// ErrBudget is returned by Solve(Optimized) when the input exceeds the
// optimizer's budget; Plan then falls back.
var ErrBudget = errors.New("lsm: candidate set exceeds the optimizer budget")

// Options tune Plan.
type Options struct {
	// MaxOptimize is the optimizer's budget in candidates (0: 1,000,000).
	// Above it the run falls back.
	MaxOptimize int
	// Fallback is the mode used when the optimizer fails (default PRIORITY).
	Fallback Mode
	// Force runs this mode directly (an operator-chosen degraded mode; it is
	// recorded as a fallback when it is not OPTIMIZED).
	Force Mode
}

// Plan runs the optimizer and, when it fails (budget exceeded or an
// internal error), the fallback mode, recorded with Metrics.Degraded =
// true and the reason. Invalid input is an error, not a fallback.
func Plan(in Input, opt Options) (Result, error) {
	if err := validate(in); err != nil {
		return Result{}, err
	}
	if opt.Fallback == "" {
		opt.Fallback = Priority
	}
	if !opt.Fallback.Valid() || opt.Fallback == Optimized {
		return Result{}, domainerr.New("INVALID_REQUEST", "fallback mode must be FIFO, PRIORITY or THROTTLE", map[string]any{"fallback": string(opt.Fallback)})
	}
	if opt.Force != "" {
		if !opt.Force.Valid() {
			return Result{}, domainerr.New("INVALID_REQUEST", "unknown LSM mode", map[string]any{"mode": string(opt.Force)})
		}
		r, err := Solve(in, opt.Force)
		if err == nil && opt.Force != Optimized {
			r.Metrics.Degraded, r.Metrics.FallbackReason = true, "forced by operator"
		}
		return r, err
	}
	max := opt.MaxOptimize
	if max <= 0 {
		max = 1_000_000
	}
	var reason string
	if len(in.Candidates) > max {
		reason = fmt.Sprintf("%v: %d > %d", ErrBudget, len(in.Candidates), max)
	} else {
		r, err := safeSolve(in, Optimized)
		if err == nil {
			return r, nil
		}
		reason = err.Error()
	}
	r, err := Solve(in, opt.Fallback)
	if err != nil {
		return Result{}, err
	}
	r.Metrics.Degraded, r.Metrics.FallbackReason = true, reason
	return r, nil
}

func safeSolve(in Input, m Mode) (r Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("lsm: optimizer failed: %v", p)
		}
	}()
	return Solve(in, m)
}

// cand is a candidate with parsed instants.
type cand struct {
	Candidate
	arrived time.Time
	due     time.Time // zero: none
	arrNs   int64     // arrived, as Unix nanoseconds (fast comparisons)
	dueNs   int64     // due, as Unix nanoseconds; 0 = none
	urgent  bool
	aged    bool
	wait    int64 // seconds waited at the close
	picked  bool  // selected by solveGroup
}

func validate(in Input) error {
	seen := map[string]bool{}
	for i, c := range in.Candidates {
		bad := func(why string) error {
			return domainerr.New("INVARIANT_VIOLATION", "LSM candidate "+why, map[string]any{"index": i, "txid": c.TxID})
		}
		switch {
		case c.TxID == "" || seen[c.TxID]:
			return bad("has an empty or duplicate txid")
		case c.Amount <= 0:
			return bad("has a non-positive amount")
		case c.PayerBankID == "" || c.Currency == "":
			return bad("has no payer or currency")
		}
		seen[c.TxID] = true
		if _, err := clock.ParseStamp(c.ArrivedAt); err != nil {
			return bad("has an unparsable arrived_at")
		}
		if c.DueAt != "" {
			if _, err := clock.ParseStamp(c.DueAt); err != nil {
				return bad("has an unparsable due_at")
			}
		}
	}
	for _, f := range []struct{ name, v string }{{"closed_at", in.Constraints.ClosedAt}, {"due_horizon", in.Constraints.DueHorizon}} {
		if _, err := clock.ParseStamp(f.v); err != nil {
			return domainerr.New("INVARIANT_VIOLATION", "LSM constraint "+f.name+" is not RFC3339", map[string]any{f.name: f.v})
		}
	}
	return nil
}

// Solve runs one mode on the input. It is deterministic: the same input
// (in any candidate order) gives the same Result.
func Solve(in Input, mode Mode) (Result, error) {
	if err := validate(in); err != nil {
		return Result{}, err
	}
	if !mode.Valid() {
		return Result{}, domainerr.New("INVALID_REQUEST", "unknown LSM mode", map[string]any{"mode": string(mode)})
	}
	k := in.Constraints
	closed, _ := clock.ParseStamp(k.ClosedAt)
	horizon, _ := clock.ParseStamp(k.DueHorizon)
	stopped := map[string]bool{}
	for _, b := range k.Stopped {
		stopped[b] = true
	}
	groups := map[string][]*cand{}
	var keys []string
	m := Metrics{Candidates: len(in.Candidates)}
	n := len(in.Candidates)
	all := make([]cand, n)
	for i, c := range in.Candidates {
		x := &all[i]
		x.Candidate = c
		x.arrived, _ = clock.ParseStamp(c.ArrivedAt)
		x.arrNs = x.arrived.UnixNano()
		if c.DueAt != "" {
			x.due, _ = clock.ParseStamp(c.DueAt)
			x.dueNs = x.due.UnixNano()
			x.urgent = !x.due.After(horizon)
		}
		x.wait = int64(closed.Sub(x.arrived) / time.Second)
		if x.wait < 0 {
			x.wait = 0
		}
		x.aged = k.FairnessAgeSeconds > 0 && x.wait >= k.FairnessAgeSeconds
		if x.urgent {
			m.Urgent++
		}
		if x.aged {
			m.Aged++
		}
		key := HKey(c.PayerBankID, c.Currency)
		if groups[key] == nil {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], x)
	}
	sort.Strings(keys)
	m.PayersWithCandidates = len(keys)
	res := Result{Mode: mode, Selected: make([]string, 0, n), Trace: make([]Decision, 0, n)}
	for _, key := range keys {
		g := groups[key]
		slices.SortFunc(g, func(a, b *cand) int { return strings.Compare(a.TxID, b.TxID) })
		h := k.Available[key]
		var dec []Decision
		var sel []*cand
		if stopped[g[0].PayerBankID] {
			for i, x := range byArrival(g) {
				dec = append(dec, Decision{TxID: x.TxID, Reason: "STOPPED", Rank: i, HBefore: h})
			}
		} else {
			dec, sel = solveGroup(g, h, mode, k.ThrottlePerPayer)
		}
		if len(sel) > 0 {
			m.PayersServed++
		}
		for _, x := range sel {
			res.Selected = append(res.Selected, x.TxID)
			m.Selected++
			m.SelectedAmount += x.Amount
			m.WaitServedSeconds += x.wait
			if x.urgent {
				m.UrgentSelected++
			}
			if x.aged {
				m.AgedSelected++
			}
		}
		for _, d := range dec {
			if d.Reason == "THROUGHPUT" {
				m.ThroughputSelected++
			}
		}
		res.Trace = append(res.Trace, dec...)
		for _, x := range g {
			if !x.picked {
				res.Deferred = append(res.Deferred, x.TxID)
				if x.wait > m.MaxWaitDeferredSeconds {
					m.MaxWaitDeferredSeconds = x.wait
				}
			}
		}
	}
	sort.Strings(res.Deferred)
	m.Deferred = len(res.Deferred)
	m.DueOverrun = m.Urgent - m.UrgentSelected
	res.Metrics = m
	res.ExecutionSetHash = ExecutionSetHash(res.Selected)
	res.TraceDigest = traceDigest(mode, res.Trace)
	return res, nil
}

func byArrival(g []*cand) []*cand {
	out := append([]*cand(nil), g...)
	slices.SortFunc(out, cmpArrival)
	return out
}

// The orders below are total (txids are unique), so sorting needs no
// stability to be deterministic.
func cmpArrival(a, b *cand) int {
	if c := cmp.Compare(a.arrNs, b.arrNs); c != 0 {
		return c
	}
	return strings.Compare(a.TxID, b.TxID)
}

func cmpAmountArrival(a, b *cand) int {
	if a.Amount != b.Amount {
		return cmp.Compare(a.Amount, b.Amount)
	}
	return cmpArrival(a, b)
}

// cmpDue: earliest due first, no due date last, then arrival.
func cmpDue(a, b *cand) int {
	switch {
	case a.due.IsZero() != b.due.IsZero():
		if a.due.IsZero() {
			return 1
		}
		return -1
	case a.dueNs != b.dueNs:
		return cmp.Compare(a.dueNs, b.dueNs)
	}
	return cmpArrival(a, b)
}

// solveGroup chooses within one payer's H. g is in txid order.
func solveGroup(g []*cand, h int64, mode Mode, throttle int) ([]Decision, []*cand) {
	dec := make([]Decision, 0, len(g))
	var sel []*cand
	rank := 0
	take := func(x *cand, reason string) {
		dec = append(dec, Decision{TxID: x.TxID, Selected: true, Reason: reason, Rank: rank, HBefore: h})
		h -= x.Amount
		x.picked = true
		sel = append(sel, x)
		rank++
	}
	skip := func(x *cand, reason string) {
		dec = append(dec, Decision{TxID: x.TxID, Reason: reason, Rank: rank, HBefore: h})
		rank++
	}
	switch mode {
	case Optimized:
		// (1) due dates: as many urgent candidates as H allows — taking
		// the smallest first maximizes the count; ties by arrival.
		urgent := filter(g, func(x *cand) bool { return x.urgent })
		slices.SortFunc(urgent, cmpAmountArrival)
		for _, x := range urgent {
			if x.Amount <= h {
				take(x, "URGENT")
			}
		}
		// (2) fairness: candidates that waited at least the fairness age,
		// longest wait first, first fit.
		aged := filter(g, func(x *cand) bool { return x.aged && !x.picked })
		aged = byArrival(aged)
		for _, x := range aged {
			if x.Amount <= h {
				take(x, "AGED")
			}
		}
		// (3) throughput: the rest, smallest first (most transfers per H).
		rest := filter(g, func(x *cand) bool { return !x.picked })
		slices.SortFunc(rest, cmpAmountArrival)
		for _, x := range rest {
			if x.Amount <= h {
				take(x, "THROUGHPUT")
			}
		}
		for _, x := range byArrival(filter(g, func(x *cand) bool { return !x.picked })) {
			skip(x, "H_INSUFFICIENT")
		}
	case FIFO:
		blocked := false
		for _, x := range byArrival(g) {
			switch {
			case blocked:
				skip(x, "FIFO_BLOCKED")
			case x.Amount <= h:
				take(x, "FIFO")
			default:
				blocked = true
				skip(x, "H_INSUFFICIENT")
			}
		}
	case Priority:
		order := append([]*cand(nil), g...)
		slices.SortFunc(order, cmpDue)
		for _, x := range order {
			if x.Amount <= h {
				take(x, "PRIORITY")
			} else {
				skip(x, "H_INSUFFICIENT")
			}
		}
	case Throttle:
		if throttle <= 0 {
			throttle = 100
		}
		n := 0
		for _, x := range byArrival(g) {
			switch {
			case n >= throttle:
				skip(x, "THROTTLED")
			case x.Amount <= h:
				take(x, "THROTTLE")
				n++
			default:
				skip(x, "H_INSUFFICIENT")
			}
		}
	}
	return dec, sel
}

func filter(g []*cand, keep func(*cand) bool) []*cand {
	var out []*cand
	for _, x := range g {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// ExecutionSetHash is the SHA-256 (hex) of the selected txids sorted and
// joined by newlines: the digest of the set, independent of commit order.
func ExecutionSetHash(selected []string) string {
	s := append([]string(nil), selected...)
	sort.Strings(s)
	return sha256Hex([]byte(strings.Join(s, "\n")))
}

// traceDigest is the SHA-256 of the mode and the trace in a line
// encoding (one line per decision: quoted txid, selected, reason, rank,
// H before, tab-separated), streamed into the hash.
func traceDigest(m Mode, trace []Decision) string {
	h := sha256.New()
	buf := make([]byte, 0, 256)
	buf = append(append(buf, m...), '\n')
	for _, d := range trace {
		buf = strconv.AppendQuote(buf, d.TxID)
		buf = append(buf, '\t')
		buf = strconv.AppendBool(buf, d.Selected)
		buf = append(append(append(buf, '\t'), d.Reason...), '\t')
		buf = strconv.AppendInt(buf, int64(d.Rank), 10)
		buf = append(buf, '\t')
		buf = strconv.AppendInt(buf, d.HBefore, 10)
		buf = append(buf, '\n')
		if len(buf) > 4096 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// Canonical returns the canonical JSON of the candidates (sorted by txid)
// and of the constraints (map keys sorted, stopped sorted): the bytes
// SnapshotID and ConstraintsDigest hash and LsmSnapshots stores.
func Canonical(in Input) (candidates, constraints []byte) {
	cs := append([]Candidate(nil), in.Candidates...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].TxID < cs[j].TxID })
	if cs == nil {
		cs = []Candidate{}
	}
	k := in.Constraints
	k.Stopped = append([]string(nil), k.Stopped...)
	sort.Strings(k.Stopped)
	if k.Available == nil {
		k.Available = map[string]int64{}
	}
	candidates, _ = json.Marshal(cs)
	constraints, _ = json.Marshal(k) // encoding/json sorts map keys
	return candidates, constraints
}

// SnapshotID is input_snapshot_id: "LSMIN-" + SHA-256 of the canonical
// candidates.
func SnapshotID(in Input) string {
	c, _ := Canonical(in)
	return "LSMIN-" + sha256Hex(c)
}

// ConstraintsDigest is constraints_digest: SHA-256 of the canonical
// constraints.
func ConstraintsDigest(in Input) string {
	_, k := Canonical(in)
	return sha256Hex(k)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
