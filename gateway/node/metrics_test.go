package node

import (
	"context"
	"fmt"
	"github.com/zcgw/zcgw/formats/coremsg"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/store"
)

// A real node's /internal/metrics reports, read at scrape time: each
// bank's open outbox postings by status, open Cases by status, each job's
// last run and its status, each core queue's depth and the event outbox's
// unsent rows and the age of the oldest one, with the exact values of the
// rows behind them.
func TestMetricsGaugesFromARealNode(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	clk := clock.NewManual(t0)
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	// No workers: no outbox loop drains the rows written below.
	n, err := Start(ctx, Options{DataDir: scratch(t), Config: &cfg, Clock: clk, NoWorkers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	now := clock.Stamp(t0)

	// Outbox rows of bank 001 in every status; bank 002 has none.
	statuses := []string{"PENDING", "PENDING", "CLAIMED", "IN_DOUBT", "BLOCKED", "BLOCKED", "BLOCKED", "APPLIED", "WRITTEN_OFF"}
	if err := n.Banks["001"].Adapter.DB().Write(ctx, func(tx *store.Tx) error {
		for i, s := range statuses {
			if _, err := tx.ExecContext(ctx, `INSERT INTO AdapterOutbox (ref, txid, bank, account, kind, amount, status, created_at, updated_at)
				VALUES (?, ?, '001', '001-1-0000001', 'DEBIT', 100, ?, ?, ?)`, fmt.Sprintf("REF-%d", i), fmt.Sprintf("TX-M-%d", i), s, now, now); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Cases: two OPEN, one ESCALATED, one RESOLVED (not open).
	if err := n.DB.Write(ctx, func(tx *store.Tx) error {
		for i, s := range []string{"OPEN", "OPEN", "ESCALATED", "RESOLVED"} {
			if _, err := tx.ExecContext(ctx, `INSERT INTO Cases (case_id, state, reason_code, opened_by, sla_deadline, created_at, updated_at)
				VALUES (?, ?, 'CORE_REFUSED', 'ZC', ?, ?, ?)`, fmt.Sprintf("CASE-M-%d", i), s, now, now, now); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A job run through the cron route.
	secret := map[string]string{"X-Cron-Secret": n.Config.CronSecret}
	if a := n.do(t, "POST", "/internal/cron/jobs-ledger-prune", "", secret, ""); a.status != 200 || !strings.Contains(string(a.body), "COMPLETED") {
		t.Fatalf("job: %d %s", a.status, a.body)
	}
	// Three messages on bank 002's backout queue (nobody consumes it).
	backout := coremsg.QueuesFor("002").Backout
	conn, err := n.Transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sess, err := conn.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := sess.Put(ctx, backout, &mq.Message{Body: []byte("poison")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sess.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Unsent events (no Kafka configured): the two GLOBAL-chain events of
	// BCP on and off, written at t0; the scrape happens 42s later.
	for _, r := range []string{"bcp-activate", "bcp-deactivate"} {
		if a := n.do(t, "POST", "/internal/system-mode/"+r, "", secret, `{"operator":"ops-1","reason":"metrics test"}`); a.status != 200 {
			t.Fatalf("%s: %d %s", r, a.status, a.body)
		}
	}
	var unsent int64
	var oldest string
	if err := n.DB.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*), MIN(created_at) FROM EventOutbox WHERE outbox_seq > (SELECT acked_seq FROM EventPublisher)`).Scan(&unsent, &oldest)
	}); err != nil {
		t.Fatal(err)
	}
	if unsent != 2 || oldest != now {
		t.Fatalf("setup: %d unsent events, oldest %q, want some at %s", unsent, oldest, now)
	}
	clk.Advance(42 * time.Second)

	m := n.do(t, "GET", "/internal/metrics", "", secret, "")
	if m.status != 200 {
		t.Fatalf("metrics: %d %s", m.status, m.body)
	}
	rq, pq := coremsg.QueuesFor("002").Request, coremsg.QueuesFor("002").Reply
	for _, want := range []string{
		`zcgw_outbox_postings{bank="001",status="PENDING"} 2`,
		`zcgw_outbox_postings{bank="001",status="CLAIMED"} 1`,
		`zcgw_outbox_postings{bank="001",status="IN_DOUBT"} 1`,
		`zcgw_outbox_postings{bank="001",status="BLOCKED"} 3`,
		`zcgw_outbox_postings{bank="002",status="PENDING"} 0`,
		`zcgw_outbox_postings{bank="002",status="BLOCKED"} 0`,
		`zcgw_cases_open{status="OPEN"} 2`,
		`zcgw_cases_open{status="ESCALATED"} 1`,
		`zcgw_cases_open{status="IN_PROGRESS"} 0`,
		`zcgw_job_last_run{job="jobs-ledger-prune",status="COMPLETED"} 1`,
		`zcgw_job_last_run{job="jobs-ledger-prune",status="FAILED"} 0`,
		`zcgw_job_last_run_started_seconds{job="jobs-ledger-prune"} ` + strconv.FormatFloat(float64(t0.Unix()), 'g', -1, 64),
		fmt.Sprintf(`zcgw_mq_queue_depth{bank="002",queue=%q} 3`, backout),
		fmt.Sprintf(`zcgw_mq_queue_depth{bank="002",queue=%q} 0`, rq),
		fmt.Sprintf(`zcgw_mq_queue_depth{bank="002",queue=%q} 0`, pq),
		fmt.Sprintf("zcgw_event_outbox_unsent %d", unsent),
		"zcgw_event_outbox_oldest_unsent_age_seconds 42",
	} {
		if !strings.Contains(string(m.body), want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, absent := range []string{`status="APPLIED"`, `status="WRITTEN_OFF"`, `zcgw_cases_open{status="RESOLVED"}`} {
		if strings.Contains(string(m.body), absent) {
			t.Errorf("metrics report %s", absent)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", m.body)
	}
}
