package overnight

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/formats/coreacct"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/store"
	ofile "github.com/zcgw/zcgw/formats/overnight"
	"github.com/zcgw/zcgw/outbox"
)

// File states.
const (
	FileCut       = "CUT"
	FileDelivered = "DELIVERED"
	FileAnswered  = "ANSWERED"
)

// MaxRecords is the largest file (明細通番 has 8 digits).
const MaxRecords = 99_999_999

// entryChunk is how many of a file's postings are read (and, at intake,
// settled) at a time: memory stays flat in the file's size.
const entryChunk = 4096

// Schema is the DDL of the exchange's tables, in the adapter's database.
// The postings themselves are the adapter's outbox rows (route FILE,
// outbox.Schema): a file is a set of rows moved to IN_FILE under its key.
const Schema = `
CREATE TABLE IF NOT EXISTS OvernightFiles (
  file_key      TEXT PRIMARY KEY,            -- bank/YYYYMMDD/seq
  bank          TEXT NOT NULL,
  business_date TEXT NOT NULL,
  file_seq      INTEGER NOT NULL,
  name          TEXT NOT NULL UNIQUE,
  state         TEXT NOT NULL CHECK (state IN ('CUT','DELIVERED','ANSWERED')),
  records       INTEGER NOT NULL,
  created_jst   TEXT NOT NULL,               -- header 作成日時, fixed at the cut
  sha256        TEXT,                        -- of the delivered bytes
  cut_at        TEXT NOT NULL,
  delivered_at  TEXT,
  answered_at   TEXT,
  UNIQUE (bank, business_date, file_seq)
);
CREATE TABLE IF NOT EXISTS OvernightResultFiles (
  name        TEXT NOT NULL UNIQUE,
  sha256      TEXT NOT NULL UNIQUE,
  file_key    TEXT NOT NULL,
  posted      INTEGER NOT NULL,
  rejected    INTEGER NOT NULL,
  ingested_at TEXT NOT NULL
);
`

// Config wires one bank's exchange.
type Config struct {
	Bank string    // bank code, e.g. "001"
	DB   *store.DB // the adapter's database
	// Inbound is the core's inbound folder (posting files are delivered here).
	Inbound string
	// Results is the folder the core writes its result files to.
	Results string
	// Outbox is the adapter's posting outbox (adapter.Adapter.Outbox()),
	// on the same database: the file's postings are its RouteFILE rows,
	// and it opens the Case of each refused posting with its CaseOpener.
	Outbox *outbox.Outbox
	Clock  clock.Clock
	Logger *slog.Logger

	// crash (tests) is called at each crash point; an error aborts there.
	crash func(point string) error
}

// Exchange is one bank's overnight exchange.
type Exchange struct {
	cfg Config
	ob  *outbox.Outbox
	log *slog.Logger
}

// Open applies Schema to the adapter's database and returns the exchange.
func Open(ctx context.Context, cfg Config) (*Exchange, error) {
	if cfg.DB == nil || cfg.Outbox == nil || cfg.Bank == "" || cfg.Inbound == "" || cfg.Results == "" {
		return nil, errors.New("overnight: Config needs Bank, DB, Outbox, Inbound and Results")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.DB.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, Schema)
		return err
	}); err != nil {
		return nil, fmt.Errorf("overnight: schema: %w", err)
	}
	for _, d := range []string{cfg.Inbound, cfg.Results} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("overnight: %w", err)
		}
	}
	return &Exchange{cfg: cfg, ob: cfg.Outbox, log: cfg.Logger.With("bank_id", cfg.Bank)}, nil
}

func (x *Exchange) hook(point string) error {
	if x.cfg.crash == nil {
		return nil
	}
	return x.cfg.crash(point)
}

// File is one recorded overnight file.
type File struct {
	Key          string
	Bank         string
	BusinessDate string // YYYY-MM-DD
	Seq          int64
	Name         string // posting file name in Inbound
	State        string
	Records      int
	SHA256       string
	createdJST   string
}

// ResultName is the name of the core's result file for a posting file.
func (f File) ResultName() string { return ResultName(f.Name) }

