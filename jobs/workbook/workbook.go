package workbook

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/zcgw/zcgw/coordinator/clock"
)

// Sheet names.
const (
	SheetSummary    = "Summary"
	SheetDrift      = "Drift"
	SheetExceptions = "Exceptions"
	SheetDNS        = "DNS"
	SheetControl    = "Control"
)

// Decisions an operator can choose in the Resolution column.
const (
	Retry    = "RETRY"
	WriteOff = "WRITE_OFF"
	Escalate = "ESCALATE"
	// Resolved ends the row's Case; the Comment says why (required).
	Resolved = "RESOLVED"
)

// Exception kinds.
const (
	KindPosting = "POSTING" // an outbox row BLOCKED or IN_DOUBT
	KindCase    = "CASE"    // an open Case
)

// FileName is the workbook's name for a business date.
func FileName(businessDate string) string { return "recon-" + businessDate + ".xlsx" }

// Path is the workbook's path under the data folder: <data>/reports/<FileName>.
func Path(dataDir, businessDate string) string {
	return filepath.Join(dataDir, "reports", FileName(businessDate))
}

// ChainAudit is the result of the full FinalityLog chain audit.
type ChainAudit struct {
	Chains, Entries, Breaks int
	CaseIDs                 []string // the Cases opened for the breaks
}

// Text is the one-line result shown on the Summary sheet.
func (c ChainAudit) Text() string {
	if c.Breaks == 0 {
		return fmt.Sprintf("OK: %d chains, %d entries", c.Chains, c.Entries)
	}
	return fmt.Sprintf("BROKEN: %d of %d chains (cases %s)", c.Breaks, c.Chains, strings.Join(c.CaseIDs, ", "))
}

// Bank is one Summary row.
type Bank struct {
	BankID                    string
	Accounts                  int
	ShadowTotal, CoreTotal    int64 // yen, both over the accounts the core answered for
	Matched, Drifts           int
	Unsettled, Unavailable    int
	Pending, InDoubt, Blocked int // outbox rows
	NetDNS                    int64
	ReconError                string // non-empty when the bank could not be reconciled
}

// Drift is one drifted account.
type Drift struct {
	BankID, AccountHash, CoreAccount string
	ShadowBalance, CoreBalance       int64
	Drift                            int64 // core - shadow
	DriftID, CaseID, Status, Source  string
	DetectedAt                       time.Time
}

// Exception is one row of the Exceptions sheet: a BLOCKED or IN_DOUBT
// posting (KindPosting, OutboxID set) or an open Case (KindCase).
type Exception struct {
	Kind       string
	BankID     string
	OutboxID   int64
	Ref, TxID  string
	Account    string
	Amount     int64
	Status     string // outbox status or case state
	ReasonCode string
	CaseID     string
	SLA        time.Time // the Case's SLA deadline (zero: none)
	Since      time.Time // when the row entered its state / the Case was opened
}

// Key identifies the row across a round trip: POSTING:<bank>:<outbox id>
// or CASE:<case id>.
func (e Exception) Key() string {
	if e.Kind == KindPosting {
		return KindPosting + ":" + e.BankID + ":" + strconv.FormatInt(e.OutboxID, 10)
	}
	return KindCase + ":" + e.CaseID
}

// DNSPosition is a bank's net DNS position over the business date's cycles.
type DNSPosition struct {
	BankID                  string
	Cycles                  int
	GrossSend, GrossReceive int64
	Net                     int64 // > 0 net receiver, < 0 net payer
	Settled                 bool  // every cycle's position settled
}

// Report is everything the workbook shows. Drifts and Exceptions are
// iterators so that a very large day is streamed, never held in memory.
// Write ranges over Exceptions on a goroutine of its own (and has stopped
// doing so when it returns).
type Report struct {
	BusinessDate string // JST YYYY-MM-DD
	GeneratedAt  time.Time
	Chain        ChainAudit
	Banks        []Bank
	Drifts       iter.Seq2[Drift, error]
	Exceptions   iter.Seq2[Exception, error]
	DNS          []DNSPosition
	// Seal is the node's key and the id it issued for this workbook:
	// every exception row carries its MAC (see ReadDecisions).
	Seal Seal
}

// Stats says what Write wrote.
type Stats struct {
	Path       string
	Banks      int
	Drifts     int
	Exceptions int
	DNS        int
	Rows       int // all rows written, headers included
	Bytes      int64
}

