package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
	// Deployment is the queue manager and the store of the run's node.
	Deployment
	// Nodes is how many nodes share the run's store (default 1; more
	// need a PostgreSQL store): each in its own data folder under
	// DataDir/nodes/, with the first node's ZC signing key; the POSTs go
	// round robin over them and the checks read the shared databases.
	Nodes int
	// Progress gets one line a second while the run goes (nil: none).
	Progress io.Writer
	// Quiesce bounds the wait for every transfer to be terminal (default 2m).
	Quiesce time.Duration
	// BeforeCheck runs after the run, before the invariant checks (tests
	// use it to break an invariant on purpose).
	BeforeCheck func(ctx context.Context, n *node.Node) error
	// Idle, when > 0, is the idle mode: the node runs this long with no
	// request at all (N, Clients and Rate are ignored) and the report
	// gives the CPU it used, in percent of one core. MaxIdleCPU, when > 0,
	// is the bound: above it the run fails as a Breach of BoundIdleCPU.
	Idle       time.Duration
	MaxIdleCPU float64
}

// idleGrace is how long the idle mode lets a fresh node finish its start
// (the first rounds of its loops) before the measured window opens.
const idleGrace = time.Second

// Latency is a latency distribution in milliseconds.
type Latency struct {
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
}

// DBCost is one database's commits and SQL statements per settled
// transfer. With WAL and synchronous=FULL every commit is one fsync of
// the WAL. Statements are those run through store.Tx on the file (reads
// and writes, savepoints of group commits included, and on zc.db the
// bench's own few reads while it watches the run).
type DBCost struct {
	File                string  `json:"file"`
	Commits             int64   `json:"commits"`
	CommitsPerSettle    float64 `json:"commits_per_settled"`
	FsyncsPerSettle     float64 `json:"fsyncs_per_settled"`
	Statements          int64   `json:"statements"`
	StatementsPerSettle float64 `json:"statements_per_settled"`
}

// Report is the outcome of a run (one shape for every mode).
type Report struct {
	Transfers      int        `json:"transfers"`
	Clients        int        `json:"clients"`
	Rate           float64    `json:"rate,omitempty"`
	Banks          int        `json:"banks"`
	Lanes          string     `json:"lanes"`
	Store          string     `json:"store"` // sqlite, or postgres URL (password masked) and schema prefix
	Nodes          int        `json:"nodes"` // nodes sharing the store, the POSTs round robin over them
	Settled        int        `json:"settled"`
	Cancelled      int        `json:"cancelled"`
	Seconds        float64    `json:"seconds"`
	SettledPerSec  float64    `json:"settled_per_s"`
	Post           Latency    `json:"post_latency"`
	PostToSettled  Latency    `json:"post_to_settled_latency"`
	ByLane         []LaneStat `json:"by_lane,omitempty"` // with more than one lane
	DBs            []DBCost   `json:"dbs"`
	CommitsPerTx   float64    `json:"commits_per_settled"`
	StmtsPerTx     float64    `json:"statements_per_settled"`
	CPUPer1000     float64    `json:"cpu_s_per_1000"`
	PeakRSSMB      float64    `json:"peak_rss_mb"`
	Invariants     []string   `json:"invariants_checked"`
	ChainsVerified int        `json:"chains_verified"`
	Started        time.Time  `json:"started"`
	// The idle mode (Options.Idle): the measured window and the CPU the
	// whole process (node and bench) used in it, user+sys from getrusage,
	// in percent of one core.
	IdleSeconds    float64 `json:"idle_s,omitempty"`
	IdleCPUPercent float64 `json:"idle_cpu_percent_of_one_core,omitempty"`
	MaxIdleCPU     float64 `json:"max_idle_cpu_percent,omitempty"`
}

// LaneStat is one lane's share of a mixed run (--lanes with two or more).
type LaneStat struct {
	Lane          string  `json:"lane"`
	Settled       int     `json:"settled"`
	PostToSettled Latency `json:"post_to_settled_latency"`
}

// Breach is a broken invariant.
type Breach struct {
	Invariant string
	Detail    string
}

func (b *Breach) Error() string {
	if b.Invariant == BoundIdleCPU {
		return "bound " + b.Invariant + " exceeded: " + b.Detail
	}
	return "invariant " + b.Invariant + " breached: " + b.Detail
}

type sent struct {
	txid   string
	lane   string
	payer  string // bank/hash
	payee  string // bank/hash
	amount int64
	at     time.Time
	post   time.Duration
}