// ResultName maps a posting file name to its result file name.
func ResultName(postingName string) string {
	return strings.Replace(postingName, "-POST-", "-RSLT-", 1)
}

func fileName(bank, date string, seq int64) string {
	return fmt.Sprintf("ZCGW-POST-%s-%s-%04d.dat", bank, strings.ReplaceAll(date, "-", ""), seq)
}

const fileCols = `file_key, bank, business_date, file_seq, name, state, records, COALESCE(sha256,''), created_jst`

func scanFile(s interface{ Scan(...any) error }) (File, error) {
	var f File
	err := s.Scan(&f.Key, &f.Bank, &f.BusinessDate, &f.Seq, &f.Name, &f.State, &f.Records, &f.SHA256, &f.createdJST)
	return f, err
}

// Unfinished returns the bank's file that is cut or delivered but not yet
// answered, if any (there is at most one).
func (x *Exchange) Unfinished(ctx context.Context) (File, bool, error) {
	var f File
	err := x.cfg.DB.Read(ctx, func(tx *store.Tx) error {
		var err error
		f, err = scanFile(tx.QueryRowContext(ctx, `SELECT `+fileCols+` FROM OvernightFiles
			WHERE bank = ? AND state <> 'ANSWERED' ORDER BY business_date, file_seq LIMIT 1`, x.cfg.Bank))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return f, false, nil
	}
	return f, err == nil, err
}

// Cut moves every fileable PENDING FILE posting of the bank's outbox
// (outbox.TakeForFile) into a new file for the
// business date, in one transaction. If a file is still unfinished it is
// returned instead (a restart continues it; no second file is cut). ok is
// false when there is nothing to send.
func (x *Exchange) Cut(ctx context.Context, businessDate string) (f File, ok bool, err error) {
	if _, err := clock.ParseBusinessDate(businessDate); err != nil {
		return f, false, domainerr.Wrap("INVALID_REQUEST", err, "overnight: bad business date", map[string]any{"business_date": businessDate})
	}
	if f, ok, err := x.Unfinished(ctx); err != nil || ok {
		return f, ok, err
	}
	now := x.cfg.Clock.Now()
	err = x.cfg.DB.Write(ctx, func(tx *store.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM OvernightFiles WHERE bank = ? AND state <> 'ANSWERED'`, x.cfg.Bank).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return errRace
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(file_seq),0)+1 FROM OvernightFiles WHERE bank = ? AND business_date = ?`,
			x.cfg.Bank, businessDate).Scan(&seq); err != nil {
			return err
		}
		f = File{Key: fmt.Sprintf("%s/%s/%d", x.cfg.Bank, businessDate, seq), Bank: x.cfg.Bank, BusinessDate: businessDate,
			Seq: seq, Name: fileName(x.cfg.Bank, businessDate, seq), State: FileCut,
			createdJST: now.In(clock.JST).Format("20060102150405")}
		moved, err := x.ob.TakeForFile(ctx, tx, x.cfg.Bank, f.Key, MaxRecords)
		if err != nil {
			return fmt.Errorf("take postings: %w", err)
		}
		if moved == 0 {
			return nil
		}
		f.Records = moved
		ok = true
		_, err = tx.ExecContext(ctx, `INSERT INTO OvernightFiles (file_key, bank, business_date, file_seq, name, state, records, created_jst, cut_at)
			VALUES (?, ?, ?, ?, ?, 'CUT', ?, ?, ?)`, f.Key, f.Bank, businessDate, seq, f.Name, f.Records, f.createdJST, clock.Stamp(now))
		return err
	})
	if errors.Is(err, errRace) {
		return x.Unfinished(ctx)
	}
	if err != nil {
		return f, false, fmt.Errorf("overnight: cut: %w", err)
	}
	if ok {
		x.log.InfoContext(ctx, "overnight.cut", "file", f.Name, "records", f.Records, "business_date", businessDate)
		if err := x.hook("cut:committed"); err != nil {
			return f, ok, err
		}
	}
	return f, ok, nil
}

var errRace = errors.New("another file is unfinished")

