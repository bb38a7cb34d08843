package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway/node"
)

// Options describe one bench run.
type Options struct {
	N       int         // transfers
	Clients int         // concurrent clients (closed loop)
	Rate    float64     // transfers/s (open loop) when > 0
	Lanes   []LaneShare // default EXPRESS=100
	Banks   int         // default 4
	DataDir string      // the node's data folder (fresh)
	// MQ is the node's queue manager (nil: the embedded queue file).
	MQ *node.MQConfig
	// Progress gets one line a second while the run goes (nil: none).
	Progress io.Writer
	// Quiesce bounds the wait for every transfer to be terminal (default 2m).
	Quiesce time.Duration
	// BeforeCheck runs after the run, before the invariant checks (tests
	// use it to break an invariant on purpose).
	BeforeCheck func(ctx context.Context, n *node.Node) error
}

// Latency is a latency distribution in milliseconds.
type Latency struct {
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
}

// DBCost is one database's commits per settled transfer. With WAL and
// synchronous=FULL every commit is one fsync of the WAL.
type DBCost struct {
	File             string  `json:"file"`
	Commits          int64   `json:"commits"`
	CommitsPerSettle float64 `json:"commits_per_settled"`
	FsyncsPerSettle  float64 `json:"fsyncs_per_settled"`
}

// Report is the outcome of a run (one shape for every mode).
type Report struct {
	Transfers      int       `json:"transfers"`
	Clients        int       `json:"clients"`
	Rate           float64   `json:"rate,omitempty"`
	Banks          int       `json:"banks"`
	Lanes          string    `json:"lanes"`
	Settled        int       `json:"settled"`
	Cancelled      int       `json:"cancelled"`
	Seconds        float64   `json:"seconds"`
	SettledPerSec  float64   `json:"settled_per_s"`
	Post           Latency   `json:"post_latency"`
	PostToSettled  Latency   `json:"post_to_settled_latency"`
	DBs            []DBCost  `json:"dbs"`
	CommitsPerTx   float64   `json:"commits_per_settled"`
	CPUPer1000     float64   `json:"cpu_s_per_1000"`
	PeakRSSMB      float64   `json:"peak_rss_mb"`
	Invariants     []string  `json:"invariants_checked"`
	ChainsVerified int       `json:"chains_verified"`
	Started        time.Time `json:"started"`
}

// Breach is a broken invariant.
type Breach struct {
	Invariant string
	Detail    string
}

func (b *Breach) Error() string { return "invariant " + b.Invariant + " breached: " + b.Detail }

type sent struct {
	txid   string
	payer  string // bank/hash
	payee  string // bank/hash
	amount int64
	at     time.Time
	post   time.Duration
}

