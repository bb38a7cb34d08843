package demo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/formats/zengin"
	"github.com/zcgw/zcgw/gateway/filedrop"
	"github.com/zcgw/zcgw/jobs/batchwindow"
)

// ResultFile is the result file of a dropped Zengin file.
type ResultFile struct {
	Bank       string
	Dropped    string         // the file as the bank dropped it (now in processed/)
	Duplicates int            // drops of the same bytes recorded as DUPLICATE, not applied
	Path       string         // the result file in the bank's outbound folder
	Records    int            // data records in the result file
	Codes      map[string]int // 振替結果コード -> records
}

// fileBank is the batch-window bank that drops a 総合振込 file.
const fileBank = "003"

// fileRecord is one data record of the demo's file and its expected end.
type fileRecord struct {
	to     string // account key
	amount int64
	expect string
}

var fileRecords = []fileRecord{
	{"001/SATO", 250_000, "SETTLED"},
	{"002/YAMADA", 180_000, "SETTLED"},
	{"001/SUZUKI", 64_000, "SETTLED"},
	{"001/TANAKA", 60_000_000, "CANCELLED"}, // more than the payer holds: 資金不足
}

// zenginFile writes the demo's 総合振込 file: one header (the payer,
// 003/MOMIJI), a data record per fileRecords entry, trailer and end.
func zenginFile(date time.Time) ([]byte, error) {
	var buf bytes.Buffer
	w := zengin.NewWriter(&buf)
	payer := accountByKey("003/MOMIJI")
	j := date.In(clock.JST)
	if err := w.WriteHeader(&zengin.Header{Kind: zengin.KindTransfer, ClientCode: "0000012345", ClientName: "ﾓﾐｼﾞ ｼﾖｳｼﾞ(ｶ",
		Date: zengin.Date{Month: int(j.Month()), Day: j.Day()}, BankCode: filedrop.DefaultZenginCode(payer.Bank), BankName: "ﾓﾐｼﾞｼﾝｷﾝ",
		BranchCode: payer.Branch, BranchName: "ﾎﾝﾃﾝ", AccountType: accountType, AccountNumber: payer.Number}); err != nil {
		return nil, err
	}
	for _, r := range fileRecords {
		a := accountByKey(r.to)
		if err := w.WriteData(&zengin.TransferData{Account: zengin.Account{BankCode: filedrop.DefaultZenginCode(a.Bank), BankName: "ﾃﾞﾓ",
			BranchCode: a.Branch, BranchName: "ﾎﾝﾃﾝ", AccountType: accountType, AccountNumber: a.Number, Name: a.Name}, Amount: r.amount}); err != nil {
			return nil, err
		}
	}
	if err := w.WriteTrailer(); err != nil {
		return nil, err
	}
	if err := w.WriteEnd(); err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// drop writes name into the bank's inbound folder with its done-marker,
// as the bank's file transfer would.
func (d *day) drop(name string, body []byte) error {
	b, _ := d.files.Bank(fileBank)
	in := b.Folders().Inbound
	if err := os.MkdirAll(in, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(in, name), body, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(in, name+".done"), nil, 0o644)
}

// fileDrop: the batch-window bank drops a Zengin 総合振込 file (and, by
// mistake, the same file again); each data record becomes a BULK transfer
// waiting for the next BULK window.
func (d *day) fileDrop() error {
	d.at("12:50")
	d.section("bank " + fileBank + " drops a Zengin 総合振込 file (gateway/filedrop)")
	d.files = d.n.Files // the node's file drop, driven by hand (no watcher)
	body, err := zenginFile(d.clk.Now())
	if err != nil {
		return err
	}
	const name = "SOUFURI-MOMIJI.txt"
	if err := d.drop(name, body); err != nil {
		return err
	}
	pass, err := d.files.PollOnce(d.ctx)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	b, _ := d.files.Bank(fileBank)
	d.printf("  %s (%d bytes, %d data records) -> %s: taken %d, accepted %d\n", name, len(body), len(fileRecords), b.Folders().Inbound, pass.Taken, pass.Accepted)
	if pass.Accepted != 1 {
		return violated(InvResultFile, "the dropped file was not accepted: %+v", pass)
	}
	// The same bytes dropped again: recorded as a duplicate, nothing applied.
	if err := d.drop("SOUFURI-MOMIJI-resent.txt", body); err != nil {
		return err
	}
	again, err := d.files.PollOnce(d.ctx)
	if err != nil {
		return err
	}
	d.printf("  the same file dropped again: duplicates %d (not applied)\n", again.Duplicates)
	if again.Duplicates != 1 || again.Accepted != 0 {
		return violated(InvResultFile, "a second drop of the same bytes gave %+v, want one duplicate", again)
	}
	d.sum.Files = ResultFile{Bank: fileBank, Duplicates: again.Duplicates}
	payer := accountByKey("003/MOMIJI")
	for i, r := range fileRecords {
		txid := filedrop.TxID(hash, i+2) // record 1 is the header
		q, err := d.api.transaction(d.ctx, txid)
		if err != nil {
			return err
		}
		t := &Transfer{Label: fmt.Sprintf("file record %d", i+2), Via: ViaFile, TxID: txid, Lane: q.Lane, From: payer.Key, To: r.to,
			Amount: r.amount, Expect: r.expect, State: q.State}
		d.transfers = append(d.transfers, t)
		d.fileTransfers = append(d.fileTransfers, t)
		d.printf("  record %d -> %s %-9s %-14s -> %-14s %12s  %s (waits for the BULK window)\n", i+2, txid, q.Lane, t.From, t.To, yen(t.Amount), q.State)
		if q.Lane != orchestrator.LaneBulk {
			return violated(InvResultFile, "record %d became a %s transfer, want BULK", i+2, q.Lane)
		}
	}
	return nil
}

// bulkWindow runs the BULK window through the scheduler; the window
// reserves H for the file's transfers and hands them to the orchestrator,
// which settles them; the next pass of the file drop writes the result
// file.
func (d *day) bulkWindow() error {
	d.at("13:00")
	d.section("BULK window (scheduler job " + batchwindow.JobBulk + "), then the result file")
	if err := d.runJob(batchwindow.JobBulk); err != nil {
		return err
	}
	if err := d.wait(30*time.Second, d.fileTransfers...); err != nil {
		return err
	}
	d.printFinal(d.fileTransfers...)
	pass, err := d.files.PollOnce(d.ctx)
	if err != nil {
		return err
	}
	drops, err := d.files.Drops(d.ctx, fileBank, filedrop.StatusResulted)
	if err != nil {
		return err
	}
	if pass.Results != 1 || len(drops) != 1 {
		return violated(InvResultFile, "no result file after the window decided every record: pass %+v, %d resulted drops", pass, len(drops))
	}
	file, _, result := d.files.Path(drops[0])
	rf := &d.sum.Files
	rf.Dropped, rf.Path, rf.Codes = file, result, map[string]int{}
	f, err := os.Open(result)
	if err != nil {
		return violated(InvResultFile, "result file: %v", err)
	}
	defer f.Close()
	zr := zengin.NewReader(f)
	for rec, err := range zr.Records() {
		if err != nil {
			return violated(InvResultFile, "result file %s does not read back: %v", result, err)
		}
		if dd, ok := rec.(*zengin.DebitData); ok {
			rf.Records++
			rf.Codes[dd.Result.String()]++
		}
	}
	d.printf("  result file %s: %d records, %s\n", result, rf.Records, codesText(rf.Codes))
	settled := 0
	for _, t := range d.fileTransfers {
		if t.State == "SETTLED" {
			settled++
		}
	}
	if rf.Records != len(fileRecords) || rf.Codes[zengin.ResultDone.String()] != settled {
		return violated(InvResultFile, "result file has %d records with %v, want %d records of which %d 振替済",
			rf.Records, rf.Codes, len(fileRecords), settled)
	}
	return nil
}

// codesText lists result codes and their counts in code order.
func codesText(codes map[string]int) string {
	keys := make([]string, 0, len(codes))
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s x%d", k, codes[k])
	}
	return b.String()
}
