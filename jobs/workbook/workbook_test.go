package workbook

import (
	"archive/zip"
	"bytes"
	"errors"
	"hash/crc32"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/zcgw/zcgw/coordinator/domainerr"
)

func seq[T any](xs []T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, x := range xs {
			if !yield(x, nil) {
				return
			}
		}
	}
}

var genAt = time.Date(2026, 12, 1, 14, 30, 0, 0, time.UTC) // 23:30 JST

func sampleReport() Report {
	return Report{
		BusinessDate: "2026-12-01",
		GeneratedAt:  genAt,
		Chain:        ChainAudit{Chains: 12, Entries: 340},
		Banks: []Bank{
			{BankID: "001", Accounts: 3, ShadowTotal: 300000, CoreTotal: 301500, Matched: 2, Drifts: 1, Pending: 4, InDoubt: 1, Blocked: 2, NetDNS: -5000},
			{BankID: "002", Accounts: 2, ShadowTotal: 200000, CoreTotal: 200000, Matched: 2, NetDNS: 5000},
		},
		Drifts: seq([]Drift{{BankID: "001", AccountHash: "h-1", CoreAccount: "001-1-0000001", ShadowBalance: 100000,
			CoreBalance: 101500, Drift: 1500, DriftID: "DRIFT-1", CaseID: "CASE-9", Status: "OPEN", Source: "INQUIRY",
			DetectedAt: genAt}}),
		Exceptions: seq([]Exception{
			{Kind: KindPosting, BankID: "001", OutboxID: 17, Ref: "REF17", TxID: "TX17", Account: "001-1-0000002",
				Amount: 25000, Status: "BLOCKED", ReasonCode: "INSUFFICIENT_FUNDS", CaseID: "CASE-1",
				SLA: genAt.Add(4 * time.Hour), Since: genAt.Add(-time.Hour)},
			{Kind: KindPosting, BankID: "001", OutboxID: 18, Ref: "REF18", TxID: "TX18", Account: "001-1-0000003",
				Amount: 7000, Status: "IN_DOUBT", Since: genAt.Add(-2 * time.Hour)},
			{Kind: KindCase, CaseID: "CASE-9", BankID: "001", Status: "OPEN", ReasonCode: "RECON_DRIFT",
				SLA: genAt.Add(3 * time.Hour), Since: genAt},
		}),
		DNS: []DNSPosition{{BankID: "001", Cycles: 1, GrossSend: 10000, GrossReceive: 5000, Net: -5000, Settled: true},
			{BankID: "002", Cycles: 1, GrossSend: 5000, GrossReceive: 10000, Net: 5000, Settled: true}},
	}
}

func TestWorkbookContentReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reports", FileName("2026-12-01"))
	st, err := Write(path, sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	if st.Banks != 2 || st.Drifts != 1 || st.Exceptions != 3 || st.DNS != 2 {
		t.Fatalf("stats %+v", st)
	}
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.GetSheetList(); !slices.Equal(got, []string{SheetSummary, SheetDrift, SheetExceptions, SheetDNS, SheetControl}) {
		t.Fatalf("sheets %v", got)
	}
	if vis, _ := f.GetSheetVisible(SheetControl); vis {
		t.Fatal("control sheet is visible")
	}
	if got := f.GetActiveSheetIndex(); got != 0 {
		t.Fatalf("active sheet index %d, want 0 (%s)", got, SheetSummary)
	}
	cells := []struct{ sheet, cell, want string }{
		{SheetSummary, "C1", "2026-12-01"},
		{SheetSummary, "E1", "2026-12-01 23:30"}, // JST
		{SheetSummary, "B2", "OK: 12 chains, 340 entries"},
		{SheetSummary, "A3", "Bank"},
		{SheetSummary, "A4", "001"},
		{SheetSummary, "C4", "¥300,000"},
		{SheetSummary, "D4", "¥301,500"},
		{SheetSummary, "E4", "¥1,500"},
		{SheetSummary, "G4", "1"},
		{SheetSummary, "J4", "4"},
		{SheetSummary, "K4", "1"},
		{SheetSummary, "L4", "2"},
		{SheetSummary, "M4", "-¥5,000"},
		{SheetSummary, "N4", "OK: 12 chains, 340 entries"},
		{SheetSummary, "A6", "TOTAL"},
		{SheetSummary, "C6", "¥500,000"},
		{SheetSummary, "M6", "¥0"},
		{SheetDrift, "B2", "h-1"},
		{SheetDrift, "F2", "¥1,500"},
		{SheetDrift, "H2", "CASE-9"},
		{SheetDrift, "K2", "2026-12-01 23:30"},
		{SheetExceptions, "A2", "POSTING:001:17"},
		{SheetExceptions, "D2", "17"},
		{SheetExceptions, "H2", "¥25,000"},
		{SheetExceptions, "I2", "BLOCKED"},
		{SheetExceptions, "L2", "2026-12-02 03:30"},
		{SheetExceptions, "M3", "2026-12-01 21:30"},
		{SheetExceptions, "A4", "CASE:CASE-9"},
		{SheetExceptions, "N2", ""},
		{SheetDNS, "A2", "001"},
		{SheetDNS, "E2", "-¥5,000"},
		{SheetDNS, "E3", "¥5,000"},
		{SheetControl, "B1", "2026-12-01"},
	}
	for _, c := range cells {
		got, err := f.GetCellValue(c.sheet, c.cell)
		if err != nil || got != c.want {
			t.Errorf("%s!%s = %q (%v), want %q", c.sheet, c.cell, got, err, c.want)
		}
	}
	// Drift cell highlighted.
	sid, _ := f.GetCellStyle(SheetDrift, "F2")
	style, err := f.GetStyle(sid)
	if err != nil || len(style.Fill.Color) == 0 || style.Fill.Color[0] != "FFC7CE" {
		t.Errorf("drift cell F2 not highlighted: %+v %v", style, err)
	}
	// Frozen header on every data sheet.
	for _, sh := range []string{SheetSummary, SheetDrift, SheetExceptions, SheetDNS} {
		p, err := f.GetPanes(sh)
		if err != nil || !p.Freeze || p.YSplit == 0 {
			t.Errorf("%s panes %+v %v", sh, p, err)
		}
	}
	// Drop-down on Resolution.
	dvs, err := f.GetDataValidations(SheetExceptions)
	if err != nil || len(dvs) != 1 || !strings.Contains(dvs[0].Formula1, "RETRY,WRITE_OFF,ESCALATE") ||
		!strings.HasPrefix(dvs[0].Sqref, "N2:") {
		t.Errorf("data validation %+v %v", dvs, err)
	}
	// Auto-filter and chart are in the package (dropped silently when called after Flush).
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var chart, filters bool
	for _, zf := range zr.File {
		if strings.HasPrefix(zf.Name, "xl/charts/chart") {
			chart = true
		}
	}
	filters = true
	matched := 0
	for _, sh := range []string{SheetSummary, SheetDrift, SheetExceptions, SheetDNS} {
		idx, _ := f.GetSheetIndex(sh)
		name := "xl/worksheets/sheet" + string(rune('1'+idx)) + ".xml"
		for _, zf := range zr.File {
			if zf.Name == name {
				matched++
				rc, _ := zf.Open()
				buf := new(strings.Builder)
				_, _ = copyN(buf, rc)
				rc.Close()
				if !strings.Contains(buf.String(), "<autoFilter") {
					filters = false
					t.Errorf("%s has no autoFilter", sh)
				}
			}
		}
	}
	if matched != 4 {
		t.Errorf("found %d of 4 data sheets in the package", matched)
	}
	if !chart || !filters {
		t.Errorf("chart %v filters %v", chart, filters)
	}
}

func copyN(dst *strings.Builder, r interface{ Read([]byte) (int, error) }) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		dst.Write(buf[:k])
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}

