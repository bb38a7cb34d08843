package bench

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/formats/zengin"
	"github.com/zcgw/zcgw/gateway/filedrop"
	"github.com/zcgw/zcgw/gateway/node"
	"github.com/zcgw/zcgw/jobs/batchwindow"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// FileOptions describe one `zcgw bench --file N` run.
type FileOptions struct {
	Records int    // data records of the generated 総合振込 file
	Banks   int    // default 4: bank 001 drops the file, the others are paid
	DataDir string // the node's data folder (fresh)
	// Deployment is the queue manager and the store of the run's node.
	Deployment
	// Progress gets one line a second while the run goes (nil: none).
	Progress io.Writer
	// Quiesce bounds each wait: for the file to be accepted, for every
	// transfer to be terminal, for the result file (default 10m and 3 ms
	// a record: a loaded machine gives a large file's drop a fraction of a
	// core).
	Quiesce time.Duration
	// AcceptedOnly stops the run once the drop is ACCEPTED: no BULK
	// window, no settlement, no result file. The invariants checked are
	// then those of an accepted file (InvAccepted, InvChains).
	AcceptedOnly bool
}

// FileReport is the outcome of a file run: the common report (settled,
// commits, CPU, RSS, invariants; Seconds is drop to all settled) and the
// file's own instants.
type FileReport struct {
	Report
	Records         int     `json:"records"`
	FileBytes       int64   `json:"file_bytes"`
	AcceptedSeconds float64 `json:"accepted_s"` // done-marker written -> drop ACCEPTED (every transfer RECEIVED)
	AcceptedPerSec  float64 `json:"accepted_per_s"`
	WindowSeconds   float64 `json:"bulk_window_s"` // the bulk-window job run
	SettledSeconds  float64 `json:"settled_s"`     // done-marker -> every transfer terminal and every posting applied
	ResultSeconds   float64 `json:"result_file_s"` // done-marker -> result file written
}

// fileBank drops the bench file; its customer account (the header's) is
// fileAccount at branch fileBranch.
const (
	fileBank    = "001"
	fileBranch  = "001"
	fileAccount = "0000001"
	fileName    = "BENCH-SOUFURI.txt"
)

// payeeOf is the payee of data record i (0-based): one of the other
// banks, one of its accounts, and the amount.
func payeeOf(banks, i int) (bank string, acct int, amount int64) {
	return fmt.Sprintf("%03d", 2+i%(banks-1)), (i/(banks-1))%accountsPerBank + 1, int64(100 + i%900)
}

// FileConfig is Config(k) with the customer accounts named as the file
// drop names them (filedrop.AccountHash of the Zengin bank, branch,
// 普通 and account number), so the transfers of a dropped file reach the
// banks' cores, and an H limit no window runs out of.
func FileConfig(k int) node.Config {
	c := Config(k)
	for i := range c.Banks {
		b := &c.Banks[i]
		b.HLimit = 1_000_000_000_000_000
		for n := range b.Accounts {
			b.Accounts[n].Hash = filedrop.AccountHash(filedrop.DefaultAccountSalt, filedrop.DefaultZenginCode(b.BankID), fileBranch, 1, fmt.Sprintf("%07d", n+1))
		}
	}
	return c
}

// groupRecords is the most data records the bench writes in one
// header…trailer group (a trailer's 合計件数 is N(6)): a larger file has
// several groups, one after the other.
const groupRecords = 999_999

// recordNo is the file record number (1-based, headers and trailers
// counted) of data record i (0-based) of the bench file.
func recordNo(i int) int {
	g := i / groupRecords
	return i + 2 + 2*g // one header before each group, a header and a trailer per earlier group
}

