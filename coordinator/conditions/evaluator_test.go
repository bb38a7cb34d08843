package conditions

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/store/storetest"
)

// t0 is 2026-12-03 10:00 JST.
var t0 = time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)

type env struct {
	t    testing.TB
	ctx  context.Context
	db   *store.DB
	clk  *clock.Manual
	tpls *Templates
	atts *Attestations
	ev   *Evaluator
	priv map[string]ed25519.PrivateKey // key_id -> private key
	n    int
}

func newEnv(t *testing.T) *env { return newEnvOn(t, storetest.SQLite) }

// newEnvOn is newEnv on backend b (storetest.Each runs a test on SQLite
// and, when a server answers, PostgreSQL).
func newEnvOn(t testing.TB, b storetest.Backend) *env {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, b, "zc", store.Schema)
	clk := clock.NewManual(t0)
	e := &env{t: t, ctx: ctx, db: db, clk: clk, tpls: NewTemplates(db, clk), atts: NewAttestations(db, clk),
		ev: NewEvaluator(db, clk, nil), priv: map[string]ed25519.PrivateKey{}}
	reg := signing.NewRegistry(db, clk)
	// Operator OPA has two keys; OPB and OPC one each; KEY-BANK is a
	// participant key, not an attester.
	for _, k := range []struct{ id, typ, ref string }{{"KEY-A1", OwnerAttester, "OPA"}, {"KEY-A2", OwnerAttester, "OPA"},
		{"KEY-B", OwnerAttester, "OPB"}, {"KEY-C", OwnerAttester, "OPC"}, {"KEY-BANK", signing.OwnerParticipant, "OPA"}} {
		pub, priv, _ := ed25519.GenerateKey(nil)
		e.priv[k.id] = priv
		if err := reg.Register(ctx, signing.Key{KeyID: k.id, OwnerType: k.typ, OwnerRef: k.ref, PublicKey: pub, ValidFrom: t0.Add(-24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) template(t Template) {
	e.t.Helper()
	if _, err := e.tpls.Register(e.ctx, t); err != nil {
		e.t.Fatalf("register %s: %v", t.TemplateID, err)
	}
}

// att is a signed attestation by key about subject under tpl.
func (e *env) att(tpl, subject, key, result string, at time.Time) Attestation {
	e.n++
	h := sha256.Sum256([]byte(fmt.Sprintf("statement %d", e.n)))
	a := Attestation{AttestationID: fmt.Sprintf("ATT-%d", e.n), TemplateID: tpl, Subject: subject, StatementHash: hex.EncodeToString(h[:]),
		VerifiedResult: result, KeyID: key, Nonce: fmt.Sprintf("n-%d", e.n), OccurredAt: clock.Stamp(at)}
	if err := a.Sign(e.priv[key]); err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) record(a Attestation) {
	e.t.Helper()
	if err := e.atts.Record(e.ctx, a); err != nil {
		e.t.Fatalf("record %s: %v", a.AttestationID, err)
	}
}

func (e *env) eval(expr, subject string) Decision {
	e.t.Helper()
	d, err := e.ev.Evaluate(e.ctx, expr, Inputs{Subject: subject})
	if err != nil {
		e.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return d
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.Read(e.ctx, func(tx *store.Tx) error { return tx.QueryRowContext(e.ctx, q, args...).Scan(&n) }); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestRecordAttestationChecks(t *testing.T) {
	e := newEnv(t)
	e.template(Template{TemplateID: "TPL-INSPECT", AllowedAttesterScope: []string{"OPA", "OPB"}})
	e.template(Template{TemplateID: "TPL-OFF", AllowedAttesterScope: []string{"OPA"}, Status: TemplateInactive})
	e.template(Template{TemplateID: "TPL-TIME", LedgerPredicate: &Predicate{Type: TimeAfter, At: "2026-12-03T12:00"}})
	good := e.att("TPL-INSPECT", "HTLC-1", "KEY-A1", ResultPass, t0)
	mut := func(f func(*Attestation), resign bool) Attestation {
		a := good
		f(&a)
		if resign {
			_ = a.Sign(e.priv[a.KeyID])
		}
		return a
	}
	cases := []struct {
		name string
		a    Attestation
		code string
	}{
		{"bad hash", mut(func(a *Attestation) { a.StatementHash = "abc" }, true), "ATTESTATION_INVALID"},
		{"upper-case hash", mut(func(a *Attestation) { a.StatementHash = strings.ToUpper(a.StatementHash) }, true), "ATTESTATION_INVALID"},
		{"bad result", mut(func(a *Attestation) { a.VerifiedResult = "MAYBE" }, true), "ATTESTATION_INVALID"},
		{"no nonce", mut(func(a *Attestation) { a.Nonce = "" }, true), "MISSING_FIELD"},
		{"unknown template", mut(func(a *Attestation) { a.TemplateID = "TPL-NONE" }, true), "TEMPLATE_NOT_WHITELISTED"},
		{"inactive template", mut(func(a *Attestation) { a.TemplateID = "TPL-OFF" }, true), "TEMPLATE_NOT_WHITELISTED"},
		{"predicate template", mut(func(a *Attestation) { a.TemplateID = "TPL-TIME" }, true), "ATTESTER_UNAUTHORIZED"},
		{"unknown key", mut(func(a *Attestation) { a.KeyID = "KEY-NONE" }, false), "KEY_NOT_FOUND"},
		{"operator out of scope", mut(func(a *Attestation) { a.KeyID = "KEY-C" }, true), "ATTESTER_UNAUTHORIZED"},
		{"participant key", mut(func(a *Attestation) { a.KeyID = "KEY-BANK" }, true), "ATTESTER_UNAUTHORIZED"},
		{"tampered subject", mut(func(a *Attestation) { a.Subject = "HTLC-2" }, false), "EXTERNAL_SIGNATURE_INVALID"},
		{"stale", mut(func(a *Attestation) { a.OccurredAt = clock.Stamp(t0.Add(-61 * time.Minute)) }, true), "ATTESTATION_EXPIRED"},
		{"from the future", mut(func(a *Attestation) { a.OccurredAt = clock.Stamp(t0.Add(10 * time.Minute)) }, true), "TIMESTAMP_SKEW"},
	}
	for _, c := range cases {
		if err := e.atts.Record(e.ctx, c.a); domainerr.Code(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	if n := e.count(`SELECT COUNT(*) FROM Attestation`); n != 0 {
		t.Fatalf("%d attestations stored after refusals, want 0", n)
	}
	e.record(good)
	var hash, res, op string
	if err := e.db.Read(e.ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(e.ctx, `SELECT statement_hash, verified_result, attester_ref FROM Attestation WHERE attestation_id = ?`, good.AttestationID).Scan(&hash, &res, &op)
	}); err != nil || hash != good.StatementHash || res != ResultPass || op != "OPA" {
		t.Fatalf("stored row %s %s %s %v", hash, res, op, err)
	}
	if err := e.atts.Record(e.ctx, good); domainerr.Code(err) != "SIGNATURE_REPLAYED" {
		t.Fatalf("second record: %v, want SIGNATURE_REPLAYED", err)
	}
}

// TestRecordRaceStoresOnce: N goroutines deliver the same attestation;
// exactly one stores it, the others are SIGNATURE_REPLAYED.
func TestRecordRaceStoresOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newEnvOn(t, b)
		e.template(Template{TemplateID: "TPL-INSPECT", AllowedAttesterScope: []string{"OPA"}})
		a := e.att("TPL-INSPECT", "HTLC-1", "KEY-A1", ResultPass, t0)
		const n = 16
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- e.atts.Record(e.ctx, a) }()
		}
		wg.Wait()
		close(errs)
		ok, replayed := 0, 0
		for err := range errs {
			switch {
			case err == nil:
				ok++
			case domainerr.Code(err) == "SIGNATURE_REPLAYED":
				replayed++
			default:
				t.Errorf("unexpected %v", err)
			}
		}
		if ok != 1 || replayed != n-1 || e.count(`SELECT COUNT(*) FROM Attestation`) != 1 {
			t.Fatalf("ok %d replayed %d rows %d; want 1, %d, 1", ok, replayed, e.count(`SELECT COUNT(*) FROM Attestation`), n-1)
		}
	})
}

func TestQuorumCountsOperatorsNotKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newEnvOn(t, b)
		e.template(Template{TemplateID: "TPL-DOCS", AllowedAttesterScope: []string{"OPA", "OPB", "OPC"}, MinAttesterQuorum: 2})
		expr := `{"template_id":"TPL-DOCS"}`
		e.record(e.att("TPL-DOCS", "HTLC-1", "KEY-A1", ResultPass, t0))
		e.record(e.att("TPL-DOCS", "HTLC-1", "KEY-A2", ResultPass, t0))
		d := e.eval(expr, "HTLC-1")
		if d.Allowed || len(d.Reasons[0].Leaf.Quorum.Pass) != 1 {
			t.Fatalf("two keys of one operator: %+v, want 1 of 2 operators and not allowed", d.Reasons[0])
		}
		e.record(e.att("TPL-DOCS", "HTLC-2", "KEY-B", ResultPass, t0)) // another subject does not count
		if d := e.eval(expr, "HTLC-1"); d.Allowed {
			t.Fatal("an attestation about another subject counted")
		}
		e.record(e.att("TPL-DOCS", "HTLC-1", "KEY-B", ResultPass, t0))
		d = e.eval(expr, "HTLC-1")
		if !d.Allowed || strings.Join(d.Satisfied, ",") != "TPL-DOCS" || d.Reasons[0].Why != "2 of 2 required distinct attester operators attested PASS" {
			t.Fatalf("two operators: %+v", d)
		}
		// Freshness: 61 minutes later the PASSes no longer count.
		e.clk.Advance(61 * time.Minute)
		if d := e.eval(expr, "HTLC-1"); d.Allowed {
			t.Fatal("stale attestations still satisfy the leaf")
		}
	})
}

