package workbook

import (
	"fmt"
	"iter"
	"path/filepath"
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