// Run starts a node on opts.DataDir, runs the load and checks the
// invariants. A breach is returned as a *Breach with the report so far.
func Run(ctx context.Context, o Options) (rep Report, err error) {
	if o.N <= 0 {
		return rep, errors.New("bench: -n must be > 0")
	}
	if o.Clients <= 0 {
		o.Clients = 1
	}
	if o.Banks < 2 {
		return rep, fmt.Errorf("bench: --banks %d: need at least 2", o.Banks)
	}
	if len(o.Lanes) == 0 {
		o.Lanes = []LaneShare{{Lane: "EXPRESS", Percent: 100}}
	}
	if o.Quiesce <= 0 {
		o.Quiesce = 2 * time.Minute
	}
	cfg := Config(o.Banks)
	cfg.MQ = o.MQ
	n, err := node.Start(ctx, node.Options{DataDir: o.DataDir, Config: &cfg})
	if err != nil {
		return rep, fmt.Errorf("bench: start node: %w", err)
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("bench: close node: %w", cerr)
		}
	}()
	rep = Report{Transfers: o.N, Clients: o.Clients, Rate: o.Rate, Banks: o.Banks, Lanes: laneString(o.Lanes), Started: time.Now().UTC()}
	opening, err := positions(ctx, n)
	if err != nil {
		return rep, err
	}
	dbs := databases(n)
	before := commits(dbs)
	cpu0, err := cpuTime()
	if err != nil {
		return rep, err
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Clients + 16}, Timeout: 30 * time.Second}
	var (
		mu             sync.Mutex
		sents          = make([]sent, 0, o.N)
		posted, failed atomic.Int64
		firstErr       error
	)
	post := func(i int) (txid string) {
		payer := i % o.Banks
		payee := (payer + 1 + (i/o.Banks)%(o.Banks-1)) % o.Banks
		acct := (i/o.Banks)%accountsPerBank + 1
		pb, qb := cfg.Banks[payer].BankID, cfg.Banks[payee].BankID
		key := fmt.Sprintf("bench-%s-%d", rep.Started.Format("150405.000"), i)
		amount := int64(100 + i%900)
		body, _ := json.Marshal(map[string]any{
			"lane":            laneOf(o.Lanes, i),
			"amount":          map[string]any{"value": amount, "currency": "JPY"},
			"payer":           map[string]any{"bank_id": pb, "account_hash": fmt.Sprintf("h:%s-%04d", pb, acct)},
			"payee":           map[string]any{"bank_id": qb, "account_hash": fmt.Sprintf("h:%s-%04d", qb, acct)},
			"purpose":         "P2P",
			"participant_ref": "ref-" + key,
			"schema_version":  "1.1",
			"idempotency_key": key,
		})
		req, _ := http.NewRequestWithContext(ctx, "POST", n.URL+"/api/transfers", bytes.NewReader(body))
		req.Header.Set("X-Api-Key", cfg.KeyFor(pb))
		req.Header.Set("Content-Type", "application/json")
		t := time.Now()
		res, err := client.Do(req)
		var out struct {
			TxID string `json:"txid"`
		}
		if err == nil {
			b, rerr := io.ReadAll(res.Body)
			res.Body.Close()
			switch {
			case rerr != nil:
				err = rerr
			case res.StatusCode != http.StatusCreated:
				err = fmt.Errorf("POST /api/transfers %s: %d %s", key, res.StatusCode, bytes.TrimSpace(b))
			default:
				if jerr := json.Unmarshal(b, &out); jerr != nil || out.TxID == "" {
					err = fmt.Errorf("POST /api/transfers %s: no txid in %s", key, b)
				}
			}
		}
		d := time.Since(t)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed.Add(1)
			if firstErr == nil {
				firstErr = err
			}
			return ""
		}
		posted.Add(1)
		txid = out.TxID
		sents = append(sents, sent{txid: out.TxID, payer: pb + "/" + fmt.Sprintf("h:%s-%04d", pb, acct), payee: qb + "/" + fmt.Sprintf("h:%s-%04d", qb, acct), amount: amount, at: t, post: d})
		return txid
	}

	start := time.Now()
	progCtx, stopProg := context.WithCancel(ctx)
	progDone := make(chan struct{})
	go func() {
		defer close(progDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-progCtx.Done():
				return
			case <-tick.C:
				if o.Progress != nil {
					s, _ := countStates(progCtx, n.DB)
					fmt.Fprintf(o.Progress, "zcgw bench: %5.1fs posted %d/%d, settled %d, failed POSTs %d\n",
						time.Since(start).Seconds(), posted.Load(), o.N, s["SETTLED"], failed.Load())
				}
			}
		}
	}()
	var wg sync.WaitGroup
	if o.Rate > 0 { // open loop: one POST every 1/Rate, whatever is in flight
		every := time.Duration(float64(time.Second) / o.Rate)
		tick := time.NewTicker(every)
		for i := 0; i < o.N && ctx.Err() == nil; i++ {
			wg.Add(1)
			go func(i int) { defer wg.Done(); post(i) }(i)
			<-tick.C
		}
		tick.Stop()
	} else { // closed loop: Clients clients, each posts its next once its last is terminal
		watch := newTerminalWatch()
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go watch.run(watchCtx, n.DB)
		work := make(chan int)
		for c := 0; c < o.Clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					if txid := post(i); txid != "" {
						watch.wait(ctx, txid)
					}
				}
			}()
		}
		for i := 0; i < o.N && ctx.Err() == nil; i++ {
			work <- i
		}
		close(work)
	}
	wg.Wait()
	if firstErr != nil {
		stopProg()
		<-progDone
		return rep, fmt.Errorf("bench: %d of %d POSTs failed, the first: %w", failed.Load(), o.N, firstErr)
	}
	// Quiescence, within the bound: every accepted transfer terminal at ZC
	// and every posting of the adapters' outboxes applied at its core (a
	// payer's debit and a payee's credit land after SETTLED).
	deadline := time.Now().Add(o.Quiesce)
	for {
		s, err := countStates(ctx, n.DB)
		if err != nil {
			stopProg()
			<-progDone
			return rep, err
		}
		if s["SETTLED"]+s["CANCELLED"] >= len(sents) {
			open, err := openPostings(ctx, n)
			if err != nil {
				stopProg()
				<-progDone
				return rep, err
			}
			if open == 0 {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	stopProg()
	<-progDone
	cpu1, err := cpuTime()
	if err != nil {
		return rep, err
	}
	after := commits(dbs)

	settledAt, states, err := settleInstants(ctx, n.DB)
	if err != nil {
		return rep, err
	}
	var postLat, settleLat []time.Duration
	for _, s := range sents {
		postLat = append(postLat, s.post)
		if at, ok := settledAt[s.txid]; ok {
			settleLat = append(settleLat, at.Sub(s.at))
		}
	}
	for _, st := range states {
		switch st {
		case "SETTLED":
			rep.Settled++
		case "CANCELLED":
			rep.Cancelled++
		}
	}
	rep.Seconds = elapsed.Seconds()
	if rep.Seconds > 0 {
		rep.SettledPerSec = float64(rep.Settled) / rep.Seconds
	}
	rep.Post, rep.PostToSettled = percentiles(postLat), percentiles(settleLat)
	for _, d := range dbs {
		c := after[d.name] - before[d.name]
		cost := DBCost{File: d.name, Commits: c}
		if rep.Settled > 0 {
			cost.CommitsPerSettle = float64(c) / float64(rep.Settled)
			cost.FsyncsPerSettle = cost.CommitsPerSettle
			rep.CommitsPerTx += cost.CommitsPerSettle
		}
		rep.DBs = append(rep.DBs, cost)
	}
	rep.CPUPer1000 = (cpu1 - cpu0).Seconds() / float64(len(sents)) * 1000
	rep.PeakRSSMB, err = peakRSSMB()
	if err != nil {
		return rep, err
	}

	if o.BeforeCheck != nil {
		if err := o.BeforeCheck(ctx, n); err != nil {
			return rep, fmt.Errorf("bench: before check: %w", err)
		}
	}
	return rep, check(ctx, n, cfg, opening, sents, states, &rep)
}

// terminalWatch tells closed-loop clients when their transfer has
// finished. One goroutine reads the states of every transfer in flight in
// one query every 5 ms, so the watching costs the node one read per tick
// whatever the number of clients (a bank waits for each answer; it does
// not add load of its own while it waits).
type terminalWatch struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

func newTerminalWatch() *terminalWatch {
	return &terminalWatch{waiting: map[string]chan struct{}{}}
}

// wait blocks until txid is SETTLED or CANCELLED, or ctx ends.
func (w *terminalWatch) wait(ctx context.Context, txid string) {
	ch := make(chan struct{})
	w.mu.Lock()
	w.waiting[txid] = ch
	w.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// run polls until ctx ends.
func (w *terminalWatch) run(ctx context.Context, db *store.DB) {
	for clock.Sleep(ctx, 5*time.Millisecond) {
		w.mu.Lock()
		ids := make([]any, 0, len(w.waiting))
		for id := range w.waiting {
			ids = append(ids, id)
		}
		w.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		var done []string
		err := db.Read(ctx, func(tx *store.Tx) error {
			rows, err := tx.QueryContext(ctx, `SELECT txid FROM Transactions WHERE state IN ('SETTLED','CANCELLED') AND txid IN (?`+
				strings.Repeat(",?", len(ids)-1)+`)`, ids...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					return err
				}
				done = append(done, id)
			}
			return rows.Err()
		})
		if err != nil {
			continue // the next tick reads again
		}
		w.mu.Lock()
		for _, id := range done {
			if ch, ok := w.waiting[id]; ok {
				close(ch)
				delete(w.waiting, id)
			}
		}
		w.mu.Unlock()
	}
}

func laneString(ls []LaneShare) string {
	var b bytes.Buffer
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%d", l.Lane, l.Percent)
	}
	return b.String()
}

type namedDB struct {
	name string
	db   *store.DB
}

// databases lists every database file of the node bench reads commits of.
func databases(n *node.Node) []namedDB {
	out := []namedDB{{"zc.db", n.DB}}
	if n.NonceDB != nil {
		out = append(out, namedDB{"ingress-nonces.db", n.NonceDB})
	}
	ids := make([]string, 0, len(n.Banks))
	for id := range n.Banks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		b := n.Banks[id]
		out = append(out, namedDB{"bank " + id + " adapter", b.Adapter.DB()}, namedDB{"bank " + id + " core", b.Core.DB()})
	}
	return out
}

