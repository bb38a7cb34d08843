package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
)

func TestHealthzAndReadyz(t *testing.T) {
	var mqErr error
	f := newFixture(t, func(c *Config) {
		c.Ready = []ReadyCheck{{Name: "mq:001", Check: func(context.Context) error { return mqErr }}}
	})
	if r := f.do("GET", "/healthz", nil, ""); r.status != 200 || r.json(t)["status"] != "alive" {
		t.Fatalf("healthz: %d %s", r.status, r.body)
	}
	ready := func(wantStatus int) Readiness {
		t.Helper()
		r := f.do("GET", "/readyz", nil, "")
		var body Readiness
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("readyz body %s: %v", r.body, err)
		}
		if r.status != wantStatus || body.Ready != (wantStatus == 200) {
			t.Fatalf("readyz: %d %s, want %d", r.status, r.body, wantStatus)
		}
		return body
	}
	body := ready(200)
	names := ""
	for _, c := range body.Checks {
		names += c.Name + " "
		if !c.OK {
			t.Fatalf("check %+v failed", c)
		}
	}
	if names != "db:zc.db mq:001 mode " || !body.Writable || len(body.Modes) != 1 || body.Modes[0] != "NORMAL" {
		t.Fatalf("readyz body %+v", body)
	}

	// A failing dependency: 503, the check named with its error; liveness
	// is unaffected.
	mqErr = errors.New("MQRC 2009: connection broken")
	body = ready(503)
	if c := body.Checks[1]; c.Name != "mq:001" || c.OK || c.Error != mqErr.Error() {
		t.Fatalf("failing check reported as %+v", c)
	}
	if r := f.do("GET", "/healthz", nil, ""); r.status != 200 {
		t.Fatalf("healthz while not ready: %d", r.status)
	}
	mqErr = nil

	// BCP: still ready (reads are served), not writable.
	if r := f.do("POST", "/internal/system-mode/bcp-activate", map[string]string{HeaderCronSecret: cron}, `{"operator":"ops","reason":"drill"}`); r.status != 200 {
		t.Fatalf("bcp-activate: %d %s", r.status, r.body)
	}
	body = ready(200)
	if body.Writable || len(body.Modes) != 1 || body.Modes[0] != "BCP_READONLY" {
		t.Fatalf("readyz in BCP: %+v", body)
	}

	// The coordinator database closed: not ready.
	other, err := store.OpenCoordinator(context.Background(), t.TempDir()+"/x.db")
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	f.srv.cfg.Ready = append(f.srv.cfg.Ready, DBWritable("adapter-001.db", other))
	body = ready(503)
	if c := body.Checks[2]; c.Name != "db:adapter-001.db" || c.OK || c.Error == "" {
		t.Fatalf("closed database reported as %+v", c)
	}
}

