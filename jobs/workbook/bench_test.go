package workbook

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
)

// BenchmarkWriteRows writes a workbook with 50,000 drift rows and 50,000
// exception rows per operation and reports rows/s over all sheets.
func BenchmarkWriteRows(b *testing.B) {
	const n = 50_000
	dir := b.TempDir()
	var rows int
	start := time.Now()
	for i := 0; i < b.N; i++ {
		r := sampleReport()
		r.Drifts = func(yield func(Drift, error) bool) {
			for k := 0; k < n; k++ {
				if !yield(Drift{BankID: "001", AccountHash: fmt.Sprintf("h-%07d", k), CoreAccount: fmt.Sprintf("001-1-%07d", k),
					ShadowBalance: int64(k) * 100, CoreBalance: int64(k)*100 + 5, Drift: 5, DriftID: fmt.Sprintf("D-%d", k),
					Status: "OPEN", Source: "INQUIRY", DetectedAt: genAt}, nil) {
					return
				}
			}
		}
		r.Exceptions = iter.Seq2[Exception, error](func(yield func(Exception, error) bool) {
			for k := 0; k < n; k++ {
				if !yield(Exception{Kind: KindPosting, BankID: "001", OutboxID: int64(k + 1), Ref: fmt.Sprintf("REF%d", k),
					TxID: fmt.Sprintf("TX%d", k), Account: "001-1-0000001", Amount: 1000, Status: "BLOCKED",
					ReasonCode: "INSUFFICIENT_FUNDS", CaseID: "CASE-1", SLA: genAt, Since: genAt}, nil) {
					return
				}
			}
		})
		st, err := Write(filepath.Join(dir, FileName("2026-12-01")), r)
		if err != nil {
			b.Fatal(err)
		}
		rows += st.Rows
	}
	b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkExceptionRows writes a workbook whose Exceptions sheet has
// ZCGW_WORKBOOK_ROWS rows (default 100,000; the figure is
// 1,000,000) per operation, every row with its MAC, and reports rows/s,
// the file's size and the process's peak RSS during the writes (VmHWM,
// reset before each write) as a multiple of the file's size.
//
// Each operation then writes the same cells with a plain excelize
// StreamWriter loop (one sheet, SetRow, SaveAs: no MACs, filters, frozen
// header, drop-down or control sheet) and reports raw-rows/s, ours/raw
// (the ratio of the two wall times in the same run), raw-cpu-µs/row and
// cpu-ours/raw (the ratio of the CPU the two took): on a loaded machine
// the ratios, the CPU one above all, mean more than any rows/s.
func BenchmarkExceptionRows(b *testing.B) {
	n := 100_000
	if s := os.Getenv("ZCGW_WORKBOOK_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("ZCGW_WORKBOOK_ROWS=%q", s)
		}
	}
	dir := b.TempDir()
	rows := func(yield func(Exception, error) bool) {
		e := Exception{Kind: KindPosting, BankID: "001", Account: "001-1-0000001", Status: "BLOCKED",
			ReasonCode: "INSUFFICIENT_FUNDS", CaseID: "CASE-1", SLA: genAt, Since: genAt}
		for k := 0; k < n; k++ {
			e.OutboxID, e.Amount = int64(k+1), int64(1000+k)
			e.Ref, e.TxID = "REF"+strconv.Itoa(k), "TX-20261201-"+strconv.Itoa(k)
			if !yield(e, nil) {
				return
			}
		}
	}
	var size, peak int64
	var ours, raw, cpu, rawCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
		resetPeakRSS(b)
		r := sampleReport()
		r.Drifts = nil
		r.Exceptions = rows
		t0, cpu0 := time.Now(), cpuTime()
		st, err := Write(filepath.Join(dir, FileName("2026-12-01")), r)
		if err != nil {
			b.Fatal(err)
		}
		ours += time.Since(t0)
		cpu += cpuTime() - cpu0
		peak = max(peak, peakRSS(b))
		if st.Exceptions != n {
			b.Fatalf("wrote %d exception rows, want %d", st.Exceptions, n)
		}
		size = st.Bytes
		runtime.GC()
		t0, cpu0 = time.Now(), cpuTime()
		rawStreamWriter(b, filepath.Join(dir, "raw.xlsx"), rows)
		raw += time.Since(t0)
		rawCPU += cpuTime() - cpu0
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-µs/row")
	b.ReportMetric(float64(n*b.N)/ours.Seconds(), "rows/s")
	b.ReportMetric(float64(n*b.N)/raw.Seconds(), "raw-rows/s")
	b.ReportMetric(ours.Seconds()/raw.Seconds(), "ours/raw")
	b.ReportMetric(float64(rawCPU.Microseconds())/float64(n*b.N), "raw-cpu-µs/row")
	b.ReportMetric(cpu.Seconds()/rawCPU.Seconds(), "cpu-ours/raw")
	b.ReportMetric(float64(size)/1e6, "file-MB")
	b.ReportMetric(float64(peak)/1e6, "peak-RSS-MB")
	b.ReportMetric(float64(peak)/float64(size), "RSS/file")
	b.ReportMetric(0, "ns/op")
}

// rawStreamWriter is the yardstick of BenchmarkExceptionRows: the same
// Exceptions cells written by a plain excelize StreamWriter loop and
// saved by excelize, with a row MAC cell of the same size that is not
// computed.
func rawStreamWriter(b *testing.B, path string, rows iter.Seq2[Exception, error]) {
	f := excelize.NewFile()
	defer f.Close()
	yenFmt, dateFmt := `"¥"#,##0;[Red]-"¥"#,##0`, "yyyy-mm-dd hh:mm"
	yen, err := f.NewStyle(&excelize.Style{CustomNumFmt: &yenFmt})
	if err != nil {
		b.Fatal(err)
	}
	date, err := f.NewStyle(&excelize.Style{CustomNumFmt: &dateFmt})
	if err != nil {
		b.Fatal(err)
	}
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		b.Fatal(err)
	}
	header := make([]any, len(exceptionHeader))
	for i, h := range exceptionHeader {
		header[i] = h
	}
	if err := sw.SetRow("A1", header); err != nil {
		b.Fatal(err)
	}
	mac := strings.Repeat("0123456789abcdef", 4)
	row := 2
	for e := range rows {
		cells := []any{e.Key(), e.Kind, e.BankID, e.OutboxID, e.Ref, e.TxID, e.Account,
			excelize.Cell{StyleID: yen, Value: e.Amount}, e.Status, e.ReasonCode, e.CaseID,
			excelize.Cell{StyleID: date, Value: jstCell(e.SLA)}, excelize.Cell{StyleID: date, Value: jstCell(e.Since)},
			nil, nil, mac}
		if err := sw.SetRow("A"+strconv.Itoa(row), cells); err != nil {
			b.Fatal(err)
		}
		row++
	}
	if err := sw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.SaveAs(path); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the process's CPU time so far (user + system): per row it
// says what the machine pays whatever else runs on it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the process's VmHWM (Linux: clear_refs 5).
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS here: %v", err)
	}
}

// peakRSS reads VmHWM from /proc/self/status, in bytes.
func peakRSS(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
