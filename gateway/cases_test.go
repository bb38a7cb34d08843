package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/store"
)

func TestCaseRoutes(t *testing.T) {
	f := newFixture(t, nil)
	cs := cases.New(f.clk, nil, 0)
	var ids []string
	for i, bank := range []string{"001", "002", "001"} {
		o, err := cs.OpenCaseDB(f.ctx, f.db, cases.OpenRequest{ReasonCode: "BANK_ERROR", OpenedBy: "BANK", CausePartyID: bank,
			RelatedTxID: "TX-" + bank, DetectionPath: "OUTBOX_BLOCKED", SLADeadline: t0.Add(time.Duration(i+1) * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 { // same cause as the first: aggregated, so open another reason
			o, err = cs.OpenCaseDB(f.ctx, f.db, cases.OpenRequest{ReasonCode: "RECON_DRIFT", OpenedBy: "BANK", CausePartyID: bank,
				SLADeadline: t0.Add(3 * time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, o.CaseID)
	}
	ops := map[string]string{"X-Api-Key": keyOps, HeaderPurposeCode: "P05"}
	audits := func(resource, decision string) int {
		var n int
		_ = f.db.Read(f.ctx, func(tx *store.Tx) error {
			return tx.QueryRowContext(f.ctx, `SELECT COUNT(*) FROM AccessAuditLog WHERE resource = ? AND decision = ? AND subject_id = 'api-key:ops'`,
				resource, decision).Scan(&n)
		})
		return n
	}
	var list CaseList
	r := f.do("GET", "/api/cases?bank=001&limit=1", ops, "")
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Cases) != 1 || list.Cases[0].CaseID != ids[0] || list.More != 1 {
		t.Fatalf("list page 1: %d %s", r.status, r.body)
	}
	r = f.do("GET", "/api/cases?bank=001&limit=1&after="+ids[0], ops, "")
	if json.Unmarshal(r.body, &list) != nil || len(list.Cases) != 1 || list.Cases[0].CaseID != ids[2] || list.More != 0 {
		t.Fatalf("list page 2: %d %s", r.status, r.body)
	}
	f.clk.Set(t0.Add(150 * time.Minute))
	r = f.do("GET", "/api/cases?overdue=true", ops, "")
	if json.Unmarshal(r.body, &list) != nil || len(list.Cases) != 2 {
		t.Fatalf("overdue: %d %s", r.status, r.body)
	}
	if n := audits("cases", Permit); n != 3 {
		t.Fatalf("%d PERMIT audit rows for the list", n)
	}
	// A participant may not list or decide Cases.
	if r := f.do("GET", "/api/cases", map[string]string{"X-Api-Key": key001, HeaderPurposeCode: "P05"}, ""); r.status != 403 {
		t.Fatalf("participant list: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/api/cases/"+ids[1]+"/resolve", map[string]string{"X-Api-Key": key002, HeaderPurposeCode: "P05"},
		`{"operator":"x","note":"y"}`); r.status != 403 {
		t.Fatalf("participant resolve: %d %s", r.status, r.body)
	}

	path := "/api/cases/" + ids[1] + "/resolve"
	if r := f.do("POST", path, ops, `{"operator":"ops-sato"}`); r.status != 400 || r.code(t) != "MISSING_FIELD" {
		t.Fatalf("no note: %d %s", r.status, r.body)
	}
	r = f.do("POST", path, ops, `{"operator":"ops-sato","note":"bank 002 fixed its core"}`)
	var dec CaseDecisionResponse
	if r.status != 200 || json.Unmarshal(r.body, &dec) != nil || dec.StateFrom != "OPEN" || dec.StateTo != "RESOLVED" || dec.Decision != "RESOLVED" {
		t.Fatalf("resolve: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/api/cases/"+ids[1]+"/close", ops, `{"operator":"ops-sato","note":"again"}`); r.status != 409 || r.code(t) != "STATE_GUARD" {
		t.Fatalf("second decision: %d %s", r.status, r.body)
	}
	if n := audits("cases/"+ids[1]+"/resolve", Permit); n != 2 {
		t.Fatalf("%d PERMIT audit rows for resolve", n)
	}
	var detail CaseDetail
	r = f.do("GET", "/api/cases/"+ids[1], ops, "")
	if r.status != 200 || json.Unmarshal(r.body, &detail) != nil || detail.State != "RESOLVED" || len(detail.History) != 2 ||
		detail.History[1].ReasonCode != "RESOLVED" || detail.History[1].Payload != `{"decision":"RESOLVED","note":"bank 002 fixed its core","operator":"ops-sato","source":"api api-key:ops"}` {
		t.Fatalf("show: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/api/cases/"+ids[2]+"/resolve", ops, `{"operator":"o","note":"n","drift":"maybe"}`); r.status != 400 || r.code(t) != "INVALID_REQUEST" {
		t.Fatalf("bad drift: %d %s", r.status, r.body)
	}
	if r := f.do("POST", "/api/cases/"+ids[2]+"/resolve", ops, `{"operator":"o","note":"n","drift":"adjust"}`); r.status != 404 {
		t.Fatalf("drift without the bank's adapter: %d %s", r.status, r.body)
	}
	if r := f.do("GET", "/api/cases/CASE-nope", ops, ""); r.status != 404 {
		t.Fatalf("missing: %d %s", r.status, r.body)
	}
	if r := f.do("GET", "/api/cases?status=BOGUS", ops, ""); r.status != 400 {
		t.Fatalf("bad status: %d %s", r.status, r.body)
	}
	// Without a purpose code: refused and audited as DENY.
	if r := f.do("POST", "/api/cases/"+ids[0]+"/close", map[string]string{"X-Api-Key": keyOps}, `{"operator":"o","note":"n"}`); r.status != 403 {
		t.Fatalf("no purpose: %d %s", r.status, r.body)
	}
	if n := audits("cases/"+ids[0]+"/close", Deny); n != 1 {
		t.Fatalf("%d DENY audit rows", n)
	}
}