func TestEquivocationFailsClosedOnlyItsLeaf(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newEnvOn(t, b)
		e.template(Template{TemplateID: "TPL-SANCTIONS", AllowedAttesterScope: []string{"OPA", "OPB"}})
		e.template(Template{TemplateID: "TPL-DELIVERY", AllowedAttesterScope: []string{"OPC"}})
		e.record(e.att("TPL-SANCTIONS", "HTLC-1", "KEY-A1", ResultPass, t0))
		e.record(e.att("TPL-SANCTIONS", "HTLC-1", "KEY-B", ResultFail, t0))
		e.record(e.att("TPL-DELIVERY", "HTLC-1", "KEY-C", ResultPass, t0))
		d := e.eval(`{"op":"OR","operands":[{"template_id":"TPL-SANCTIONS"},{"template_id":"TPL-DELIVERY"}]}`, "HTLC-1")
		if !d.Allowed || strings.Join(d.Equivocated, ",") != "TPL-SANCTIONS" || strings.Join(d.Missing, ",") != "TPL-SANCTIONS" {
			t.Fatalf("OR over an equivocated and a satisfied leaf: %+v", d)
		}
		if l := d.Reasons[1].Leaf; l.Satisfied || !l.Equivocated || !strings.HasPrefix(d.Reasons[1].Why, "ATTESTATION_EQUIVOCATION") {
			t.Fatalf("equivocated leaf: %+v", d.Reasons[1])
		}
		// The acting caller opens one Case per (template, subject); a second
		// evaluation joins it.
		cs := cases.New(e.clk, nil, 0)
		for i, wantCreated := range []bool{true, false} {
			var opened []cases.Opened
			if err := e.db.Write(e.ctx, func(tx *store.Tx) error {
				var err error
				opened, err = OpenEquivocationCasesTx(e.ctx, tx, cs, d, "HTLC-1", "")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if len(opened) != 1 || opened[0].Created != wantCreated {
				t.Fatalf("open #%d: %+v, want one case, created %v", i, opened, wantCreated)
			}
		}
		if n := e.count(`SELECT COUNT(*) FROM Cases WHERE reason_code = 'ATTESTATION_EQUIVOCATION' AND state = 'OPEN'`); n != 1 {
			t.Fatalf("%d open equivocation cases, want 1", n)
		}
		d = e.eval(`{"op":"AND","operands":[{"template_id":"TPL-SANCTIONS"},{"template_id":"TPL-DELIVERY"}]}`, "HTLC-1")
		if d.Allowed {
			t.Fatal("AND with an equivocated leaf was allowed")
		}
	})
}