// render writes the file's bytes: a pure function of the recorded file and
// its postings, so every attempt produces the same bytes.
func (x *Exchange) render(ctx context.Context, f File, w io.Writer) error {
	date, err := clock.ParseBusinessDate(f.BusinessDate)
	if err != nil {
		return err
	}
	od := ofile.Date{Year: date.Year(), Month: int(date.Month()), Day: date.Day()}
	ow := ofile.NewWriter(w)
	if err := ow.WriteHeader(&ofile.Header{FileType: ofile.Postings, Version: 1, BankCode: fmt.Sprintf("%04s", f.Bank),
		BusinessDate: od, FileSeq: f.Seq, CreatedAt: f.createdJST}); err != nil {
		return err
	}
	// The postings a slice at a time (memory flat in the file's size).
	var after int64
	for {
		var entries []outbox.FileEntry
		if err := x.cfg.DB.Read(ctx, func(tx *store.Tx) error {
			var err error
			entries, err = x.ob.FileEntriesAfter(ctx, tx, f.Key, after, entryChunk)
			return err
		}); err != nil {
			return err
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			if e.Seq != after+1 {
				return fmt.Errorf("file %s: posting %d missing", f.Key, after+1)
			}
			after = e.Seq
			d := ofile.PostingDetail{Seq: e.Seq, Ref: e.Posting.Ref, TxID: e.Posting.TxID, Amount: e.Posting.Amount,
				OriginalRef: e.Posting.ReversalOf, Kind: ofile.Posting, Side: ofile.Side(e.Side), ValueDate: od}
			if e.Posting.Kind == outbox.Reversal {
				d.Kind = ofile.Reversal
			}
			k, err := coreacct.Parse(e.Posting.Account)
			if err != nil {
				return fmt.Errorf("detail %d (%s): %w", e.Seq, e.Posting.Ref, err)
			}
			d.BranchCode, d.AccountType, d.AccountNumber = k.Branch, k.Type, k.Number
			if err := ow.WritePosting(&d); err != nil {
				return fmt.Errorf("detail %d (%s): %w", d.Seq, d.Ref, err)
			}
		}
	}
	if after != int64(f.Records) {
		return fmt.Errorf("file %s has %d postings recorded, %d found", f.Key, f.Records, after)
	}
	return ow.Close()
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Deliver writes the file to the core's inbound folder: to a temporary
// name (".<name>.tmp", which the core ignores), fsync, rename, fsync of
// the folder, then records it DELIVERED with the SHA-256 of its bytes.
// A file already delivered (recorded, present, picked up by the core or
// already answered by a result file) is not written again.
func (x *Exchange) Deliver(ctx context.Context, f File) (File, error) {
	if f.State != FileCut {
		return f, nil
	}
	final := filepath.Join(x.cfg.Inbound, f.Name)
	resultPath := filepath.Join(x.cfg.Results, f.ResultName())
	h := sha256.New()
	if exists(resultPath) || exists(final) {
		// Delivered before a crash (and maybe processed already): the
		// bytes are the same by construction; only the hash is needed.
		if err := x.render(ctx, f, h); err != nil {
			return f, fmt.Errorf("overnight: deliver %s: %w", f.Name, err)
		}
		if err := sameContent(final, hex.EncodeToString(h.Sum(nil))); err != nil {
			return f, err
		}
	} else {
		tmp := filepath.Join(x.cfg.Inbound, "."+f.Name+"."+newToken()+".tmp")
		fh, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return f, fmt.Errorf("overnight: deliver: %w", err)
		}
		bw := bufio.NewWriterSize(io.MultiWriter(fh, h), 1<<20)
		err = x.render(ctx, f, bw)
		if err == nil {
			err = bw.Flush()
		}
		if err == nil {
			err = fh.Sync()
		}
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(tmp)
			return f, fmt.Errorf("overnight: deliver %s: %w", f.Name, err)
		}
		if err := x.hook("deliver:tmp-written"); err != nil {
			return f, err
		}
		// Rename without replacing: link(2) fails if the final name exists,
		// so a concurrent deliverer can never swap a file under the core.
		err = os.Link(tmp, final)
		_ = os.Remove(tmp)
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrExist):
			if err := sameContent(final, hex.EncodeToString(h.Sum(nil))); err != nil {
				return f, err
			}
		case errors.Is(err, fs.ErrNotExist) && (exists(final) || exists(resultPath)):
			// Another deliverer finished first and cleaned up.
		default:
			return f, fmt.Errorf("overnight: deliver: %w", err)
		}
		if err := syncDir(x.cfg.Inbound); err != nil {
			return f, err
		}
		if err := x.hook("deliver:renamed"); err != nil {
			return f, err
		}
	}
	// Temporary files of attempts that crashed before their rename.
	if left, _ := filepath.Glob(filepath.Join(x.cfg.Inbound, "."+f.Name+".*.tmp")); len(left) > 0 {
		for _, p := range left {
			_ = os.Remove(p)
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	err := x.cfg.DB.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE OvernightFiles SET state = 'DELIVERED', sha256 = ?, delivered_at = ?
			WHERE file_key = ? AND state = 'CUT'`, sum, clock.Stamp(x.cfg.Clock.Now()), f.Key)
		return err
	})
	if err != nil {
		return f, fmt.Errorf("overnight: record delivery: %w", err)
	}
	f.State, f.SHA256 = FileDelivered, sum
	x.log.InfoContext(ctx, "overnight.deliver", "file", final, "records", f.Records, "sha256", sum)
	return f, x.hook("deliver:recorded")
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("overnight: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("overnight: fsync %s: %w", dir, err)
	}
	return nil
}

// sameContent refuses a file at p (if present) whose SHA-256 is not want.
func sameContent(p, want string) error {
	got, err := fileSHA(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("overnight: %w", err)
	}
	if got != want {
		return domainerr.New("IDEMPOTENCY_KEY_CONFLICT", "overnight: a different file "+filepath.Base(p)+" is in the inbound folder",
			map[string]any{"file": p, "sha256": got, "expected_sha256": want})
	}
	return nil
}

func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func fileSHA(p string) (string, error) {
	fh, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// reasonOf maps a result code to the reason code recorded on a BLOCKED
// posting and its Case (the same codes corelink uses for MQ refusals).
func reasonOf(c ofile.ResultCode) string {
	switch c {
	case ofile.InsufficientFunds:
		return "INSUFFICIENT_FUNDS"
	case ofile.NoSuchAccount, ofile.AccountClosed:
		return "ACCOUNT_NOT_FOUND"
	case ofile.AccountFrozen:
		return "ACCOUNT_FROZEN"
	case ofile.OriginalNotFound, ofile.OriginalAlreadyReverse:
		return "TX_NOT_FOUND"
	}
	return "BANK_ERROR"
}

// Ingested says what Ingest did.
type Ingested struct {
	File             string
	Posted, Rejected int
	AlreadyIngested  bool
}

// Ingest reads the core's result file for f from the results folder. The
// whole file is checked before anything is applied: format and trailer
// (formats/overnight), header (result file of this bank, date and
// sequence), one detail per posting in order, each echoing its posting's
// reference, txid, account, side and amount. Then, in one transaction, each
// posting becomes POSTED (code 00, or 05 "already posted") or BLOCKED, the
// file ANSWERED, and the result file is recorded by name and SHA-256.
// ok is false when the result file is not there yet.
func (x *Exchange) Ingest(ctx context.Context, f File) (in Ingested, ok bool, err error) {
	path := filepath.Join(x.cfg.Results, f.ResultName())
	in.File = path
	// The file is read three times, by streaming (memory flat in its
	// size): hashed, validated whole, then applied.
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return in, false, nil
	}
	if err != nil {
		return in, false, fmt.Errorf("overnight: ingest: %w", err)
	}
	defer fh.Close()
	rewind := func() (io.Reader, error) {
		if _, err := fh.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("overnight: ingest: %w", err)
		}
		return bufio.NewReaderSize(fh, 1<<20), nil
	}
	hsh := sha256.New()
	if _, err := io.Copy(hsh, fh); err != nil {
		return in, false, fmt.Errorf("overnight: ingest: %w", err)
	}
	shaHex := hex.EncodeToString(hsh.Sum(nil))
	name := filepath.Base(path)
	// Already ingested (by name or by content)?
	var prevName, prevSHA string
	err = x.cfg.DB.Read(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT name, sha256 FROM OvernightResultFiles WHERE name = ? OR sha256 = ? LIMIT 1`,
			name, shaHex).Scan(&prevName, &prevSHA)
	})
	switch {
	case err == nil && prevName == name && prevSHA != shaHex:
		return in, true, domainerr.New("IDEMPOTENCY_KEY_CONFLICT",
			"overnight: result file "+name+" was already ingested with different content", map[string]any{"file": path, "sha256": shaHex, "ingested_sha256": prevSHA})
	case err == nil:
		in.AlreadyIngested = true
		return in, true, x.markAnswered(ctx, f)
	case !errors.Is(err, sql.ErrNoRows):
		return in, false, err
	}
	rd, err := rewind()
	if err != nil {
		return in, false, err
	}
	sumry, verr := ofile.Validate(rd)
	if verr != nil {
		return in, true, domainerr.Wrap("INVALID_REQUEST", verr, "overnight: result file "+name+" is invalid", map[string]any{"file": path})
	}
	bad := func(msg string, details map[string]any) error {
		if details == nil {
			details = map[string]any{}
		}
		details["file"] = path
		return domainerr.New("INVALID_REQUEST", "overnight: result file "+name+": "+msg, details)
	}
	h := sumry.Header
	date, _ := clock.ParseBusinessDate(f.BusinessDate)
	if h.FileType != ofile.Results || h.BankCode != fmt.Sprintf("%04s", f.Bank) || h.FileSeq != f.Seq ||
		h.BusinessDate != (ofile.Date{Year: date.Year(), Month: int(date.Month()), Day: date.Day()}) {
		return in, true, bad(fmt.Sprintf("header %s bank %s date %s seq %d does not answer %s", h.FileType, h.BankCode, h.BusinessDate, h.FileSeq, f.Name), nil)
	}
	if int(sumry.Count) != f.Records {
		return in, true, bad(fmt.Sprintf("answers %d details, the file had %d", sumry.Count, f.Records), nil)
	}
	err = x.cfg.DB.Write(ctx, func(tx *store.Tx) error {
		in.Posted, in.Rejected = 0, 0 // fn may run again (store.Write on PostgreSQL)
		now := clock.Stamp(x.cfg.Clock.Now())
		waiting, err := x.ob.FileWaiting(ctx, tx, f.Key)
		if err != nil {
			return err
		}
		if waiting != f.Records {
			return bad(fmt.Sprintf("%d of the file's %d postings are still waiting for an answer", waiting, f.Records), nil)
		}
		rd0, err := rewind()
		if err != nil {
			return err
		}
		// Hashed again while applied: the bytes applied are the bytes
		// recorded (one open file; a change in place is refused).
		again := sha256.New()
		rd := io.TeeReader(rd0, again)
		// The file's postings and their answers a slice at a time: each
		// detail must echo the next posting; each slice settles by
		// outbox.SettleFromFileAll, all in this one transaction.
		var (
			entries []outbox.FileEntry
			pos     int
			after   int64
			answers = make([]outbox.FileAnswer, 0, entryChunk)
		)
		settle := func() error {
			if len(answers) == 0 {
				return nil
			}
			if err := x.ob.SettleFromFileAll(ctx, tx, answers); err != nil {
				return fmt.Errorf("postings of %s: %w", f.Key, err)
			}
			answers = answers[:0]
			return nil
		}
		for rec, err := range ofile.NewReader(rd).Records() {
			if err != nil {
				return err
			}
			d, isDetail := rec.(*ofile.ResultDetail)
			if !isDetail {
				continue
			}
			if pos == len(entries) {
				if err := settle(); err != nil {
					return err
				}
				if entries, err = x.ob.FileEntriesAfter(ctx, tx, f.Key, after, entryChunk); err != nil {
					return err
				}
				pos = 0
			}
			mismatch := pos == len(entries)
			var it outbox.FileEntry
			if !mismatch {
				it = entries[pos]
				pos++
				acct := coreacct.Format(d.BranchCode, d.AccountType, d.AccountNumber)
				mismatch = it.Seq != d.Seq || it.Status != outbox.InFile || it.Posting.Ref != d.Ref || it.Posting.TxID != d.TxID ||
					it.Posting.Account != acct || it.Posting.Amount != d.Amount || it.Side != byte(d.Side)
			}
			if mismatch {
				return bad(fmt.Sprintf("detail %d (ref %s) does not echo posting %d of the file", d.Seq, d.Ref, d.Seq),
					map[string]any{"detail": d.Seq, "ref": d.Ref})
			}
			after = it.Seq
			posted := d.Code == ofile.Posted || d.Code == ofile.AlreadyPosted
			reason := ""
			if posted {
				in.Posted++
			} else {
				reason = reasonOf(d.Code)
				in.Rejected++
			}
			answers = append(answers, outbox.FileAnswer{Ref: it.Posting.Ref, Applied: posted, Reason: reason, CoreRef: strings.TrimSpace(d.CoreRef),
				ID: it.ID, TxID: it.Posting.TxID})
		}
		if err := settle(); err != nil {
			return err
		}
		if after != int64(f.Records) {
			return bad(fmt.Sprintf("%d postings have no answer", int64(f.Records)-after), nil)
		}
		if _, err := io.Copy(io.Discard, rd); err != nil {
			return fmt.Errorf("overnight: ingest: %w", err)
		}
		if hex.EncodeToString(again.Sum(nil)) != shaHex {
			return bad("changed while it was read", map[string]any{"sha256": shaHex})
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO OvernightResultFiles (name, sha256, file_key, posted, rejected, ingested_at)
			VALUES (?, ?, ?, ?, ?, ?)`, name, shaHex, f.Key, in.Posted, in.Rejected, now); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE OvernightFiles SET state = 'ANSWERED', answered_at = ? WHERE file_key = ? AND state <> 'ANSWERED'`,
			now, f.Key)
		return err
	})
	if err != nil {
		return in, true, fmt.Errorf("overnight: ingest %s: %w", name, err)
	}
	x.log.InfoContext(ctx, "overnight.ingest", "file", path, "posted", in.Posted, "rejected", in.Rejected, "sha256", shaHex)
	return in, true, x.hook("ingest:committed")
}