// review opens the workbook, applies edit and saves it under a new name,
// as a person using a spreadsheet program would.
func review(t *testing.T, path string, edit func(f *excelize.File)) string {
	t.Helper()
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	edit(f)
	out := strings.TrimSuffix(path, ".xlsx") + "-reviewed.xlsx"
	if err := f.SaveAs(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReadDecisions(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName("2026-12-01"))
	if _, err := Write(path, sampleReport()); err != nil {
		t.Fatal(err)
	}
	reviewed := review(t, path, func(f *excelize.File) {
		_ = f.SetCellValue(SheetExceptions, "N2", "RETRY")
		_ = f.SetCellValue(SheetExceptions, "O2", "funds arrived")
		_ = f.SetCellValue(SheetExceptions, "N4", "ESCALATE")
	})
	got, err := ReadDecisions(reviewed, "2026-12-01")
	if err != nil {
		t.Fatal(err)
	}
	want := []Decision{
		{Row: 2, Key: "POSTING:001:17", Kind: KindPosting, BankID: "001", OutboxID: 17, Ref: "REF17", CaseID: "CASE-1",
			Status: "BLOCKED", Resolution: Retry, Comment: "funds arrived"},
		{Row: 4, Key: "CASE:CASE-9", Kind: KindCase, BankID: "001", CaseID: "CASE-9", Status: "OPEN", Resolution: Escalate},
	}
	if got.Rows != 3 || !slices.Equal(got.Decisions, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	cases := []struct {
		name string
		date string
		edit func(f *excelize.File)
		msg  string
	}{
		{"wrong business date", "2026-12-02", func(f *excelize.File) {}, "not 2026-12-02"},
		{"amount changed", "2026-12-01", func(f *excelize.File) { _ = f.SetCellValue(SheetExceptions, "H2", 250000) }, "row 2"},
		{"outbox id changed", "2026-12-01", func(f *excelize.File) { _ = f.SetCellValue(SheetExceptions, "D3", 17) }, "row 3"},
		{"digest changed too", "2026-12-01", func(f *excelize.File) {
			_ = f.SetCellValue(SheetExceptions, "I2", "PENDING")
			_ = f.SetCellValue(SheetExceptions, "P2", RowDigest("2026-12-01", []string{"POSTING:001:17", "POSTING", "001", "17", "REF17", "TX17", "001-1-0000002", "25000", "PENDING", "INSUFFICIENT_FUNDS", "CASE-1"}))
		}, "row 2"},
		{"row added", "2026-12-01", func(f *excelize.File) {
			_ = f.SetSheetRow(SheetExceptions, "A5", &[]any{"POSTING:001:99", "POSTING", "001", 99})
		}, "row 5"},
		{"row duplicated", "2026-12-01", func(f *excelize.File) {
			rows, _ := f.GetRows(SheetExceptions, excelize.Options{RawCellValue: true})
			r := make([]any, len(rows[1]))
			for i, v := range rows[1] {
				r[i] = v
			}
			_ = f.SetSheetRow(SheetExceptions, "A5", &r)
		}, "same row"},
		{"bad resolution", "2026-12-01", func(f *excelize.File) { _ = f.SetCellValue(SheetExceptions, "N3", "IGNORE") }, "IGNORE"},
		{"control sheet deleted", "2026-12-01", func(f *excelize.File) { _ = f.DeleteSheet(SheetControl) }, "control sheet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := review(t, path, c.edit)
			_, err := ReadDecisions(p, c.date)
			if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want rejection mentioning %q", err, c.msg)
			}
		})
	}
}

func TestWriteReplacesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName("2026-12-01"))
	r := sampleReport()
	if _, err := Write(path, r); err != nil {
		t.Fatal(err)
	}
	r = sampleReport()
	r.Banks = r.Banks[:1]
	if _, err := Write(path, r); err != nil {
		t.Fatal(err)
	}
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if v, _ := f.GetCellValue(SheetSummary, "A5"); v != "TOTAL" {
		t.Fatalf("A5 = %q after rewrite", v)
	}
	if matches, _ := filepath.Glob(path + ".tmp"); len(matches) != 0 {
		t.Fatal("temporary file left behind")
	}
}

// A damaged or crafted file whose zip entry declares a huge unzipped size
// is refused as unreadable, without allocating that size (excelize sizes
// its read buffer from the declared size).
func TestReadDecisionsRefusesHugeDeclaredSize(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "xl/worksheets/sheet1.xml", Method: zip.Store,
		CompressedSize64: 5, UncompressedSize64: 4 << 30, CRC32: crc32.ChecksumIEEE([]byte("<a/>\n"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("<a/>\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "huge.xlsx")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ReadDecisions(path, "")
	runtime.ReadMemStats(&after)
	if !domainerr.Has(err, "INVALID_REQUEST") {
		t.Fatalf("err = %v, want INVALID_REQUEST", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("reading it allocated %d MB", grew>>20)
	}
}
