package eod

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// POST /internal/cron/finality-audit answers spec 004's
// {chains_checked, entries_checked, broken_chains, cases_opened}, and every
// call audits again: the tampered chain is reported each time, its Case is
// opened once and later audits join it.
func TestFinalityAuditAnswersSpecFieldsAndRerunsOnDemand(t *testing.T) {
	f := newFixture(t)
	r := f.runner(t, f.cfg)
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	var caseID string
	for i, wantOpened := range []int{1, 0} {
		resp, err := http.Post(srv.URL+"/internal/cron/finality-audit", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			RunID          int64    `json:"run_id"`
			Status         string   `json:"status"`
			ChainsChecked  *int     `json:"chains_checked"`
			EntriesChecked *int     `json:"entries_checked"`
			CasesOpened    *int     `json:"cases_opened"`
			CaseIDs        []string `json:"case_ids"`
			BrokenChains   []struct {
				ChainID string `json:"chain_id"`
				Reason  string `json:"reason"`
			} `json:"broken_chains"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || got.Status != "COMPLETED" || got.ChainsChecked == nil || *got.ChainsChecked != 2 ||
			got.EntriesChecked == nil || *got.EntriesChecked != 3 || got.CasesOpened == nil || *got.CasesOpened != wantOpened ||
			len(got.BrokenChains) != 1 || got.BrokenChains[0].ChainID != "TX-B" || len(got.CaseIDs) != 1 {
			t.Fatalf("audit #%d: %d %+v %v", i+1, resp.StatusCode, got, err)
		}
		if caseID == "" {
			caseID = got.CaseIDs[0]
		} else if got.CaseIDs[0] != caseID {
			t.Fatalf("audit #%d went to case %s, want the open %s", i+1, got.CaseIDs[0], caseID)
		}
		f.clk.Advance(time.Second)
	}
	if n := count(t, f.db, `SELECT COUNT(*) FROM FinalityAudits`); n != 2 {
		t.Fatalf("FinalityAudits = %d, want 2", n)
	}
	if n := count(t, f.db, `SELECT COUNT(*) FROM Cases WHERE reason_code = ?`, ChainBreakReason); n != 1 {
		t.Fatalf("chain-break Cases = %d, want 1", n)
	}
}