func commits(dbs []namedDB) map[string]int64 {
	m := map[string]int64{}
	for _, d := range dbs {
		m[d.name] = d.db.Stats().Commits
	}
	return m
}

func countStates(ctx context.Context, db *store.DB) (map[string]int, error) {
	out := map[string]int{}
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT state, count(*) FROM Transactions GROUP BY state`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			var c int
			if err := rows.Scan(&s, &c); err != nil {
				return err
			}
			out[s] = c
		}
		return rows.Err()
	})
	return out, err
}

// settleInstants reads, after the run, each transfer's state and the
// instant its SETTLED FinalityLog entry was written (so no polling
// distorts the run).
func settleInstants(ctx context.Context, db *store.DB) (map[string]time.Time, map[string]string, error) {
	at, states := map[string]time.Time{}, map[string]string{}
	err := db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT txid, MIN(occurred_at) FROM FinalityLog WHERE state_to = 'SETTLED' AND txid IS NOT NULL GROUP BY txid`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, s string
			if err := rows.Scan(&id, &s); err != nil {
				rows.Close()
				return err
			}
			t, err := clock.ParseStamp(s)
			if err != nil {
				rows.Close()
				return fmt.Errorf("FinalityLog %s occurred_at %q: %w", id, s, err)
			}
			at[id] = t
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `SELECT txid, state FROM Transactions`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, s string
			if err := rows.Scan(&id, &s); err != nil {
				return err
			}
			states[id] = s
		}
		return rows.Err()
	})
	return at, states, err
}

func percentiles(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.5) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(ds) {
			i = len(ds) - 1
		}
		return float64(ds[i].Microseconds()) / 1000
	}
	return Latency{P50: q(0.50), P99: q(0.99), P999: q(0.999)}
}

func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("bench: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// peakRSSMB is ru_maxrss (KiB on Linux) in MiB.
func peakRSSMB() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("bench: getrusage: %w", err)
	}
	return float64(ru.Maxrss) / 1024, nil
}

// openPostings counts the outbox postings of every bank not yet applied
// (or written off).
func openPostings(ctx context.Context, n *node.Node) (int, error) {
	total := 0
	for id, b := range n.Banks {
		var c int
		if err := b.Adapter.DB().Read(ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(ctx, `SELECT count(*) FROM AdapterOutbox WHERE status NOT IN ('APPLIED','WRITTEN_OFF')`).Scan(&c)
		}); err != nil {
			return 0, fmt.Errorf("bench: bank %s outbox: %w", id, err)
		}
		total += c
	}
	return total, nil
}