// Columns of the Exceptions sheet (1-based), shared by Write and ReadDecisions.
const (
	colKey = iota + 1
	colKind
	colBank
	colOutboxID
	colRef
	colTxID
	colAccount
	colAmount
	colStatus
	colReason
	colCaseID
	colSLA
	colSince
	colResolution
	colComment
	colMAC
	exceptionCols = colMAC
)

var exceptionHeader = []string{"Row key", "Kind", "Bank", "Outbox ID", "Posting ref", "txid", "Account",
	"Amount (JPY)", "Status", "Reason", "Case ID", "SLA deadline (JST)", "Since (JST)", "Resolution", "Comment", "Row MAC"}

// identity lists the cells covered by the row MAC, as they are stored.
func (e Exception) identity() []string {
	return []string{e.Key(), e.Kind, e.BankID, strconv.FormatInt(e.OutboxID, 10), e.Ref, e.TxID, e.Account,
		strconv.FormatInt(e.Amount, 10), e.Status, e.ReasonCode, e.CaseID}
}

// jstCell turns an instant into the cell value Excel shows as the JST wall
// clock (excelize converts instants as UTC).
func jstCell(t time.Time) any {
	if t.IsZero() {
		return ""
	}
	j := t.In(clock.JST)
	return time.Date(j.Year(), j.Month(), j.Day(), j.Hour(), j.Minute(), j.Second(), 0, time.UTC)
}

type styles struct {
	header, yen, yenHi, date, text, bold int
}

func newStyles(f *excelize.File) (styles, error) {
	var s styles
	var err error
	yenFmt := `"¥"#,##0;[Red]-"¥"#,##0`
	dateFmt := "yyyy-mm-dd hh:mm"
	mk := func(st *excelize.Style) int {
		if err != nil {
			return 0
		}
		var id int
		id, err = f.NewStyle(st)
		return id
	}
	s.header = mk(&excelize.Style{Font: &excelize.Font{Bold: true, Color: "FFFFFF"},
		Fill:      excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"305496"}},
		Alignment: &excelize.Alignment{Vertical: "center", WrapText: true}})
	s.yen = mk(&excelize.Style{CustomNumFmt: &yenFmt})
	s.yenHi = mk(&excelize.Style{CustomNumFmt: &yenFmt, Font: &excelize.Font{Bold: true, Color: "9C0006"},
		Fill: excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"FFC7CE"}}})
	s.date = mk(&excelize.Style{CustomNumFmt: &dateFmt})
	s.text = mk(&excelize.Style{NumFmt: 49})
	s.bold = mk(&excelize.Style{Font: &excelize.Font{Bold: true}})
	return s, err
}

func headerRow(h []string, style int) []any {
	row := make([]any, len(h))
	for i, v := range h {
		row[i] = excelize.Cell{StyleID: style, Value: v}
	}
	return row
}

func cellName(col, row int) string {
	n, _ := excelize.CoordinatesToCellName(col, row)
	return n
}

// freeze freezes the rows above topRow (must be called before the first SetRow).
func freeze(sw *excelize.StreamWriter, topRow int) error {
	return sw.SetPanes(&excelize.Panes{Freeze: true, YSplit: topRow - 1, TopLeftCell: cellName(1, topRow),
		ActivePane: "bottomLeft", Selection: []excelize.Selection{{SQRef: cellName(1, topRow), ActiveCell: cellName(1, topRow), Pane: "bottomLeft"}}})
}