// Run starts a node on opts.DataDir, runs the load and checks the
// invariants. A breach is returned as a *Breach with the report so far.
func Run(ctx context.Context, o Options) (rep Report, err error) {
	if o.Idle > 0 {
		o.N, o.Clients, o.Rate = 0, 0, 0
	} else if o.N <= 0 {
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
	if o.Nodes <= 0 {
		o.Nodes = 1
	}
	if o.Nodes > 1 && (o.Store == nil || o.Store.Kind != "postgres") {
		return rep, fmt.Errorf("bench: --nodes %d: several nodes share a PostgreSQL store (--store postgres)", o.Nodes)
	}
	cfg := o.NodeConfig(Config(o.Banks))
	// The idle mode measures the node `zcgw serve` runs: with the job
	// scheduler and the file-drop watcher (the load modes leave both off,
	// so no cron job lands inside a measured run).
	n, err := node.Start(ctx, node.Options{DataDir: o.DataDir, Config: &cfg, Schedule: o.Idle > 0, WatchFiles: o.Idle > 0})
	if err != nil {
		return rep, fmt.Errorf("bench: start node: %w", err)
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("bench: close node: %w", cerr)
		}
	}()
	urls := []string{n.URL}
	for k := 2; k <= o.Nodes; k++ {
		other, perr := startPeer(ctx, o, cfg, k)
		if perr != nil {
			return rep, perr
		}
		defer func() {
			if cerr := other.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("bench: close node %d: %w", k, cerr)
			}
		}()
		urls = append(urls, other.URL)
	}
	rep = Report{Nodes: len(urls), Transfers: o.N, Clients: o.Clients, Rate: o.Rate, Banks: o.Banks, Lanes: laneString(o.Lanes), Store: storeLabel(n), Started: time.Now().UTC()}
	opening, err := positions(ctx, n)
	if err != nil {
		return rep, err
	}
	if o.Idle > 0 {
		if err := idle(ctx, o, &rep); err != nil {
			return rep, err
		}
		if err := check(ctx, n, cfg, opening, nil, map[string]string{}, &rep); err != nil {
			return rep, err
		}
		if o.MaxIdleCPU > 0 && rep.IdleCPUPercent > o.MaxIdleCPU {
			return rep, &Breach{Invariant: BoundIdleCPU, Detail: fmt.Sprintf("the idle node used %.2f%% of one core over %.1fs, the bound is %.2f%%",
				rep.IdleCPUPercent, rep.IdleSeconds, o.MaxIdleCPU)}
		}
		return rep, nil
	}
	dbs := databases(n)
	before := counters(dbs)
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
		req, _ := http.NewRequestWithContext(ctx, "POST", urls[i%len(urls)]+"/api/transfers", bytes.NewReader(body))
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
		sents = append(sents, sent{txid: out.TxID, lane: laneOf(o.Lanes, i), payer: pb + "/" + fmt.Sprintf("h:%s-%04d", pb, acct), payee: qb + "/" + fmt.Sprintf("h:%s-%04d", qb, acct), amount: amount, at: t, post: d})
		return txid
	}

	start := time.Now()
	progCtx, stopProg := context.WithCancel(ctx)
	progDone := make(chan struct{})
	go func() {
		defer close(progDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		show := func(ctx context.Context) {
			if o.Progress != nil {
				s, _ := countStates(ctx, n.DB)
				fmt.Fprintf(o.Progress, "zcgw bench: %5.1fs posted %d/%d, settled %d, failed POSTs %d\n",
					time.Since(start).Seconds(), posted.Load(), o.N, s["SETTLED"], failed.Load())
			}
		}
		for {
			select {
			case <-progCtx.Done():
				show(context.WithoutCancel(progCtx)) // the last line, also for a run shorter than a tick
				return
			case <-tick.C:
				show(progCtx)
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
		last, err := watch.start(ctx, n.DB)
		if err != nil {
			stopProg()
			<-progDone
			return rep, fmt.Errorf("bench: watch: %w", err)
		}
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go watch.run(watchCtx, n.DB, last)
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
	// The looks are themselves reads of every adapter and of zc.db (a scan
	// of each table), counted in the run's CPU and statements: one every
	// quiesceEvery, and none while no database committed since the last.
	deadline := time.Now().Add(o.Quiesce)
	seen := int64(-1)
	for {
		c := commitSum(dbs) // before the reads: a later commit makes the next look read again
		if c == seen {
			if time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			time.Sleep(quiesceEvery)
			continue
		}
		seen = c
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
		time.Sleep(quiesceEvery)
	}
	elapsed := time.Since(start)
	stopProg()
	<-progDone
	cpu1, err := cpuTime()
	if err != nil {
		return rep, err
	}
	after := counters(dbs)

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
	if len(o.Lanes) > 1 {
		byLane := map[string][]time.Duration{}
		settledIn := map[string]int{}
		for _, s := range sents {
			if at, ok := settledAt[s.txid]; ok && states[s.txid] == "SETTLED" {
				byLane[s.lane] = append(byLane[s.lane], at.Sub(s.at))
				settledIn[s.lane]++
			}
		}
		for _, l := range o.Lanes {
			rep.ByLane = append(rep.ByLane, LaneStat{Lane: l.Lane, Settled: settledIn[l.Lane], PostToSettled: percentiles(byLane[l.Lane])})
		}
	}
	rep.DBs, rep.CommitsPerTx, rep.StmtsPerTx = costs(dbs, before, after, rep.Settled)
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

// idle runs the idle mode's window: after idleGrace, o.Idle with no
// request, measuring the process's CPU (getrusage) over it. Progress is
// the elapsed time only: reading the node would cost the CPU measured.
func idle(ctx context.Context, o Options, rep *Report) error {
	if !clock.Sleep(ctx, idleGrace) {
		return ctx.Err()
	}
	cpu0, err := cpuTime()
	if err != nil {
		return err
	}
	start := time.Now()
	for left := o.Idle; left > 0; left -= time.Second {
		if !clock.Sleep(ctx, min(left, time.Second)) {
			return ctx.Err()
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "zcgw bench: idle %5.1fs of %s\n", time.Since(start).Seconds(), o.Idle)
		}
	}
	wall := time.Since(start)
	cpu1, err := cpuTime()
	if err != nil {
		return err
	}
	rep.IdleSeconds = wall.Seconds()
	rep.IdleCPUPercent = (cpu1 - cpu0).Seconds() / wall.Seconds() * 100
	rep.MaxIdleCPU = o.MaxIdleCPU
	rep.PeakRSSMB, err = peakRSSMB()
	return err
}

// terminalWatch tells closed-loop clients when their transfer has
// finished. One goroutine looks every watchEvery, and only when zc.db has
// committed since its last look (store.DB.Stats, an atomic read) does it
// read: the FinalityLog entries appended since its last read that made a
// transfer SETTLED or CANCELLED, a range of the event_seq index. So the
// watching costs the node nothing while it is idle and, under load, one
// read of the new entries per look, whatever the number of transfers in
// flight. (event_seq is allocated inside the single writer's transaction,
// so no entry below the last one read can commit later.)
type terminalWatch struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
	early   map[string]bool // terminal before its client began to wait
}

// watchEvery is how often the watcher looks at zc.db's commit counter.
const watchEvery = 5 * time.Millisecond

func newTerminalWatch() *terminalWatch {
	return &terminalWatch{waiting: map[string]chan struct{}{}, early: map[string]bool{}}
}

// wait blocks until txid is SETTLED or CANCELLED, or ctx ends.
func (w *terminalWatch) wait(ctx context.Context, txid string) {
	w.mu.Lock()
	if w.early[txid] {
		delete(w.early, txid)
		w.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	w.waiting[txid] = ch
	w.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// start reads where the FinalityLog ends now; run then watches from there
// until ctx ends.
func (w *terminalWatch) start(ctx context.Context, db *store.DB) (last int64, err error) {
	err = db.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(event_seq), 0) FROM FinalityLog`).Scan(&last)
	})
	return last, err
}

func (w *terminalWatch) run(ctx context.Context, db *store.DB, last int64) {
	seen := int64(-1)
	for clock.Sleep(ctx, watchEvery) {
		c := db.Stats().Commits // before the read: a later commit makes the next look read again
		if c == seen {
			continue
		}
		type entry struct {
			seq  int64
			txid string
		}
		var got []entry
		err := db.Read(ctx, func(tx *store.Tx) error {
			rows, err := tx.QueryContext(ctx, `SELECT event_seq, txid FROM FinalityLog
				WHERE event_seq > ? AND state_to IN ('SETTLED','CANCELLED') AND txid IS NOT NULL ORDER BY event_seq`, last)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var e entry
				if err := rows.Scan(&e.seq, &e.txid); err != nil {
					return err
				}
				got = append(got, e)
			}
			return rows.Err()
		})
		if err != nil {
			continue // the next look reads again
		}
		seen = c
		w.mu.Lock()
		for _, e := range got {
			last = e.seq
			if ch, ok := w.waiting[e.txid]; ok {
				close(ch)
				delete(w.waiting, e.txid)
			} else {
				w.early[e.txid] = true
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

// namedDB is one database file and its commit and statement counters.
type namedDB struct {
	name  string
	stats func() store.Snapshot
}

// storeLabel names where the node's databases are, the password masked.
func storeLabel(n *node.Node) string {
	if !n.Stores.Postgres() {
		return string(store.SQLite)
	}
	return fmt.Sprintf("%s %s (schemas %s*)", store.Postgres, store.Redact(n.Stores.URL), n.Stores.Prefix)
}

// databases lists every database of the node bench counts commits of:
// the coordinator's, the ingress nonces, the embedded MQ's queue store,
// the job ledger (a second handle on the coordinator's database: its own
// commits, the same WAL), and each bank's adapter and core. They are
// named as files (zc.db) on SQLite, by component (zc) on PostgreSQL.
func databases(n *node.Node) []namedDB {
	of := func(db *store.DB) func() store.Snapshot { return db.Stats }
	name := func(component string) string {
		if n.Stores.Postgres() {
			return component
		}
		return component + ".db"
	}
	out := []namedDB{{name(store.CoordinatorDB), of(n.DB)}, {name(store.NoncesDB), of(n.NonceDB)}}
	if t, ok := n.Transport.(*embedded.Transport); ok { // a broker's commits are not ours to count
		out = append(out, namedDB{name(store.MQDB), t.Stats})
	}
	out = append(out, namedDB{name(store.CoordinatorDB) + " job ledger", of(n.JobLedger.DB())})
	ids := make([]string, 0, len(n.Banks))
	for id := range n.Banks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		b := n.Banks[id]
		out = append(out, namedDB{"bank " + id + " adapter", of(b.Adapter.DB())}, namedDB{"bank " + id + " core", of(b.Core.DB())})
	}
	return out
}

// quiesceEvery is how often the end of a run looks whether every
// transfer is terminal and every posting applied.
const quiesceEvery = 20 * time.Millisecond

// commitSum is the commits of every database so far.
func commitSum(dbs []namedDB) int64 {
	var c int64
	for _, d := range dbs {
		c += d.stats().Commits
	}
	return c
}

func counters(dbs []namedDB) map[string]store.Snapshot {
	m := map[string]store.Snapshot{}
	for _, d := range dbs {
		m[d.name] = d.stats()
	}
	return m
}

// costs is each database's commits and statements between two counter
// reads, per settled transfer, and their sums over every database.
func costs(dbs []namedDB, before, after map[string]store.Snapshot, settled int) (out []DBCost, commitsPer, stmtsPer float64) {
	for _, d := range dbs {
		c := after[d.name].Commits - before[d.name].Commits
		st := after[d.name].Statements - before[d.name].Statements
		cost := DBCost{File: d.name, Commits: c, Statements: st}
		if settled > 0 {
			cost.CommitsPerSettle = float64(c) / float64(settled)
			cost.FsyncsPerSettle = cost.CommitsPerSettle
			cost.StatementsPerSettle = float64(st) / float64(settled)
			commitsPer += cost.CommitsPerSettle
			stmtsPer += cost.StatementsPerSettle
		}
		out = append(out, cost)
	}
	return out, commitsPer, stmtsPer
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

// startPeer starts node k (from 2) of a several-node run: its own data
// folder under DataDir/nodes/k, the run's configuration (so the same
// shared store), the first node's ZC signing key.
func startPeer(ctx context.Context, o Options, cfg node.Config, k int) (*node.Node, error) {
	dir := filepath.Join(o.DataDir, "nodes", strconv.Itoa(k))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("bench: node %d: %w", k, err)
	}
	key, err := os.ReadFile(filepath.Join(o.DataDir, node.SigningKeyFile))
	if err != nil {
		return nil, fmt.Errorf("bench: node %d: the first node's signing key: %w", k, err)
	}
	if err := os.WriteFile(filepath.Join(dir, node.SigningKeyFile), key, 0o600); err != nil {
		return nil, fmt.Errorf("bench: node %d: %w", k, err)
	}
	n, err := node.Start(ctx, node.Options{DataDir: dir, Config: &cfg})
	if err != nil {
		return nil, fmt.Errorf("bench: start node %d: %w", k, err)
	}
	return n, nil
}
