package workbook

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
		Seal: testSeal,
	}
}

// The node's workbook key and the id it issued in these tests.
var (
	testKey  = bytes.Repeat([]byte{0x5a}, KeySize)
	testSeal = Seal{WorkbookID: "WB-0123456789abcdef0123456789abcdef", Key: testKey}
)

// expect is what the node checks a reviewed sampleReport against: the
// workbook it issued for 2026-12-01 (3 exception rows, 15 rows in all).
func expect(date string) Expect {
	return Expect{BusinessDate: date, Key: testKey, Issued: []Issued{{WorkbookID: testSeal.WorkbookID, ExceptionRows: 3, Rows: 15}}}
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
	if err != nil || len(dvs) != 1 || !strings.Contains(dvs[0].Formula1, "RETRY,WRITE_OFF,ESCALATE,RESOLVED") ||
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
	st, err := Write(path, sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 15 || st.Exceptions != 3 {
		t.Fatalf("stats %+v: expect() is out of date", st)
	}
	reviewed := review(t, path, func(f *excelize.File) {
		_ = f.SetCellValue(SheetExceptions, "N2", "RETRY")
		_ = f.SetCellValue(SheetExceptions, "O2", "funds arrived")
		_ = f.SetCellValue(SheetExceptions, "N4", "resolved")
		_ = f.SetCellValue(SheetExceptions, "O4", "bank confirmed the fix")
	})
	got, err := ReadDecisions(reviewed, expect("2026-12-01"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Decision{
		{Row: 2, Key: "POSTING:001:17", Kind: KindPosting, BankID: "001", OutboxID: 17, Ref: "REF17", CaseID: "CASE-1",
			Status: "BLOCKED", Resolution: Retry, Comment: "funds arrived"},
		{Row: 4, Key: "CASE:CASE-9", Kind: KindCase, BankID: "001", CaseID: "CASE-9", Status: "OPEN", Resolution: Resolved,
			Comment: "bank confirmed the fix"},
	}
	if got.Rows != 3 || got.WorkbookID != testSeal.WorkbookID || !slices.Equal(got.Decisions, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	// Workbooks of the same date written under another workbook id and
	// under another node's key: genuine, but not issued by this node.
	otherID := sampleReport()
	otherID.Seal.WorkbookID = "WB-ffffffffffffffffffffffffffffffff"
	otherIDPath := filepath.Join(t.TempDir(), FileName("2026-12-01"))
	if _, err := Write(otherIDPath, otherID); err != nil {
		t.Fatal(err)
	}
	otherKey := sampleReport()
	otherKey.Seal.Key = bytes.Repeat([]byte{0xa5}, KeySize)
	otherKeyPath := filepath.Join(t.TempDir(), FileName("2026-12-01"))
	if _, err := Write(otherKeyPath, otherKey); err != nil {
		t.Fatal(err)
	}
	otherRows, err := excelize.OpenFile(otherIDPath)
	if err != nil {
		t.Fatal(err)
	}
	defer otherRows.Close()
	foreign, _ := otherRows.GetRows(SheetExceptions, excelize.Options{RawCellValue: true})

	copyRow := func(f *excelize.File, from []string, to string, edit func(r []any)) {
		r := make([]any, len(from))
		for i, v := range from {
			r[i] = v
		}
		if edit != nil {
			edit(r)
		}
		_ = f.SetSheetRow(SheetExceptions, to, &r)
	}
	cases := []struct {
		name string
		path string
		date string
		edit func(f *excelize.File)
		msg  string
	}{
		{"wrong business date", path, "2026-12-02", func(f *excelize.File) {}, "not 2026-12-02"},
		{"amount changed", path, "2026-12-01", func(f *excelize.File) { _ = f.SetCellValue(SheetExceptions, "H2", 250000) }, "row 2"},
		{"outbox id changed", path, "2026-12-01", func(f *excelize.File) { _ = f.SetCellValue(SheetExceptions, "D3", 17) }, "row 3"},
		{"amount changed and the old digest recipe recomputed", path, "2026-12-01", func(f *excelize.File) {
			cells := []string{"POSTING:001:17", "POSTING", "001", "17", "REF17", "TX17", "001-1-0000002", "2500000", "BLOCKED", "INSUFFICIENT_FUNDS", "CASE-1"}
			_ = f.SetCellValue(SheetExceptions, "H2", 2500000)
			_ = f.SetCellValue(SheetExceptions, "N2", "RETRY")
			_ = f.SetCellValue(SheetExceptions, "P2", oldRecipeDigest("2026-12-01", cells))
		}, "row 2"},
		{"row added with the old digest recipe", path, "2026-12-01", func(f *excelize.File) {
			cells := []string{"POSTING:001:99", "POSTING", "001", "99", "REF99", "TX99", "001-1-0000009", "990000", "BLOCKED", "INSUFFICIENT_FUNDS", ""}
			_ = f.SetSheetRow(SheetExceptions, "A5", &[]any{cells[0], cells[1], cells[2], 99, cells[4], cells[5], cells[6], 990000,
				cells[8], cells[9], "", "", "", "RETRY", "", oldRecipeDigest("2026-12-01", cells)})
		}, "row 5"},
		{"row added with another row's MAC", path, "2026-12-01", func(f *excelize.File) {
			rows, _ := f.GetRows(SheetExceptions, excelize.Options{RawCellValue: true})
			copyRow(f, rows[1], "A5", func(r []any) { r[0], r[3], r[13] = "POSTING:001:99", "99", "RETRY" })
		}, "row 5"},
		{"row duplicated", path, "2026-12-01", func(f *excelize.File) {
			rows, _ := f.GetRows(SheetExceptions, excelize.Options{RawCellValue: true})
			copyRow(f, rows[1], "A5", nil)
		}, "same row"},
		{"row from another workbook of the date", path, "2026-12-01", func(f *excelize.File) {
			copyRow(f, foreign[1], "A2", func(r []any) { r[13] = "WRITE_OFF" })
		}, "row 2"},
		{"workbook id not issued by the node", otherIDPath, "2026-12-01", func(f *excelize.File) {}, "not a workbook this node issued"},
		{"workbook id swapped to the issued one", otherIDPath, "2026-12-01", func(f *excelize.File) {
			_ = f.SetCellValue(SheetControl, "B3", testSeal.WorkbookID)
		}, "row 2"},
		{"another node's key", otherKeyPath, "2026-12-01", func(f *excelize.File) {}, "row 2"},
		{"bad resolution", path, "2026-12-01", func(f *excelize.File) { _ = f.SetCellValue(SheetExceptions, "N3", "IGNORE") }, "IGNORE"},
		{"RESOLVED without a comment", path, "2026-12-01", func(f *excelize.File) { _ = f.SetCellValue(SheetExceptions, "N4", "RESOLVED") },
			"row 4: RESOLVED needs a Comment"},
		{"control sheet deleted", path, "2026-12-01", func(f *excelize.File) { _ = f.DeleteSheet(SheetControl) }, "control sheet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := review(t, c.path, c.edit)
			got, err := ReadDecisions(p, expect(c.date))
			if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v (decisions %+v), want rejection mentioning %q", err, got.Decisions, c.msg)
			}
		})
	}
}

// oldRecipeDigest is the unkeyed row digest zcgw used before workbook MACs
// (its recipe was public): a reviewer could recompute it after an edit.
func oldRecipeDigest(businessDate string, cells []string) string {
	h := sha256.New()
	h.Write([]byte("zcgw-recon-v1\x1f" + businessDate))
	for _, c := range cells {
		h.Write([]byte{0x1f})
		h.Write([]byte(c))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// The unzip bound is derived from the rows the node issued: a reviewed
// copy bloated past it (here by 9 MiB of text on a 15-row workbook) is
// refused before it is read, and the same file passes the size check when
// the node had issued enough rows for it.
func TestReadDecisionsBoundFromIssuedRows(t *testing.T) {
	if got, want := UnzipBound([]Issued{{Rows: 15}, {Rows: 1000}}), int64(UnzipOverhead+1000*UnzipPerRow); got != want {
		t.Fatalf("UnzipBound = %d, want %d", got, want)
	}
	path := filepath.Join(t.TempDir(), FileName("2026-12-01"))
	if _, err := Write(path, sampleReport()); err != nil {
		t.Fatal(err)
	}
	bloated := review(t, path, func(f *excelize.File) {
		_ = f.SetCellValue(SheetExceptions, "O2", strings.Repeat("x", 30000))
		for r := 0; r < 300; r++ { // ~9 MiB of distinct text on the Drift sheet
			_ = f.SetCellValue(SheetDrift, cellName(12, 10+r), fmt.Sprintf("%05d", r)+strings.Repeat("y", 32000))
		}
	})
	_, err := ReadDecisions(bloated, expect("2026-12-01"))
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "more than a reviewed copy") {
		t.Fatalf("err = %v, want the size refusal", err)
	}
	e := expect("2026-12-01")
	e.Issued[0].Rows = 10000
	if _, err := ReadDecisions(bloated, e); err != nil {
		t.Fatalf("with 10000 issued rows the same file is refused: %v", err)
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
	_, err = ReadDecisions(path, expect("2026-12-01"))
	runtime.ReadMemStats(&after)
	if !domainerr.Has(err, "INVALID_REQUEST") {
		t.Fatalf("err = %v, want INVALID_REQUEST", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("reading it allocated %d MB", grew>>20)
	}
}

// A workbook large enough that its Exceptions sheet is deflated in many
// parallel chunks reads back whole: every row, in order, its MAC
// recomputing from its cells, with the frozen header and the drop-down.
func TestLargeWorkbookReadsBack(t *testing.T) {
	const n = 6_000 // about 4 MB of sheet XML: 4 deflate chunks
	exception := func(k int) Exception {
		return Exception{Kind: KindPosting, BankID: "001", OutboxID: int64(k + 1), Ref: fmt.Sprintf("REF%d", k), TxID: fmt.Sprintf("TX-%d", k),
			Account: "001-1-0000001", Amount: int64(k), Status: "BLOCKED", ReasonCode: "INSUFFICIENT_FUNDS", Since: genAt}
	}
	r := sampleReport()
	r.Exceptions = func(yield func(Exception, error) bool) {
		for k := 0; k < n; k++ {
			if !yield(exception(k), nil) {
				return
			}
		}
	}
	path := filepath.Join(t.TempDir(), FileName("2026-12-01"))
	st, err := Write(path, r)
	if err != nil || st.Exceptions != n {
		t.Fatalf("write: %+v %v", st, err)
	}
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p, err := f.GetPanes(SheetExceptions); err != nil || !p.Freeze || p.YSplit != 1 {
		t.Errorf("panes %+v %v", p, err)
	}
	if dvs, err := f.GetDataValidations(SheetExceptions); err != nil || len(dvs) != 1 || dvs[0].Sqref != fmt.Sprintf("N2:N%d", n+1) {
		t.Errorf("data validation %+v %v", dvs, err)
	}
	rows, err := f.Rows(SheetExceptions)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	k := -1
	for rows.Next() {
		cells, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		if k >= 0 {
			e := exception(k)
			if len(cells) != exceptionCols || cells[colKey-1] != e.Key() || cells[colRef-1] != e.Ref || cells[colResolution-1] != "" ||
				cells[colMAC-1] != rowMAC(testKey, testSeal.WorkbookID, "2026-12-01", e.identity()) {
				t.Fatalf("row %d: %q", k+2, cells)
			}
		}
		k++
	}
	if k != n {
		t.Fatalf("read %d exception rows, want %d", k, n)
	}
}