// writeFile streams the N-record 総合振込 file of bank 001 to path (its
// memory does not grow with N), groupRecords data records per group, and
// returns its SHA-256 and size.
func writeFile(path string, banks, records int, date time.Time) (string, int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<16)
	w := zengin.NewWriter(bw)
	jst := date.In(time.FixedZone("JST", 9*3600))
	header := zengin.Header{Kind: zengin.KindTransfer, ClientCode: "1234567890", ClientName: "ｾﾞﾛｲﾁ ﾍﾞﾝﾁ",
		Date: zengin.Date{Month: int(jst.Month()), Day: jst.Day()}, BankCode: filedrop.DefaultZenginCode(fileBank), BankName: "ｾﾞﾛｲﾁ",
		BranchCode: fileBranch, BranchName: "ﾎﾝﾃﾝ", AccountType: 1, AccountNumber: fileAccount}
	for i := range records {
		if i%groupRecords == 0 {
			if i > 0 {
				if err := w.WriteTrailer(); err != nil {
					return "", 0, err
				}
			}
			h := header
			if err := w.WriteHeader(&h); err != nil {
				return "", 0, err
			}
		}
		bank, acct, amount := payeeOf(banks, i)
		if err := w.WriteData(&zengin.TransferData{Account: zengin.Account{BankCode: filedrop.DefaultZenginCode(bank), BankName: "ｷﾞﾝｺｳ",
			BranchCode: fileBranch, BranchName: "ｼﾃﾝ", AccountType: 1, AccountNumber: fmt.Sprintf("%07d", acct), Name: "ﾔﾏﾀﾞ ﾀﾛｳ"},
			Amount: amount}); err != nil {
			return "", 0, err
		}
	}
	if err := w.WriteTrailer(); err != nil {
		return "", 0, err
	}
	if err := w.WriteEnd(); err != nil {
		return "", 0, err
	}
	if err := w.Flush(); err != nil {
		return "", 0, err
	}
	if err := bw.Flush(); err != nil {
		return "", 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if err := f.Sync(); err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), st.Size(), f.Close()
}

