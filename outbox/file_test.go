package outbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
)

const (
	acctX = "100-1-0000001"
	acctY = "100-1-0000002"
)

func filePost(ref, acct string, kind Kind, amt int64) Posting {
	p := post(ref, acct, kind, amt)
	p.Route = RouteFILE
	return p
}

func (r *rig) take(t testing.TB, fileID string, limit int) int {
	t.Helper()
	var n int
	if err := r.db.Write(context.Background(), func(tx *store.Tx) error {
		var err error
		n, err = r.ob.TakeForFile(context.Background(), tx, "001", fileID, limit)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func (r *rig) settle(ref string, applied bool, reason, coreRef string) error {
	return r.db.Write(context.Background(), func(tx *store.Tx) error {
		return r.ob.SettleFromFile(context.Background(), tx, ref, applied, reason, coreRef)
	})
}

func (r *rig) sweepAll(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.ob.Drain(ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(time.Hour)
	if _, err := r.ob.RecoverStaleClaims(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ob.ResolveInDoubt(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestFileRouteValidation(t *testing.T) {
	r := newRig(t, nil)
	for _, c := range []struct {
		name string
		p    Posting
		code string
	}{
		{"account not BBB-T-NNNNNNN", filePost("F1", "ACC-1", Credit, 1), "INVALID_REQUEST"},
		{"txid too long for the file", func() Posting {
			p := filePost("F2", acctX, Credit, 1)
			p.TxID = fmt.Sprintf("%037d", 1)
			return p
		}(), "INVALID_REQUEST"},
		{"unknown route", func() Posting { p := post("F3", acctX, Credit, 1); p.Route = "SMTP"; return p }(), "INVALID_REQUEST"},
	} {
		err := r.db.Write(context.Background(), func(tx *store.Tx) error {
			_, err := r.ob.Enqueue(context.Background(), tx, c.p)
			return err
		})
		if domainerr.Code(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	ids := r.enqueue(t, filePost("F4", acctX, Credit, 1), post("M1", "ACC-9", Credit, 1))
	if e := r.status(t, ids[0]); e.Posting.Route != RouteFILE || e.Status != Pending {
		t.Fatalf("FILE row %+v", e)
	}
	if e := r.status(t, ids[1]); e.Posting.Route != RouteMQ {
		t.Fatalf("default route %q, want MQ", e.Posting.Route)
	}
}

// TestFileRowsAreNeverSentOrInquired: with the core offline and then
// online, Drain, RecoverStaleClaims and ResolveInDoubt never hand a FILE
// posting to the core nor ask about it, whether PENDING or IN_FILE; the
// FILE posting still holds back the later MQ posting of its account.
func TestFileRowsAreNeverSentOrInquired(t *testing.T) {
	r := newRig(t, map[string]int64{acctX: 1000, acctY: 1000})
	r.core.offline = true
	r.core.lookupErr = fmt.Errorf("core offline")
	ids := r.enqueue(t,
		filePost("F1", acctX, Debit, 300),
		post("M1", acctX, Credit, 50), // behind F1
		post("M2", acctY, Credit, 70),
	)
	r.sweepAll(t)
	if r.core.applies != 1 || r.core.lookups != 0 { // M2 tried once, not sent
		t.Fatalf("offline: %d applies, %d lookups; want 1 (M2), 0", r.core.applies, r.core.lookups)
	}
	for i, want := range []Status{Pending, Pending, Pending} {
		if e := r.status(t, ids[i]); e.Status != want || e.Sends != 0 {
			t.Fatalf("row %d: %s sends %d, want %s 0", i, e.Status, e.Sends, want)
		}
	}
	if n := r.take(t, "001/2026-12-02/1", 100); n != 1 {
		t.Fatalf("took %d, want 1", n)
	}
	r.core.offline, r.core.lookupErr = false, nil
	r.sweepAll(t)
	if got := r.core.timesApplied("F1") + r.core.timesApplied("M1"); got != 0 {
		t.Fatalf("F1/M1 reached the core %d times while F1 is in a file", got)
	}
	if r.core.timesApplied("M2") != 1 || r.core.lookups != 0 {
		t.Fatalf("M2 applied %d, lookups %d", r.core.timesApplied("M2"), r.core.lookups)
	}
	if e := r.status(t, ids[0]); e.Status != InFile || e.FileID != "001/2026-12-02/1" || e.FileSeq != 1 || e.Sends != 0 {
		t.Fatalf("F1 %+v", e)
	}
	if e := r.status(t, ids[1]); e.Status != Pending {
		t.Fatalf("M1 %s, want PENDING behind the file", e.Status)
	}
	// The core's result file applies F1: now M1 may go, exactly once.
	if err := r.settle("F1", true, "", "J000000000001"); err != nil {
		t.Fatal(err)
	}
	r.sweepAll(t)
	if r.core.timesApplied("M1") != 1 || r.core.timesApplied("F1") != 0 {
		t.Fatalf("M1 applied %d, F1 over MQ %d", r.core.timesApplied("M1"), r.core.timesApplied("F1"))
	}
	e := r.status(t, ids[0])
	if e.Status != Applied || e.Sends != 1 || e.CoreRef != "J000000000001" || e.AppliedAt.IsZero() {
		t.Fatalf("F1 after settle %+v", e)
	}
}

// TestPerAccountOrderAcrossRoutes: M1 (MQ), F1 (FILE), M2 (MQ) on one
// account reach the core in that order although F1 goes by file.
func TestPerAccountOrderAcrossRoutes(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, map[string]int64{acctX: 1000})
	r.core.offline = true
	r.enqueue(t, post("M1", acctX, Credit, 10), filePost("F1", acctX, Debit, 20), post("M2", acctX, Credit, 30))
	if _, err := r.ob.Drain(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if n := r.take(t, "FILE-1", 10); n != 0 {
		t.Fatalf("F1 filed while M1 (earlier, MQ) is unsent: %d", n)
	}
	r.core.offline = false
	if res, err := r.ob.Drain(ctx, 10); err != nil || res.Applied != 1 {
		t.Fatalf("drain %+v %v: want M1 only", res, err)
	}
	if n := r.take(t, "FILE-1", 10); n != 1 {
		t.Fatalf("took %d, want F1", n)
	}
	if res, err := r.ob.Drain(ctx, 10); err != nil || res.Claimed != 0 {
		t.Fatalf("drain %+v %v: M2 must wait for F1's file", res, err)
	}
	if err := r.settle("F1", true, "", ""); err != nil {
		t.Fatal(err)
	}
	if res, err := r.ob.Drain(ctx, 10); err != nil || res.Applied != 1 {
		t.Fatalf("drain %+v %v: want M2", res, err)
	}
	if got := fmt.Sprint(r.core.order[acctX]); got != "[M1 M2]" {
		t.Fatalf("MQ order %s", got)
	}
	// EntityStateLog order of the three: M1 applied, then F1 applied, then M2.
	var seq []string
	if err := r.db.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT o.ref FROM EntityStateLog l JOIN AdapterOutbox o ON l.entity_id = CAST(o.id AS TEXT)
			WHERE l.entity_type = 'OUTBOX' AND l.state_to = 'APPLIED' ORDER BY l.rowid`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return err
			}
			seq = append(seq, s)
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seq) != "[M1 F1 M2]" {
		t.Fatalf("applied in order %v, want [M1 F1 M2]", seq)
	}
}

// TestSettleFromFile: numbering and sides of a file, APPLIED and BLOCKED
// answers, one Case per refusal (detection path OVERNIGHT_RESULT), and an
// answer applied twice is refused.
func TestSettleFromFile(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	ids := r.enqueue(t, filePost("F1", acctX, Credit, 500), filePost("F2", acctY, Debit, 900))
	rev := filePost("F3", acctX, Reversal, 500)
	rev.ReversalOf = "F1"
	r.enqueue(t, rev)
	if n := r.take(t, "K1", 100); n != 3 {
		t.Fatalf("took %d", n)
	}
	if n := r.take(t, "K2", 100); n != 0 {
		t.Fatalf("second take %d, want 0", n)
	}
	var es []FileEntry
	if err := r.db.Read(ctx, func(tx *store.Tx) error {
		var err error
		es, err = r.ob.FileEntries(ctx, tx, "K1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got string
	for _, e := range es {
		got += fmt.Sprintf("%d:%s:%c ", e.Seq, e.Posting.Ref, e.Side)
	}
	if got != "1:F1:C 2:F2:D 3:F3:D " {
		t.Fatalf("file entries %q", got)
	}
	if err := r.settle("F1", true, "", "J1"); err != nil {
		t.Fatal(err)
	}
	if err := r.settle("F2", false, "INSUFFICIENT_FUNDS", ""); err != nil {
		t.Fatal(err)
	}
	if err := r.settle("F3", true, "", "J2"); err != nil {
		t.Fatal(err)
	}
	if err := r.settle("F1", false, "BANK_ERROR", ""); domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("second answer: %v", err)
	}
	// The same second answer carrying the posting's id as FileEntriesAfter
	// read it (no lookup by ref): still refused by the guarded UPDATE, and
	// nothing changes.
	if err := r.db.Write(ctx, func(tx *store.Tx) error {
		return r.ob.SettleFromFileAll(ctx, tx, []FileAnswer{{Ref: "F1", Applied: false, Reason: "BANK_ERROR", ID: es[0].ID, TxID: es[0].Posting.TxID}})
	}); domainerr.Code(err) != "STATE_GUARD" {
		t.Fatalf("second answer by id: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := r.ob.OpenMissingCases(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.cases.reqs) != 1 || r.cases.reqs[0].DetectionPath != "OVERNIGHT_RESULT" ||
		r.cases.reqs[0].ReasonCode != "INSUFFICIENT_FUNDS" || r.cases.reqs[0].Ref != "F2" {
		t.Fatalf("cases %+v", r.cases.reqs)
	}
	blocked, err := r.ob.List(ctx, Filter{Status: Blocked})
	if err != nil || len(blocked) != 1 || blocked[0].CaseID == "" || blocked[0].ReasonCode != "INSUFFICIENT_FUNDS" {
		t.Fatalf("blocked %+v %v", blocked, err)
	}
	if c, _ := r.ob.Counts(ctx); c[Applied] != 2 || c[Blocked] != 1 || c[InFile] != 0 {
		t.Fatalf("counts %v", c)
	}
	// The state log of a filed and refused posting: the audit trail's rows
	// and payload bytes, as the per-row maps wrote them.
	var logGot string
	for _, e := range r.stateLog(t, ids[1]) {
		logGot += fmt.Sprintf("%s %s>%s %s %s|", e.event, e.from, e.to, e.reason, e.payload)
	}
	if want := `OutboxEnqueued >PENDING  {"ref":"F2","route":"FILE","txid":"TX-F2"}|OutboxFiled PENDING>IN_FILE  {"file_id":"K1","ref":"F2"}|` +
		`OutboxFileBlocked IN_FILE>BLOCKED INSUFFICIENT_FUNDS {"ref":"F2","txid":"TX-F2"}|` +
		`OutboxCaseOpened BLOCKED>BLOCKED INSUFFICIENT_FUNDS {"case_id":"CASE-1","ref":"F2"}|`; logGot != want {
		t.Fatalf("state log of F2:\n got %s\nwant %s", logGot, want)
	}
}

// TestTakeForFileRacesDrain races drainers against a file cut: every MQ
// posting is applied once, no FILE posting ever reaches the MQ core, and
// every FILE posting is in the file once. Run with -race.
func TestTakeForFileRacesDrain(t *testing.T) {
	r := newRig(t, nil)
	var ps []Posting
	for i := 0; i < 40; i++ {
		acct := fmt.Sprintf("100-1-%07d", i%5+1)
		if i%2 == 0 {
			ps = append(ps, filePost(fmt.Sprintf("F%02d", i), acct, Credit, 10))
		} else {
			ps = append(ps, post(fmt.Sprintf("M%02d", i), acct, Credit, 10))
		}
	}
	r.enqueue(t, ps...)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				if g == 0 {
					if err := r.db.Write(ctx, func(tx *store.Tx) error {
						_, err := r.ob.TakeForFile(ctx, tx, "001", fmt.Sprintf("K%d", k), 100)
						return err
					}); err != nil {
						t.Error(err)
					}
				} else if _, err := r.ob.Drain(ctx, 100); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	for _, p := range ps {
		n := r.core.timesApplied(p.Ref)
		if p.Route == RouteFILE && n != 0 {
			t.Fatalf("FILE posting %s sent over MQ %d times", p.Ref, n)
		}
		if p.Route != RouteFILE && n > 1 {
			t.Fatalf("MQ posting %s applied %d times", p.Ref, n)
		}
	}
	var filed, sent, overtaken int
	if err := r.db.Read(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT file_id || '/' || file_seq) FROM AdapterOutbox
			WHERE file_id IS NOT NULL AND route = 'FILE' AND status = 'IN_FILE'`).Scan(&filed, &sent); err != nil {
			return err
		}
		if filed != sent {
			return fmt.Errorf("%d filed rows but %d distinct file details", filed, sent)
		}
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterOutbox WHERE route = 'FILE' AND (sends > 0 OR status NOT IN ('PENDING','IN_FILE'))`).Scan(&sent); err != nil {
			return err
		}
		// No MQ posting was applied ahead of an earlier (unanswered) FILE
		// posting of its account.
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM AdapterOutbox m JOIN AdapterOutbox f
			ON f.account = m.account AND f.id < m.id AND f.route = 'FILE'
			WHERE m.route = 'MQ' AND m.status = 'APPLIED'`).Scan(&overtaken)
	}); err != nil {
		t.Fatal(err)
	}
	// Accounts 1, 3 and 5 start with a FILE posting: at least those are filed.
	if filed < 3 || sent != 0 || overtaken != 0 {
		t.Fatalf("filed %d (want >= 3), FILE rows sent or settled %d, MQ postings ahead of a FILE one %d", filed, sent, overtaken)
	}
}
