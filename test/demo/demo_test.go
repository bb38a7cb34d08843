// Package demo_test runs `zcgw demo` (gateway/demo.Run) in a temporary data
// folder and asserts the day's invariants from its Summary and its files.
package demo_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
	"github.com/zcgw/zcgw/gateway/demo"
)

func TestDemoDay(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	sum, err := demo.Run(context.Background(), demo.Options{DataDir: dir, Out: &out})
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	if sum.Failed != "" {
		t.Fatalf("Failed = %q with a nil error", sum.Failed)
	}
	if want := filepath.Join(dir, demo.RunDir); !strings.HasSuffix(sum.DataDir, want) && sum.DataDir != want {
		t.Errorf("DataDir = %s, want %s", sum.DataDir, want)
	}

	// Transfers: the script's outcomes.
	// 9 over HTTP (7 settle, one of them to a payee named by pspr_ref; one
	// payer without funds and one unknown payee are cancelled), 3 more
	// created over HTTP by the GTID and RTP scenes (the two leg transfers of
	// the settled GTID, the accepted request's transfer; all settle), 2
	// HTLCs over HTTP (one claimed and settled, one cancelled at its
	// timelock), 4 from the dropped file (3 settle; one exceeds the payer's
	// balance) and the two currency legs of the claimed FX conduit (both
	// settle).
	if sum.Settled != 16 || sum.Cancelled != 4 || len(sum.Transfers) != 20 {
		t.Errorf("%d transfers: settled %d cancelled %d, want 20: 16 and 4", len(sum.Transfers), sum.Settled, sum.Cancelled)
	}
	if sum.FX["FX-DEMO-1"] != "SETTLED" || sum.FX["FX-DEMO-2"] != "REFUNDED" {
		t.Errorf("FX conduits %v, want FX-DEMO-1 SETTLED and FX-DEMO-2 REFUNDED", sum.FX)
	}
	via := map[string]int{}
	for _, tr := range sum.Transfers {
		via[tr.Via]++
		if tr.State != tr.Expect {
			t.Errorf("%s (%s): %s %s, want %s", tr.TxID, tr.Label, tr.State, tr.Reason, tr.Expect)
		}
	}
	if via[demo.ViaHTTP] != 14 || via[demo.ViaFile] != 4 || via[demo.ViaFX] != 2 {
		t.Errorf("transfers by way in: %v", via)
	}

	// Balances: every account matches its core; each bank zero-sum;
	// conservation.
	b := sum.Balances
	if !b.OK || b.Accounts != 10 || b.BanksZeroSum != 3 || b.SystemCustomer != 0 {
		t.Errorf("balances %+v", b)
	}
	for v, moved := range b.SystemVenues {
		if moved != 0 {
			t.Errorf("venue %s moved %d in total", v, moved)
		}
	}
	if b.OutOfBand != 5_000 {
		t.Errorf("out-of-band total %d, want 5000", b.OutOfBand)
	}

	// Faults: the offline core drained; the lost reply applied once.
	if o := sum.Offline; o.Queued != 2 || o.Drained != 2 {
		t.Errorf("offline core: %+v", o)
	}
	if l := sum.LostReply; l.Status != "APPLIED" || l.Sends != 1 || l.Lookups < 1 || l.Journal != 1 {
		t.Errorf("lost reply: %+v", l)
	}

	// The out-of-band change was found as a drift with a Case.
	if len(sum.Drifts) != 1 || sum.Drifts[0].Account != "002/KOBAYASHI" || sum.Drifts[0].Drift != 5_000 ||
		!strings.HasPrefix(sum.Drifts[0].CaseID, "CASE-") {
		t.Errorf("drifts %+v", sum.Drifts)
	}

	// Chain audit.
	if !sum.Chains.OK || sum.Chains.Chains == 0 || sum.Chains.Entries < 40 {
		t.Errorf("chain audit %+v", sum.Chains)
	}

	// DNS: the day's cycles settled.
	settled := 0
	for _, c := range sum.DNS {
		if c.State == "SETTLED" {
			settled++
		}
	}
	if settled < 2 {
		t.Errorf("DNS cycles %+v", sum.DNS)
	}

	// The dropped file: applied once (the second drop is a duplicate), and
	// its result file has one result per record: 3 settled, 1 資金不足.
	f := sum.Files
	if f.Duplicates != 1 || f.Records != 4 || f.Codes["0 振替済"] != 3 || f.Codes["1 資金不足"] != 1 {
		t.Errorf("file drop %+v", f)
	}
	if filepath.Dir(f.Path) != filepath.Join(sum.DataDir, "banks", "003", "outbound") {
		t.Errorf("result file at %s", f.Path)
	}
	if st, err := os.Stat(f.Path); err != nil || st.Size() != 7*(120+2) {
		t.Errorf("result file: %v, %v (want header, 4 data, trailer, end: 7 records of 120 bytes + CRLF)", st, err)
	}

	// The batch-window bank's BULK debits went to its core in the overnight
	// file, and the core's result confirmed every one.
	if o := sum.Overnight; o.Records != 3 || o.Posted != 3 || o.Blocked != 0 {
		t.Errorf("overnight exchange %+v, want the 3 settled BULK debits posted", o)
	} else {
		for _, f := range []string{o.PostingFile, o.ResultFile} {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("overnight file: %v", err)
			}
		}
	}

	// Events: one per FinalityLog entry, all still in the outbox (no broker).
	if e := sum.Events; e.Rows == 0 || e.Unsent != e.Rows || int64(sum.Chains.Entries) != e.Rows {
		t.Errorf("events %+v, chain entries %d", e, sum.Chains.Entries)
	}

	// Jobs ran through the scheduler.
	ran := map[string]string{}
	for _, j := range sum.Jobs {
		ran[j.Job] = j.Status
	}
	for _, j := range []string{"dns-intraday-cutoff", "bulk-window", "dns-kick", "dns-settle", "eod"} {
		if ran[j] != "COMPLETED" {
			t.Errorf("job %s: %q", j, ran[j])
		}
	}

	// The workbook exists under reports/ and carries the drift.
	if filepath.Dir(sum.Workbook) != filepath.Join(sum.DataDir, "reports") {
		t.Errorf("workbook at %s", sum.Workbook)
	}
	wb, err := excelize.OpenFile(sum.Workbook)
	if err != nil {
		t.Fatalf("workbook: %v", err)
	}
	defer wb.Close()
	rows, err := wb.GetRows("Drift")
	if err != nil {
		t.Fatalf("workbook Drift sheet: %v", err)
	}
	if len(sum.Drifts) == 1 && !rowWith(rows, sum.Drifts[0].CoreAccount, sum.Drifts[0].CaseID, "5,000") {
		t.Errorf("Drift sheet has no row for the drift of %s with Case %s: %v", sum.Drifts[0].CoreAccount, sum.Drifts[0].CaseID, rows)
	}

	if !strings.Contains(out.String(), "all invariants held") {
		t.Errorf("output does not end with the verdict:\n%s", out.String())
	}
}

// rowWith reports whether one row has cells equal to, or (for amounts)
// containing, every value.
func rowWith(rows [][]string, values ...string) bool {
	for _, r := range rows {
		n := 0
		for _, v := range values {
			for _, c := range r {
				if c == v || strings.Contains(c, v) {
					n++
					break
				}
			}
		}
		if n == len(values) {
			return true
		}
	}
	return false
}

// A second run in the same folder replaces the first; a folder that is not
// the demo's is refused, untouched.
func TestDemoRefusesForeignFolder(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, demo.RunDir)
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(foreign, "precious.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := demo.Run(context.Background(), demo.Options{DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "not a demo folder") {
		t.Fatalf("err = %v", err)
	}
	var inv *demo.InvariantError
	if errors.As(err, &inv) {
		t.Fatalf("a refused folder is not an invariant failure: %v", err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
		t.Fatalf("foreign file changed: %q %v", b, err)
	}
}