// Write writes the workbook to path through a temporary file in the same
// folder and a rename, so a reader (or a crash) never sees half a
// workbook, and writing it again for the same date replaces it whole.
func Write(path string, r Report) (Stats, error) {
	st := Stats{Path: path}
	if _, err := clock.ParseBusinessDate(r.BusinessDate); err != nil {
		return st, fmt.Errorf("workbook: business date %q: %w", r.BusinessDate, err)
	}
	if err := r.Seal.check(); err != nil {
		return st, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return st, fmt.Errorf("workbook: %w", err)
	}
	f := excelize.NewFile()
	defer f.Close()
	s, err := newStyles(f)
	if err != nil {
		return st, fmt.Errorf("workbook: styles: %w", err)
	}
	if err := f.SetSheetName("Sheet1", SheetSummary); err != nil {
		return st, fmt.Errorf("workbook: %w", err)
	}
	for _, name := range []string{SheetDrift, SheetExceptions, SheetDNS, SheetControl} {
		if _, err := f.NewSheet(name); err != nil {
			return st, fmt.Errorf("workbook: %w", err)
		}
	}
	// Hide the control sheet and pick the active one while every sheet is
	// still empty: both calls parse each worksheet, and on a streamed sheet
	// that means reading back (and later re-encoding) every written row.
	if err := f.SetSheetVisible(SheetControl, false, true); err != nil {
		return st, fmt.Errorf("workbook: hide control sheet: %w", err)
	}
	f.SetActiveSheet(0)
	steps := []struct {
		name string
		fn   func() error
	}{
		{SheetSummary, func() error { return writeSummary(f, s, r, &st) }},
		{SheetDrift, func() error { return writeDrift(f, s, r, &st) }},
		{SheetExceptions + "/" + SheetControl, func() error { return writeExceptions(f, s, r, &st) }},
		{SheetDNS, func() error { return writeDNS(f, s, r, &st) }},
	}
	for _, step := range steps {
		if err := step.fn(); err != nil {
			return st, fmt.Errorf("workbook: sheet %s: %w", step.name, err)
		}
	}
	tmp := path + ".tmp"
	if err := saveSynced(f, tmp); err != nil {
		_ = os.Remove(tmp)
		return st, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return st, fmt.Errorf("workbook: %w", err)
	}
	if fi, err := os.Stat(path); err == nil {
		st.Bytes = fi.Size()
	}
	return st, nil
}

// saveSynced writes the workbook to p and fsyncs it before the rename.
//
// excelize's own save assembles the whole zip in a bytes.Buffer (memory
// the size of the file, and more while it grows) and deflates at the
// default level, the slowest part of a large workbook. Its ZipWriter hook
// is handed that buffer; ours ignores it and writes the archive straight
// to the file through a buffered writer, at flate.BestSpeed (the file is
// somewhat larger, written several times faster). The buffer stays empty,
// so excelize's WriteTo writes nothing more.
func saveSynced(f *excelize.File, p string) error {
	fh, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("workbook: %w", err)
	}
	bw := bufio.NewWriterSize(fh, 1<<20)
	zw := zip.NewWriter(bw)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return newParallelDeflate(w), nil })
	f.SetZipWriter(func(io.Writer) excelize.ZipWriter { return zw })
	if n, err := f.WriteTo(io.Discard); err != nil || n != 0 {
		fh.Close()
		return fmt.Errorf("workbook: save (%d bytes left in excelize's buffer): %w", n, err)
	}
	if err := bw.Flush(); err != nil {
		fh.Close()
		return fmt.Errorf("workbook: save: %w", err)
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return fmt.Errorf("workbook: fsync: %w", err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("workbook: %w", err)
	}
	return nil
}

var summaryHeader = []string{"Bank", "Accounts", "Shadow total (JPY)", "Core total (JPY)", "Core − shadow (JPY)",
	"Matched", "Drift count", "Unsettled", "Unavailable", "Outbox PENDING", "Outbox IN_DOUBT", "Outbox BLOCKED",
	"Net DNS position (JPY)", "Chain audit", "Reconciliation error"}

// Summary layout: rows 1-2 title, row 3 header (frozen), then one row per bank and a total.
const summaryHeaderRow = 3

