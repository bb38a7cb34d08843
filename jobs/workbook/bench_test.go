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
// reset before the first write) as a multiple of the file's size.
func BenchmarkExceptionRows(b *testing.B) {
	n := 100_000
	if s := os.Getenv("ZCGW_WORKBOOK_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("ZCGW_WORKBOOK_ROWS=%q", s)
		}
	}
	dir := b.TempDir()
	runtime.GC()
	resetPeakRSS(b)
	b.ResetTimer()
	cpu0 := cpuTime()
	var size int64
	for i := 0; i < b.N; i++ {
		r := sampleReport()
		r.Drifts = nil
		r.Exceptions = func(yield func(Exception, error) bool) {
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
		st, err := Write(filepath.Join(dir, FileName("2026-12-01")), r)
		if err != nil {
			b.Fatal(err)
		}
		if st.Exceptions != n {
			b.Fatalf("wrote %d exception rows, want %d", st.Exceptions, n)
		}
		size = st.Bytes
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n*b.N), "cpu-µs/row")
	peak := peakRSS(b)
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(size)/1e6, "file-MB")
	b.ReportMetric(float64(peak)/1e6, "peak-RSS-MB")
	b.ReportMetric(float64(peak)/float64(size), "RSS/file")
	b.ReportMetric(0, "ns/op")
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
