package node

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/store"
)

// BenchmarkSettledTransfersHTTP measures end-to-end settled EXPRESS
// transfers per second over HTTP: POST /api/transfers (API key), the
// orchestrator workers driving each transfer through signed HTTP bank
// ingress into the in-process adapters, whose outboxes drain to the
// simulated cores over the embedded MQ transport. Latency is POST sent ->
// SETTLED observed (the Transactions row is polled every 2ms). Reported:
// settled/s, p50_ms, p99_ms, and SQL statements and commits per settled
// transfer on the coordinator database and on all databases of the node.
//
//	go test ./gateway/node -run '^$' -bench SettledTransfersHTTP -benchtime 200x
func BenchmarkSettledTransfersHTTP(b *testing.B) {
	b.Run("closed-loop", func(b *testing.B) { benchTransfers(b, 1, true) })
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("open/clients=%d", conc), func(b *testing.B) { benchTransfers(b, conc, false) })
	}
}

func (n *Node) dbStats() (coordStmts, coordCommits, allStmts, allCommits int64) {
	s := n.DB.Stats()
	coordStmts, coordCommits = s.Statements, s.Commits
	allStmts, allCommits = s.Statements, s.Commits
	for _, bk := range n.Banks {
		for _, db := range []*store.DB{bk.Adapter.DB(), bk.Core.DB()} {
			st := db.Stats()
			allStmts += st.Statements
			allCommits += st.Commits
		}
	}
	return
}

// benchTransfers posts b.N transfers from clients goroutines. closed: each
// client waits for its transfer to settle before posting the next (pure
// latency, no queueing); open: clients post as fast as the gateway accepts
// (throughput; latency then includes the queue behind the workers).
func benchTransfers(b *testing.B, clients int, closed bool) {
	n := start(b)
	key := n.Config.KeyFor("001")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	type sent struct {
		txid string
		at   time.Time
	}
	var (
		mu      sync.Mutex
		pending = map[string]time.Time{}
		lat     []time.Duration
	)
	post := func(i int) {
		acct := i%3 + 1
		body := transferBody(fmt.Sprintf("bench-%d-%d", clients, i), 100, fmt.Sprintf("h:001-%04d", acct), fmt.Sprintf("h:002-%04d", acct))
		req, _ := http.NewRequest("POST", n.URL+"/api/transfers", strings.NewReader(body))
		req.Header.Set("X-Api-Key", key)
		req.Header.Set("Content-Type", "application/json")
		t := time.Now()
		res, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		var a answer
		a.status = res.StatusCode
		buf := make([]byte, 4096)
		k, _ := res.Body.Read(buf)
		res.Body.Close()
		a.body = buf[:k]
		if a.status != 201 {
			b.Errorf("POST: %d %s", a.status, a.body)
			return
		}
		mu.Lock()
		pending[a.field("txid")] = t
		mu.Unlock()
		for closed {
			mu.Lock()
			_, waiting := pending[a.field("txid")]
			mu.Unlock()
			if !waiting {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchDone := make(chan struct{})
	go func() { // observe SETTLED
		defer close(watchDone)
		for ctx.Err() == nil {
			var settled []string
			n.DB.Read(ctx, func(tx *store.Tx) error {
				rows, err := tx.QueryContext(ctx, `SELECT txid FROM Transactions WHERE state = 'SETTLED'`)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var id string
					rows.Scan(&id)
					settled = append(settled, id)
				}
				return nil
			})
			now := time.Now()
			mu.Lock()
			for _, id := range settled {
				if t, ok := pending[id]; ok {
					lat = append(lat, now.Sub(t))
					delete(pending, id)
				}
			}
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	cs0, cc0, as0, ac0 := n.dbStats()
	b.ResetTimer()
	start := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ { // clients posting goroutines
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				post(i)
			}
		}()
	}
	for i := 0; i < b.N; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		left := len(pending)
		done := len(lat)
		mu.Unlock()
		if left == 0 && done == b.N {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d transfers not SETTLED after 2 minutes", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	<-watchDone
	cs1, cc1, as1, ac1 := n.dbStats()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	N := float64(b.N)
	b.ReportMetric(N/elapsed.Seconds(), "settled/s")
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
	b.ReportMetric(float64(cs1-cs0)/N, "zc_stmts/transfer")
	b.ReportMetric(float64(cc1-cc0)/N, "zc_commits/transfer")
	b.ReportMetric(float64(as1-as0)/N, "all_stmts/transfer")
	b.ReportMetric(float64(ac1-ac0)/N, "all_commits/transfer")
}