func writeSummary(f *excelize.File, s styles, r Report, st *Stats) error {
	sw, err := f.NewStreamWriter(SheetSummary)
	if err != nil {
		return err
	}
	if err := freeze(sw, summaryHeaderRow+1); err != nil {
		return err
	}
	if err := sw.SetColWidth(1, 1, 10); err != nil {
		return err
	}
	if err := sw.SetColWidth(2, 13, 17); err != nil {
		return err
	}
	if err := sw.SetColWidth(14, 15, 40); err != nil {
		return err
	}
	if err := sw.SetRow("A1", []any{excelize.Cell{StyleID: s.bold, Value: "Reconciliation workbook"},
		"Business date (JST)", r.BusinessDate, "Generated (JST)", excelize.Cell{StyleID: s.date, Value: jstCell(r.GeneratedAt)}}); err != nil {
		return err
	}
	if err := sw.SetRow("A2", []any{"Chain audit", r.Chain.Text()}); err != nil {
		return err
	}
	if err := sw.SetRow(cellName(1, summaryHeaderRow), headerRow(summaryHeader, s.header)); err != nil {
		return err
	}
	st.Rows += 3
	var tot Bank
	row := summaryHeaderRow + 1
	for _, b := range r.Banks {
		if err := sw.SetRow(cellName(1, row), summaryRow(s, b.BankID, b, r.Chain.Text())); err != nil {
			return err
		}
		tot.Accounts += b.Accounts
		tot.ShadowTotal += b.ShadowTotal
		tot.CoreTotal += b.CoreTotal
		tot.Matched += b.Matched
		tot.Drifts += b.Drifts
		tot.Unsettled += b.Unsettled
		tot.Unavailable += b.Unavailable
		tot.Pending += b.Pending
		tot.InDoubt += b.InDoubt
		tot.Blocked += b.Blocked
		tot.NetDNS += b.NetDNS
		row++
		st.Banks++
		st.Rows++
	}
	last := row - 1
	if len(r.Banks) > 0 {
		if err := f.AutoFilter(SheetSummary, cellName(1, summaryHeaderRow)+":"+cellName(len(summaryHeader), last), nil); err != nil {
			return err
		}
	}
	totals := summaryRow(s, "TOTAL", tot, r.Chain.Text())
	totals[0] = excelize.Cell{StyleID: s.bold, Value: "TOTAL"}
	if err := sw.SetRow(cellName(1, row), totals); err != nil {
		return err
	}
	st.Rows++
	return sw.Flush()
}

func summaryRow(s styles, label string, b Bank, chain string) []any {
	diff := b.CoreTotal - b.ShadowTotal
	diffStyle := s.yen
	if diff != 0 {
		diffStyle = s.yenHi
	}
	return []any{label, b.Accounts, excelize.Cell{StyleID: s.yen, Value: b.ShadowTotal},
		excelize.Cell{StyleID: s.yen, Value: b.CoreTotal}, excelize.Cell{StyleID: diffStyle, Value: diff},
		b.Matched, b.Drifts, b.Unsettled, b.Unavailable, b.Pending, b.InDoubt, b.Blocked,
		excelize.Cell{StyleID: s.yen, Value: b.NetDNS}, chain, b.ReconError}
}

var driftHeader = []string{"Bank", "Account hash", "Core account", "Shadow balance (JPY)", "Core balance (JPY)",
	"Drift (JPY)", "Drift ID", "Case ID", "Status", "Source", "Detected (JST)"}

func writeDrift(f *excelize.File, s styles, r Report, st *Stats) error {
	sw, err := f.NewStreamWriter(SheetDrift)
	if err != nil {
		return err
	}
	if err := freeze(sw, 2); err != nil {
		return err
	}
	if err := sw.SetColWidth(1, 1, 8); err != nil {
		return err
	}
	if err := sw.SetColWidth(2, 11, 20); err != nil {
		return err
	}
	if err := sw.SetRow("A1", headerRow(driftHeader, s.header)); err != nil {
		return err
	}
	st.Rows++
	row := 2
	if r.Drifts != nil {
		for d, err := range r.Drifts {
			if err != nil {
				return err
			}
			if err := sw.SetRow(cellName(1, row), []any{d.BankID, d.AccountHash, d.CoreAccount,
				excelize.Cell{StyleID: s.yen, Value: d.ShadowBalance}, excelize.Cell{StyleID: s.yen, Value: d.CoreBalance},
				excelize.Cell{StyleID: s.yenHi, Value: d.Drift}, d.DriftID, d.CaseID, d.Status, d.Source,
				excelize.Cell{StyleID: s.date, Value: jstCell(d.DetectedAt)}}); err != nil {
				return err
			}
			row++
			st.Drifts++
			st.Rows++
		}
	}
	if err := f.AutoFilter(SheetDrift, "A1:"+cellName(len(driftHeader), max(row-1, 2)), nil); err != nil {
		return err
	}
	return sw.Flush()
}