// RunFile starts a node on o.DataDir with its file-drop watcher, drops a
// generated o.Records-record 総合振込 file of bank 001 (with its
// done-marker) into the bank's inbound folder, and measures: the time to
// the drop ACCEPTED (every record a BULK transfer in RECEIVED), then runs
// the bulk-window job as its schedule would and measures the time to
// every transfer terminal with every posting applied at its core, and to
// the result file. Then it checks the online bench's invariants over the
// file's transfers.
func RunFile(ctx context.Context, o FileOptions) (rep FileReport, err error) {
	if o.Records <= 0 {
		return rep, errors.New("bench: --file must be > 0")
	}
	if o.Banks == 0 {
		o.Banks = 4
	}
	if o.Banks < 2 {
		return rep, fmt.Errorf("bench: --banks %d: need at least 2", o.Banks)
	}
	if o.Quiesce <= 0 {
		o.Quiesce = 10*time.Minute + time.Duration(o.Records)*3*time.Millisecond // 1,000,000 records: 1h 0m
	}
	cfg := o.NodeConfig(FileConfig(o.Banks))
	n, err := node.Start(ctx, node.Options{DataDir: o.DataDir, Config: &cfg, WatchFiles: true, WatchEvery: 50 * time.Millisecond})
	if err != nil {
		return rep, fmt.Errorf("bench: start node: %w", err)
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("bench: close node: %w", cerr)
		}
	}()
	rep.Report = Report{Transfers: o.Records, Banks: o.Banks, Lanes: "BULK=100 (file)", Store: storeLabel(n), Started: time.Now().UTC()}
	rep.Records = o.Records
	opening, err := positions(ctx, n)
	if err != nil {
		return rep, err
	}
	bank, ok := n.Files.Bank(fileBank)
	if !ok {
		return rep, fmt.Errorf("bench: bank %s has no file-drop folders", fileBank)
	}
	in := bank.Folders().Inbound
	if err := os.MkdirAll(in, 0o755); err != nil {
		return rep, err
	}
	// Written under a name the watcher never takes, then renamed.
	tmp := filepath.Join(in, fileName+".writing")
	hash, size, err := writeFile(tmp, o.Banks, o.Records, time.Now())
	if err != nil {
		return rep, fmt.Errorf("bench: write the file: %w", err)
	}
	rep.FileBytes = size
	if err := os.Rename(tmp, filepath.Join(in, fileName)); err != nil {
		return rep, err
	}
	dbs := databases(n)
	before := counters(dbs)
	cpu0, err := cpuTime()
	if err != nil {
		return rep, err
	}
	start := time.Now()
	if err := os.WriteFile(filepath.Join(in, fileName+".done"), nil, 0o644); err != nil {
		return rep, err
	}
	progress := func(what string, done, total int) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "zcgw bench: %6.1fs %s %d/%d\n", time.Since(start).Seconds(), what, done, total)
		}
	}
	countState := func(states ...string) (int, error) {
		s, err := countStates(ctx, n.DB)
		total := 0
		for _, st := range states {
			total += s[st]
		}
		return total, err
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	lastLine := time.Now()
	// until waits for cond, one progress line a second.
	until := func(what string, cond func() (bool, int, error)) error {
		deadline := time.Now().Add(o.Quiesce)
		for {
			ok, done, err := cond()
			if err != nil || ok {
				return err
			}
			if time.Since(lastLine) >= time.Second {
				progress(what, done, o.Records)
				lastLine = time.Now()
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("bench: %s: not done after %s (%d of %d)", what, o.Quiesce, done, o.Records)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	}
	dropped := func(status string) (bool, error) {
		ds, err := n.Files.Drops(ctx, fileBank, status)
		return len(ds) > 0, err
	}
	if err := until("accepted", func() (bool, int, error) {
		for _, st := range []string{filedrop.StatusRejected, filedrop.StatusDuplicate} {
			if bad, err := dropped(st); err != nil || bad {
				return false, 0, errors.Join(err, fmt.Errorf("bench: the file was %s", st))
			}
		}
		ok, err := dropped(filedrop.StatusAccepted)
		if err != nil || ok || time.Since(lastLine) < time.Second {
			return ok, 0, err
		}
		// Counted only for the progress line: a count of Transactions
		// every tick cost the run about a core's fifth (a scan of the
		// state index while the drop writes it).
		c, err := countState("RECEIVED")
		return false, c, err
	}); err != nil {
		return rep, err
	}
	rep.AcceptedSeconds = time.Since(start).Seconds()
	rep.AcceptedPerSec = float64(o.Records) / rep.AcceptedSeconds
	progress("accepted", o.Records, o.Records)
	if o.AcceptedOnly {
		return rep, acceptedOnly(ctx, n, hash, o.Records, dbs, before, cpu0, &rep)
	}

	// The BULK window, as its schedule would run it: it reserves H for
	// the file's transfers and hands them to the orchestrator, whose
	// workers settle them; a transfer the window deferred waits for the
	// next window (the run then times out at the quiescence bound). A
	// window takes what arrived before its slot's minute, so the bench
	// runs the slot of the minute after the file was accepted.
	w0 := time.Now()
	slot := w0.Add(time.Minute).In(clock.JST).Format("15:04")
	if _, err := n.Jobs.Run(ctx, scheduler.Request{Job: batchwindow.JobBulk, Slot: slot, By: "zcgw bench"}); err != nil {
		return rep, fmt.Errorf("bench: %s: %w", batchwindow.JobBulk, err)
	}
	rep.WindowSeconds = time.Since(w0).Seconds()
	if err := until("settled", func() (bool, int, error) {
		c, err := countState("SETTLED", "CANCELLED")
		if err != nil || c < o.Records {
			return false, c, err
		}
		open, err := openPostings(ctx, n)
		return open == 0, c, err
	}); err != nil {
		return rep, err
	}
	rep.SettledSeconds = time.Since(start).Seconds()
	cpu1, err := cpuTime()
	if err != nil {
		return rep, err
	}
	after := counters(dbs)
	if err := until("result file", func() (bool, int, error) {
		ok, err := dropped(filedrop.StatusResulted)
		return ok, o.Records, err
	}); err != nil {
		return rep, err
	}
	rep.ResultSeconds = time.Since(start).Seconds()

	_, states, err := settleInstants(ctx, n.DB)
	if err != nil {
		return rep, err
	}
	for _, st := range states {
		switch st {
		case "SETTLED":
			rep.Settled++
		case "CANCELLED":
			rep.Cancelled++
		}
	}
	rep.Seconds = rep.SettledSeconds
	rep.SettledPerSec = float64(rep.Settled) / rep.Seconds
	rep.DBs, rep.CommitsPerTx, rep.StmtsPerTx = costs(dbs, before, after, rep.Settled)
	rep.CPUPer1000 = (cpu1 - cpu0).Seconds() / float64(o.Records) * 1000
	if rep.PeakRSSMB, err = peakRSSMB(); err != nil {
		return rep, err
	}

	// The file's transfers, as the online bench knows the ones it posted.
	sents := make([]sent, o.Records)
	payer := fileBank + "/" + filedrop.AccountHash(filedrop.DefaultAccountSalt, filedrop.DefaultZenginCode(fileBank), fileBranch, 1, fileAccount)
	for i := range sents {
		bank, acct, amount := payeeOf(o.Banks, i)
		sents[i] = sent{txid: filedrop.TxID(hash, recordNo(i)), payer: payer, amount: amount,
			payee: bank + "/" + filedrop.AccountHash(filedrop.DefaultAccountSalt, filedrop.DefaultZenginCode(bank), fileBranch, 1, fmt.Sprintf("%07d", acct))}
	}
	return rep, check(ctx, n, cfg, opening, sents, states, &rep.Report)
}

// InvAccepted is the invariant of an accepted file (FileOptions.AcceptedOnly):
// every data record is exactly one BULK transfer in RECEIVED under its
// record's txid, and Transactions holds no other.
const InvAccepted = "accepted"

// acceptedOnly ends an AcceptedOnly run: the commits, CPU and peak RSS
// up to the drop ACCEPTED (read before the checks, whose own memory is
// not the drop's), then InvAccepted and InvChains.
func acceptedOnly(ctx context.Context, n *node.Node, hash string, records int, dbs []namedDB, before map[string]store.Snapshot, cpu0 time.Duration, rep *FileReport) error {
	cpu1, err := cpuTime()
	if err != nil {
		return err
	}
	if rep.PeakRSSMB, err = peakRSSMB(); err != nil {
		return err
	}
	rep.Seconds = rep.AcceptedSeconds
	rep.CPUPer1000 = (cpu1 - cpu0).Seconds() / float64(records) * 1000
	rep.DBs, _, _ = costs(dbs, before, counters(dbs), 0)
	rep.Invariants = append(rep.Invariants, InvAccepted)
	want := make(map[string]bool, records)
	for i := range records {
		want[filedrop.TxID(hash, recordNo(i))] = true
	}
	seen := 0
	err = n.DB.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT txid, lane, state FROM Transactions`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, ln, st string
			if err := rows.Scan(&id, &ln, &st); err != nil {
				return err
			}
			switch {
			case !want[id]:
				return breach(InvAccepted, "Transactions has %s (%s %s), no record of the file", id, ln, st)
			case ln != "BULK" || st != "RECEIVED":
				return breach(InvAccepted, "transfer %s is %s %s, want BULK RECEIVED", id, ln, st)
			}
			seen++
		}
		return rows.Err()
	})
	if err != nil {
		var br *Breach
		if errors.As(err, &br) {
			return err
		}
		return fmt.Errorf("bench: read transfers: %w", err)
	}
	if seen != records {
		return breach(InvAccepted, "%d transfers for %d records", seen, records)
	}
	rep.Invariants = append(rep.Invariants, InvChains)
	vr, err := finality.VerifyAll(ctx, n.DB)
	if err != nil {
		return fmt.Errorf("bench: verify chains: %w", err)
	}
	if !vr.OK() {
		return breach(InvChains, "%d chain(s) broken, the first: %+v", len(vr.Breaks), vr.Breaks[0])
	}
	rep.ChainsVerified = vr.Chains
	return nil
}