func appendEntry(t *testing.T, e *env, ev finality.Event) {
	t.Helper()
	if err := e.db.Write(e.ctx, func(tx *store.Tx) error {
		_, err := finality.New(e.clk).Append(e.ctx, tx, ev)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func TestLedgerPredicates(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		e := newEnvOn(t, b)
		e.template(Template{TemplateID: "TPL-TX2-SETTLED", LedgerPredicate: &Predicate{Type: TxReachedState, TxID: "TX-2", States: []string{"SETTLED"}}})
		e.template(Template{TemplateID: "TPL-GT-SETTLED", LedgerPredicate: &Predicate{Type: GtidReachedState, GTID: "GT-1", States: []string{"GT_SETTLED"}}})
		// 12:00 JST written without an offset, and 03:00Z: the same instant.
		e.template(Template{TemplateID: "TPL-AFTER-NOON", LedgerPredicate: &Predicate{Type: TimeAfter, At: "2026-12-03T12:00"}})
		e.template(Template{TemplateID: "TPL-BEFORE-NOON", LedgerPredicate: &Predicate{Type: TimeBefore, At: "2026-12-03T03:00:00Z"}})
		cases := []struct {
			name string
			do   func()
			want map[string]bool
		}{
			{"10:00 JST, nothing reached", func() {},
				map[string]bool{"TPL-TX2-SETTLED": false, "TPL-GT-SETTLED": false, "TPL-AFTER-NOON": false, "TPL-BEFORE-NOON": true}},
			{"TX-2 passes PRECHECKED only", func() {
				appendEntry(t, e, finality.Event{TxID: "TX-2", Type: finality.PreCheckPassed, StateFrom: "RECEIVED", StateTo: "PRECHECKED"})
			}, map[string]bool{"TPL-TX2-SETTLED": false}},
			{"TX-2 settles, a leg of GT-1 settles (not the aggregate)", func() {
				appendEntry(t, e, finality.Event{TxID: "TX-2", Type: finality.Settled, StateFrom: "PAYEE_CREDIT_CONFIRMED", StateTo: "SETTLED"})
				appendEntry(t, e, finality.Event{TxID: "TX-9", GTID: "GT-1", Type: finality.Settled, StateFrom: "X", StateTo: "GT_SETTLED"})
			}, map[string]bool{"TPL-TX2-SETTLED": true, "TPL-GT-SETTLED": false}},
			{"TX-2 later moves on: still reached (monotone)", func() {
				appendEntry(t, e, finality.Event{TxID: "TX-2", Type: finality.PreCheckPassed, StateFrom: "SETTLED", StateTo: "OTHER"})
			}, map[string]bool{"TPL-TX2-SETTLED": true}},
			{"GT-1 aggregate settles", func() {
				appendEntry(t, e, finality.Event{GTID: "GT-1", Type: finality.Settled, StateFrom: "GT_DECIDED_TO_SETTLE", StateTo: "GT_SETTLED"})
			}, map[string]bool{"TPL-GT-SETTLED": true}},
			{"11:59:59 JST", func() { e.clk.Set(time.Date(2026, 12, 3, 11, 59, 59, 0, clock.JST)) },
				map[string]bool{"TPL-AFTER-NOON": false, "TPL-BEFORE-NOON": true}},
			{"12:00:00 JST exactly", func() { e.clk.Set(time.Date(2026, 12, 3, 12, 0, 0, 0, clock.JST)) },
				map[string]bool{"TPL-AFTER-NOON": true, "TPL-BEFORE-NOON": false}},
		}
		for _, c := range cases {
			c.do()
			for tpl, want := range c.want {
				d := e.eval(`{"template_id":"`+tpl+`"}`, "")
				if d.Allowed != want {
					t.Errorf("%s: %s = %v (%s), want %v", c.name, tpl, d.Allowed, d.Reasons[0].Why, want)
				}
				if p := d.Reasons[0].Leaf.Predicate; p == nil || p.EvaluatedAt != clock.Stamp(e.clk.Now()) {
					t.Errorf("%s: %s predicate value %+v does not record the instant used", c.name, tpl, p)
				}
			}
		}
	})
}

func TestMissingOrInactiveTemplateFailsClosed(t *testing.T) {
	e := newEnv(t)
	e.template(Template{TemplateID: "TPL-AFTER", LedgerPredicate: &Predicate{Type: TimeAfter, At: "2026-01-01"}})
	if d := e.eval(`{"template_id":"TPL-AFTER"}`, ""); !d.Allowed {
		t.Fatal("active TIME_AFTER in the past not satisfied")
	}
	if err := e.tpls.SetStatus(e.ctx, "TPL-AFTER", TemplateInactive); err != nil {
		t.Fatal(err)
	}
	for _, expr := range []string{`{"template_id":"TPL-AFTER"}`, `{"template_id":"TPL-NEVER-REGISTERED"}`} {
		d := e.eval(expr, "")
		if d.Allowed || d.Reasons[0].Leaf.Source != SourceNotWhitelisted {
			t.Errorf("%s: %+v, want a false NOT_WHITELISTED leaf", expr, d.Reasons[0])
		}
	}
	v, err := e.ev.Validate(e.ctx, `{"op":"OR","operands":[{"template_id":"TPL-AFTER"},{"template_id":"TPL-X"}]}`)
	if err != nil || v.Depth != 2 || len(v.Templates) != 2 || v.Templates[0].Status != TemplateInactive || v.Templates[1].Kind != SourceNotWhitelisted {
		t.Fatalf("Validate: %+v %v", v, err)
	}
}

func TestEvaluateInvalidIsTyped(t *testing.T) {
	e := newEnv(t)
	_, err := e.ev.Evaluate(e.ctx, `{"op":"NAND","operands":[]}`, Inputs{})
	de, ok := domainerr.As(err)
	if !ok || de.Code != "CONDITION_EXPR_INVALID" || de.HTTPStatus() != 400 || de.Details["offset"] != int64(6) || de.Details["token"] != `"NAND"` {
		t.Fatalf("Evaluate(bad op) = %#v", err)
	}
}

func TestAssumeIsPureAndReadsNothing(t *testing.T) {
	e := newEnv(t)
	// No template is registered: an assumed set decides alone.
	d, err := e.ev.Evaluate(e.ctx, `{"op":"THRESHOLD","k":2,"operands":[{"template_id":"A"},{"template_id":"B"},{"template_id":"C"}]}`,
		Inputs{Assume: []string{"A", "C"}})
	if err != nil || !d.Allowed || strings.Join(d.Satisfied, ",") != "A,C" || strings.Join(d.Missing, ",") != "B" || d.Reasons[2].Leaf.Source != SourceAssumed {
		t.Fatalf("simulate: %+v %v", d, err)
	}
}

func TestTemplateRegistration(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		t    Template
		code string
	}{
		{Template{TemplateID: "T-1"}, "INVALID_REQUEST"}, // no attester, no predicate
		{Template{TemplateID: "T-2", AllowedAttesterScope: []string{"OPA"}, MinAttesterQuorum: 2}, "INVALID_REQUEST"},
		{Template{TemplateID: "T-3", AllowedAttesterScope: []string{"OPA"}, LedgerPredicate: &Predicate{Type: TimeAfter, At: "2026-12-03"}}, "INVALID_REQUEST"},
		{Template{TemplateID: "T-4", LedgerPredicate: &Predicate{Type: TxReachedState, TxID: "TX-1"}}, "INVALID_REQUEST"},
		{Template{TemplateID: "T-5", LedgerPredicate: &Predicate{Type: TimeBefore, At: "tomorrow"}}, "INVALID_REQUEST"},
		{Template{TemplateID: "T-6", LedgerPredicate: &Predicate{Type: "BALANCE_ABOVE"}}, "INVALID_REQUEST"},
		{Template{TemplateID: "", AllowedAttesterScope: []string{"OPA"}}, "MISSING_FIELD"},
		{Template{TemplateID: "T-OK", AllowedAttesterScope: []string{"OPB", "OPA", "OPA"}}, ""},
		{Template{TemplateID: "T-OK", AllowedAttesterScope: []string{"OPA"}}, "INVALID_REQUEST"}, // exists
	}
	for _, c := range cases {
		_, err := e.tpls.Register(e.ctx, c.t)
		if domainerr.Code(err) != c.code {
			t.Errorf("register %+v: %v, want %q", c.t, err, c.code)
		}
	}
	got, err := e.tpls.Get(e.ctx, "T-OK")
	if err != nil || strings.Join(got.AllowedAttesterScope, ",") != "OPA,OPB" || got.MinAttesterQuorum != 1 || got.AttestationTTLSeconds != 3600 {
		t.Fatalf("stored template %+v %v", got, err)
	}
}

func TestParseSystemTimeIsJSTWithoutOffset(t *testing.T) {
	for _, c := range []struct{ in, utc string }{
		{"2026-12-03T09:00:00", "2026-12-03T00:00:00Z"},
		{"2026-12-03T09:00", "2026-12-03T00:00:00Z"},
		{"2026-12-03", "2026-12-02T15:00:00Z"},
		{"2026-12-03T09:00:00+09:00", "2026-12-03T00:00:00Z"},
		{"2026-12-03T09:00:00Z", "2026-12-03T09:00:00Z"},
	} {
		got, err := ParseSystemTime(c.in)
		if err != nil || got.UTC().Format(time.RFC3339) != c.utc {
			t.Errorf("ParseSystemTime(%s) = %v %v, want %s", c.in, got.UTC(), err, c.utc)
		}
	}
	if _, err := ParseSystemTime("03/12/2026"); err == nil {
		t.Error("ParseSystemTime accepted a non-ISO date")
	}
}