// markAnswered finishes a file whose result was ingested before (under this
// or another name): nothing else changes.
func (x *Exchange) markAnswered(ctx context.Context, f File) error {
	return x.cfg.DB.Write(ctx, func(tx *store.Tx) error {
		n, err := x.ob.FileWaiting(ctx, tx, f.Key)
		if err != nil {
			return err
		}
		if n != 0 {
			return domainerr.New("INVALID_REQUEST", "overnight: the result for "+f.Name+" was ingested for another file",
				map[string]any{"file_key": f.Key})
		}
		_, err = tx.ExecContext(ctx, `UPDATE OvernightFiles SET state = 'ANSWERED', answered_at = COALESCE(answered_at, ?)
			WHERE file_key = ?`, clock.Stamp(x.cfg.Clock.Now()), f.Key)
		return err
	})
}

// OpenMissingCases opens the Case of every BLOCKED posting without one
// (outbox.OpenMissingCases: a guarded case claim, the Case opened with
// DedupKey OUTBOX-BLOCKED:<ref> and detection path OVERNIGHT_RESULT, its id
// recorded). Safe to run concurrently and after a crash.
func (x *Exchange) OpenMissingCases(ctx context.Context) (int, error) {
	n, err := x.ob.OpenMissingCases(ctx)
	if err != nil {
		return n, fmt.Errorf("overnight: open cases: %w", err)
	}
	if n > 0 {
		if err := x.hook("cases:opened"); err != nil {
			return n, err
		}
	}
	return n, nil
}

// Files lists the bank's files in order.
func (x *Exchange) Files(ctx context.Context) ([]File, error) {
	var out []File
	err := x.cfg.DB.Read(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+fileCols+` FROM OvernightFiles WHERE bank = ? ORDER BY business_date, file_seq`, x.cfg.Bank)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			f, err := scanFile(rows)
			if err != nil {
				return err
			}
			out = append(out, f)
		}
		return rows.Err()
	})
	return out, err
}