func TestSystemModeRoutes(t *testing.T) {
	f := newFixture(t, nil)
	sec := map[string]string{HeaderCronSecret: cron}
	post := func(path, body string, status int, code string) map[string]any {
		t.Helper()
		r := f.do("POST", "/internal/system-mode/"+path, sec, body)
		if r.status != status || r.code(t) != code {
			t.Fatalf("%s %s: %d %s, want %d %s", path, body, r.status, r.body, status, code)
		}
		return r.json(t)
	}
	if r := f.do("POST", "/internal/system-mode/bcp-activate", nil, `{"operator":"x","reason":"y"}`); r.status != 403 {
		t.Fatalf("without the cron secret: %d", r.status)
	}
	post("bcp-activate", `{"operator":"ops"}`, 400, "MISSING_FIELD")
	post("bcp-activate", `{"operator":"ops","reason":"x","by":"me"}`, 400, "INVALID_REQUEST")
	if m := post("bcp-activate", `{"operator":"ops","reason":"vendor outage"}`, 200, ""); m["changed"] != true {
		t.Fatalf("activate: %v", m)
	}
	if m := post("bcp-activate", `{"operator":"ops","reason":"again"}`, 200, ""); m["changed"] != false {
		t.Fatalf("second activate: %v", m)
	}
	r := f.do("GET", "/internal/system-mode", sec, "")
	m := r.json(t)
	if r.status != 200 || m["writable"] != false {
		t.Fatalf("GET system-mode: %d %s", r.status, r.body)
	}

	// Quorum reports: counts required, ReconcileQuorum decides.
	post("quorum-report", `{"replicas_configured":3}`, 400, "MISSING_FIELD")
	post("quorum-report", `{"replicas_up":4,"replicas_configured":3}`, 400, "INVALID_REQUEST")
	if m := post("quorum-report", `{"replicas_up":1,"replicas_configured":3,"reporter":"mon-1"}`, 200, ""); m["changed"] != true {
		t.Fatalf("quorum lost: %v", m)
	}
	if m := post("quorum-report", `{"replicas_up":0,"replicas_configured":3}`, 200, ""); m["changed"] != false {
		t.Fatalf("still lost: %v", m)
	}
	if m := post("bcp-deactivate", `{"operator":"ops","reason":"vendor back"}`, 200, ""); m["changed"] != true ||
		m["mode"].(map[string]any)["writable"] != false {
		t.Fatalf("BCP off while quorum lost must stay read-only: %v", m)
	}
	m = post("quorum-report", `{"replicas_up":2,"replicas_configured":3}`, 200, "")
	if mode := m["mode"].(map[string]any); m["changed"] != true || mode["writable"] != true {
		t.Fatalf("quorum back: %v", m)
	}

	var got []string
	err := f.db.Read(f.ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(f.ctx, `SELECT event_type FROM FinalityLog WHERE txid IS NULL AND gtid IS NULL ORDER BY event_seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			rows.Scan(&s)
			got = append(got, s)
		}
		return rows.Err()
	})
	want := "SystemBcpActivated SystemQuorumLossActivated SystemBcpDeactivated SystemQuorumLossCleared"
	if err != nil || strings.Join(got, " ") != want {
		t.Fatalf("GLOBAL chain %v %v, want %s", got, err, want)
	}
	if v, err := finality.VerifyChain(f.ctx, f.db, finality.GlobalChain); err != nil || !v.OK() || v.Entries != 4 {
		t.Fatalf("verify %+v %v", v, err)
	}
}

// N callers toggle BCP through the routes at once: the answers that say
// changed are exactly the GLOBAL-chain events, which alternate.
func TestBCPRoutesRace(t *testing.T) {
	f := newFixture(t, nil)
	const n, rounds = 6, 8
	var wg sync.WaitGroup
	var changed atomic.Int64
	errs := make(chan string, n*rounds)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				path := "/internal/system-mode/bcp-activate"
				if (g+i)%2 == 1 {
					path = "/internal/system-mode/bcp-deactivate"
				}
				r := f.do("POST", path, map[string]string{HeaderCronSecret: cron}, fmt.Sprintf(`{"operator":"op-%d","reason":"race"}`, g))
				var ch ModeChange
				if r.status != 200 || json.Unmarshal(r.body, &ch) != nil {
					errs <- fmt.Sprintf("%s: %d %s", path, r.status, r.body)
					return
				}
				if ch.Changed {
					changed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	var got []string
	err := f.db.Read(f.ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(f.ctx, `SELECT event_type FROM FinalityLog WHERE txid IS NULL AND gtid IS NULL ORDER BY event_seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return err
			}
			got = append(got, s)
		}
		return rows.Err()
	})
	if err != nil || int64(len(got)) != changed.Load() || len(got) == 0 {
		t.Fatalf("%d GLOBAL events for %d changed answers (%v)", len(got), changed.Load(), err)
	}
	for i, e := range got {
		want := map[bool]string{true: "SystemBcpActivated", false: "SystemBcpDeactivated"}[i%2 == 0]
		if e != want {
			t.Fatalf("GLOBAL entry %d is %s, want %s", i, e, want)
		}
	}
}