func writeExceptions(f *excelize.File, s styles, r Report, st *Stats) error {
	sw, err := f.NewStreamWriter(SheetExceptions)
	if err != nil {
		return err
	}
	if err := freeze(sw, 2); err != nil {
		return err
	}
	widths := []float64{24, 9, 6, 10, 20, 24, 16, 14, 11, 20, 26, 17, 17, 13, 40, 66}
	for i, w := range widths {
		if err := sw.SetColWidth(i+1, i+1, w); err != nil {
			return err
		}
	}
	if err := sw.SetRow("A1", headerRow(exceptionHeader, s.header)); err != nil {
		return err
	}
	st.Rows++
	// The control sheet is streamed alongside: a second stream writer on
	// another sheet is allowed (each sheet is its own temp buffer). It
	// names the business date and the workbook id the rows' MACs are bound to.
	cw, err := f.NewStreamWriter(SheetControl)
	if err != nil {
		return err
	}
	if err := cw.SetRow("A1", []any{"business_date", r.BusinessDate}); err != nil {
		return err
	}
	if err := cw.SetRow("A2", []any{"generated_at", clock.Stamp(r.GeneratedAt)}); err != nil {
		return err
	}
	if err := cw.SetRow("A3", []any{"workbook_id", r.Seal.WorkbookID}); err != nil {
		return err
	}
	if err := cw.SetRow("A4", []any{"format", sealFormat}); err != nil {
		return err
	}
	row := 2
	for batch := range exceptionRows(r, s, &err) {
		for _, cells := range batch {
			if err := sw.SetRow("A"+strconv.Itoa(row), cells); err != nil {
				return err
			}
			row++
			st.Exceptions++
			st.Rows++
		}
	}
	if err != nil {
		return err
	}
	last := max(row-1, 2)
	if err := f.AutoFilter(SheetExceptions, "A1:"+cellName(exceptionCols, last), nil); err != nil {
		return err
	}
	dv := excelize.NewDataValidation(true)
	dv.SetSqref(cellName(colResolution, 2) + ":" + cellName(colResolution, max(last, 1000)))
	if err := dv.SetDropList([]string{Retry, WriteOff, Escalate, Resolved}); err != nil {
		return err
	}
	dv.SetError(excelize.DataValidationErrorStyleStop, "Resolution", "Choose RETRY, WRITE_OFF, ESCALATE or RESOLVED (or leave empty)")
	dv.SetInput("Resolution", "RETRY: send again; WRITE_OFF: never send it; ESCALATE: escalate the Case; RESOLVED: close the Case (Comment says why)")
	if err := f.AddDataValidation(SheetExceptions, dv); err != nil {
		return err
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	return cw.Flush()
}

// exceptionBatch is how many Exceptions rows the producer hands over at a time.
const exceptionBatch = 256

// exceptionRows yields the Exceptions sheet's rows (cells, MAC included)
// in batches, built on another goroutine: reading r.Exceptions, building
// the cells and computing the MACs there overlaps the XML encoding of
// the rows before (two cores, about a third faster on a large day). It
// stops the producer when the consumer stops early; the iterator's error,
// if any, is left in *errp after the last batch.
func exceptionRows(r Report, s styles, errp *error) iter.Seq[[][]any] {
	return func(yield func([][]any) bool) {
		if r.Exceptions == nil {
			return
		}
		ch := make(chan [][]any, 4)
		stop := make(chan struct{})
		var perr error
		go func() {
			defer close(ch)
			rb := newRowBuilder(r, s)
			batch := rb.batch()
			send := func() bool {
				select {
				case ch <- batch:
					batch = rb.batch()
					return true
				case <-stop:
					return false
				}
			}
			for e, err := range r.Exceptions {
				if err != nil {
					perr = err
					return
				}
				batch = append(batch, rb.row(e))
				if len(batch) == exceptionBatch && !send() {
					return
				}
			}
			if len(batch) > 0 {
				send()
			}
		}()
		defer func() {
			close(stop)
			for range ch { // wait for the producer to leave the iterator
			}
			if perr != nil {
				*errp = perr
			}
		}()
		for b := range ch {
			if !yield(b) {
				return
			}
		}
	}
}

// rowBuilder builds the Exceptions rows on the producer goroutine with
// few allocations: a batch's cells and its styled cells are two arrays
// (a row's styled cells are handed to excelize as *Cell, which boxes
// without allocating), and a date cell's value is made once per distinct
// instant.
type rowBuilder struct {
	r     Report
	s     styles
	macs  *macer
	cells []any
	cs    []excelize.Cell
	times [2]struct {
		t time.Time
		v any
	}
}

func newRowBuilder(r Report, s styles) *rowBuilder {
	return &rowBuilder{r: r, s: s, macs: newMACer(r.Seal.Key)}
}

// styledCells is how many cells of a row carry a style (amount, SLA, since).
const styledCells = 3

// batch is an empty batch with room for exceptionBatch rows.
func (b *rowBuilder) batch() [][]any {
	b.cells = make([]any, 0, exceptionBatch*exceptionCols)
	b.cs = make([]excelize.Cell, 0, exceptionBatch*styledCells)
	return make([][]any, 0, exceptionBatch)
}

// date is the value of a date cell for t (jstCell); the last instant of
// each of the two date columns is remembered (SLA, since).
func (b *rowBuilder) date(i int, t time.Time) any {
	m := &b.times[i]
	if m.v == nil || !m.t.Equal(t) {
		m.t, m.v = t, jstCell(t)
	}
	return m.v
}

// row is one Exceptions row. Empty cells are left out (nil): Resolution
// and Comment are the reviewer's, and a reader sees a missing cell as "".
func (b *rowBuilder) row(e Exception) []any {
	id := e.identity()
	var outboxID any // no cell: a CASE row has no outbox id
	if e.Kind == KindPosting {
		outboxID = e.OutboxID
	}
	n := len(b.cs)
	b.cs = append(b.cs, excelize.Cell{StyleID: b.s.yen, Value: e.Amount},
		excelize.Cell{StyleID: b.s.date, Value: b.date(0, e.SLA)}, excelize.Cell{StyleID: b.s.date, Value: b.date(1, e.Since)})
	start := len(b.cells)
	b.cells = append(b.cells, id[0], e.Kind, e.BankID, outboxID, e.Ref, e.TxID, e.Account,
		&b.cs[n], e.Status, e.ReasonCode, e.CaseID, &b.cs[n+1], &b.cs[n+2],
		nil, nil, b.macs.mac(b.r.Seal.WorkbookID, b.r.BusinessDate, id))
	cells := b.cells[start:len(b.cells):len(b.cells)]
	for i, c := range cells {
		if c == "" {
			cells[i] = nil
		}
	}
	return cells
}

var dnsHeader = []string{"Bank", "Cycles", "Gross send (JPY)", "Gross receive (JPY)", "Net position (JPY)", "Settled"}

func writeDNS(f *excelize.File, s styles, r Report, st *Stats) error {
	sw, err := f.NewStreamWriter(SheetDNS)
	if err != nil {
		return err
	}
	if err := freeze(sw, 2); err != nil {
		return err
	}
	if err := sw.SetColWidth(1, 6, 18); err != nil {
		return err
	}
	if err := sw.SetRow("A1", headerRow(dnsHeader, s.header)); err != nil {
		return err
	}
	st.Rows++
	row := 2
	for _, p := range r.DNS {
		settled := "no"
		if p.Settled {
			settled = "yes"
		}
		if err := sw.SetRow(cellName(1, row), []any{p.BankID, p.Cycles, excelize.Cell{StyleID: s.yen, Value: p.GrossSend},
			excelize.Cell{StyleID: s.yen, Value: p.GrossReceive}, excelize.Cell{StyleID: s.yen, Value: p.Net}, settled}); err != nil {
			return err
		}
		row++
		st.DNS++
		st.Rows++
	}
	last := max(row-1, 2)
	if err := f.AutoFilter(SheetDNS, "A1:"+cellName(len(dnsHeader), last), nil); err != nil {
		return err
	}
	if len(r.DNS) > 0 {
		ref := func(col string) string { return fmt.Sprintf("'%s'!$%s$2:$%s$%d", SheetDNS, col, col, last) }
		if err := f.AddChart(SheetDNS, "H2", &excelize.Chart{
			Type:   excelize.Col,
			Series: []excelize.ChartSeries{{Name: fmt.Sprintf("'%s'!$E$1", SheetDNS), Categories: ref("A"), Values: ref("E")}},
			Title:  excelize.ChartTitle{Paragraph: []excelize.RichTextRun{{Text: "Net DNS position per bank, " + r.BusinessDate}}},
			Legend: excelize.ChartLegend{Position: "none"},
			Format: excelize.GraphicOptions{ScaleX: 1.2, ScaleY: 1.2},
		}); err != nil {
			return err
		}
	}
	return sw.Flush()
}

// ErrRejected is the cause of every refusal of a reviewed workbook.
var ErrRejected = errors.New("workbook rejected")
