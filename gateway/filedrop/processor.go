package filedrop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/failpoint"
	"github.com/zcgw/zcgw/formats/zengin"
)

// Processor takes complete files from the banks' inbound folders, checks,
// applies and answers them. One pass is PollOnce; the Watcher repeats it.
// Several processes may poll the same folders: claiming is an atomic
// rename, the ledger rows are guarded, and every submit is idempotent.
type Processor struct {
	cfg   Config
	led   ledger
	log   *slog.Logger
	banks map[string]Bank

	mu       sync.Mutex
	seen     map[string]observation // inbound path -> last size/mtime seen
	decided  map[string]int         // drop_id -> data records known decided
	procLock map[string]bool        // processing paths being worked on here
}

// observation is what the stability check saw of a file without a
// done-marker.
type observation struct {
	size  int64
	mtime time.Time
	since time.Time // clock time the size and mtime were first seen
}

// New checks cfg, creates every bank's folders and returns a Processor.
func New(cfg Config) (*Processor, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	p := &Processor{cfg: cfg, led: ledger{db: cfg.DB, clk: cfg.Clock}, log: cfg.Logger.With("component", "filedrop"),
		banks: map[string]Bank{}, seen: map[string]observation{}, decided: map[string]int{}, procLock: map[string]bool{}}
	for _, b := range cfg.Banks {
		f := b.Folders()
		for _, dir := range []string{f.Inbound, f.Processing, f.Processed, f.Error, f.Outbound} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("filedrop: bank %s: %w", b.ID, err)
			}
		}
		p.banks[b.ID] = b
	}
	return p, nil
}

// Bank returns a configured bank (with defaults applied).
func (p *Processor) Bank(id string) (Bank, bool) {
	b, ok := p.banks[id]
	return b, ok
}

// Pass counts what one PollOnce did.
type Pass struct {
	Taken      int `json:"taken"`      // files moved from inbound to processing
	Accepted   int `json:"accepted"`   // files whose every record was submitted
	Duplicates int `json:"duplicates"` // files recorded as DUPLICATE
	Rejected   int `json:"rejected"`   // files moved to error/ with a report
	Results    int `json:"results"`    // result files written to outbound
}

func (a *Pass) add(b Pass) {
	a.Taken += b.Taken
	a.Accepted += b.Accepted
	a.Duplicates += b.Duplicates
	a.Rejected += b.Rejected
	a.Results += b.Results
}

// PollOnce does one pass over every bank: it resumes files left in
// processing (a crash), takes the complete files of inbound, and writes
// the result files of the drops whose transfers are all decided. An error
// of one bank does not stop the others; the first error is returned.
func (p *Processor) PollOnce(ctx context.Context) (Pass, error) {
	var total Pass
	var first error
	for _, b := range p.cfg.Banks {
		n, err := p.PollBank(ctx, b.ID)
		total.add(n)
		if err != nil {
			p.log.ErrorContext(ctx, "filedrop.poll_failed", "bank_id", b.ID, "error", err.Error())
			if first == nil {
				first = err
			}
		}
	}
	return total, first
}

// PollBank does PollOnce for one bank. A file that fails (its apply
// stopped on a retryable error, an I/O error) is logged and left where it
// is for the next pass; the other files are still handled. The first
// error is returned.
func (p *Processor) PollBank(ctx context.Context, bankID string) (Pass, error) {
	var pass Pass
	b, ok := p.banks[bankID]
	if !ok {
		return pass, fmt.Errorf("filedrop: bank %s is not configured", bankID)
	}
	var first error
	fail := func(file string, err error) {
		p.log.ErrorContext(ctx, "filedrop.file_failed", "bank_id", b.ID, "file", file, "error", err.Error())
		if first == nil {
			first = err
		}
	}
	f := b.Folders()
	// 1. Files left in processing by a crash (or another process).
	names, err := listFiles(f.Processing)
	if err != nil {
		return pass, err
	}
	for _, name := range names {
		if ctx.Err() != nil {
			return pass, ctx.Err()
		}
		d, err := p.process(ctx, b, name)
		pass.count(d)
		if err != nil {
			fail(name, err)
		}
	}
	// 2. Complete files of inbound.
	names, err = listFiles(f.Inbound)
	if err != nil {
		return pass, err
	}
	p.forget(f.Inbound, names)
	for _, name := range names {
		if ctx.Err() != nil {
			return pass, ctx.Err()
		}
		if strings.HasSuffix(name, doneSuffix) {
			continue
		}
		ready, err := p.complete(b, name)
		if err != nil {
			fail(name, err)
			continue
		}
		if !ready {
			continue
		}
		var bad *NameError
		if errors.As(CheckName(name), &bad) {
			d, err := p.refuseName(ctx, b, name, bad)
			pass.count(d)
			if err != nil {
				fail(quoteName(name), err)
			}
			continue
		}
		proc, err := p.claim(b, name)
		if err != nil {
			fail(name, err)
			continue
		}
		if proc == "" {
			continue // another process took it
		}
		pass.Taken++
		d, err := p.process(ctx, b, proc)
		pass.count(d)
		if err != nil {
			fail(proc, err)
		}
	}
	// 3. Results of accepted drops.
	drops, err := p.led.list(ctx, b.ID, StatusAccepted)
	if err != nil {
		return pass, err
	}
	for _, d := range drops {
		done, err := p.result(ctx, b, d)
		if err != nil {
			fail(d.ProcessingName, err)
			continue
		}
		if done {
			pass.Results++
		}
	}
	return pass, first
}

// forget drops the stability observations of inbound files that are gone.
func (p *Processor) forget(dir string, names []string) {
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[filepath.Join(dir, n)] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for path := range p.seen {
		if filepath.Dir(path) == dir && !present[path] {
			delete(p.seen, path)
		}
	}
}

func (p *Pass) count(d Drop) {
	switch d.Status {
	case StatusAccepted:
		p.Accepted++
	case StatusDuplicate:
		p.Duplicates++
	case StatusRejected:
		p.Rejected++
	}
}

const doneSuffix = ".done"

// listFiles returns the regular files of dir, sorted, without temporary
// names (a leading dot, or a .tmp/.part/.writing suffix).
func listFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("filedrop: %w", err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".tmp") ||
			strings.HasSuffix(n, ".part") || strings.HasSuffix(n, ".writing") {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// complete reports whether an inbound file may be taken: it has a
// done-marker, or its size and mtime have not changed for StableFor (by
// the clock) and it is not empty.
func (p *Processor) complete(b Bank, name string) (bool, error) {
	f := b.Folders()
	path := filepath.Join(f.Inbound, name)
	if _, err := os.Stat(path + doneSuffix); err == nil {
		return true, nil
	}
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("filedrop: %w", err)
	}
	now := p.cfg.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.seen[path]
	if !ok || o.size != st.Size() || !o.mtime.Equal(st.ModTime()) {
		p.seen[path] = observation{size: st.Size(), mtime: st.ModTime(), since: now}
		return false, nil
	}
	return st.Size() > 0 && now.Sub(o.since) >= p.cfg.StableFor, nil
}

// claim moves an inbound file into processing under a unique name
// ("<UTC stamp>_<name>") by atomic rename, after removing its done-marker
// (so that a crash in between leaves no stale marker for a later file of
// the same name). It returns "" when the file is gone (taken by another
// process).
func (p *Processor) claim(b Bank, name string) (string, error) {
	f := b.Folders()
	src := filepath.Join(f.Inbound, name)
	if err := os.Remove(src + doneSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("filedrop: remove done-marker: %w", err)
	}
	proc, err := p.processingName(context.Background(), b, name)
	if err != nil {
		return "", err
	}
	err = os.Rename(src, filepath.Join(f.Processing, proc))
	p.mu.Lock()
	delete(p.seen, src)
	p.mu.Unlock()
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("filedrop: claim %s: %w", name, err)
	}
	failpoint.Hit(FailAfterClaim)
	p.log.Info("filedrop.claimed", "bank_id", b.ID, "file", name, "processing_name", proc)
	return proc, nil
}

// processingName returns a processing name for a dropped file:
// "<UTC stamp>_<name>", with "-<n>" after the stamp in the unlikely case
// that the name is taken already (same name, same clock instant), so a
// claim never replaces another file or reuses a drop_id.
func (p *Processor) processingName(ctx context.Context, b Bank, name string) (string, error) {
	f := b.Folders()
	stamp := p.cfg.Clock.Now().UTC().Format("20060102T150405.000000000Z")
	for i := 0; ; i++ {
		proc := stamp + "_" + name
		if i > 0 {
			proc = stamp + "-" + strconv.Itoa(i) + "_" + name
		}
		_, found, err := p.led.get(ctx, DropID(b.ID, proc))
		if err != nil {
			return "", err
		}
		if !found && !exists(filepath.Join(f.Processing, proc)) && !exists(filepath.Join(f.Processed, proc)) && !exists(filepath.Join(f.Error, proc)) {
			return proc, nil
		}
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// originalName is the dropped name inside a processing name.
func originalName(proc string) string {
	if i := strings.IndexByte(proc, '_'); i >= 0 {
		return proc[i+1:]
	}
	return proc
}

// DropID is the FileDrops.drop_id of a file claimed as processing name
// proc by bank bankID.
func DropID(bankID, proc string) string {
	h := sha256.Sum256([]byte(bankID + "|" + proc))
	return "FD-" + hex.EncodeToString(h[:12])
}

// process takes a file in processing to its next resting place: a
// duplicate to processed/, an invalid file to error/ with its report, a
// valid file through apply to processed/. It resumes from the ledger row
// when there is one (a restart).
func (p *Processor) process(ctx context.Context, b Bank, proc string) (Drop, error) {
	f := b.Folders()
	path := filepath.Join(f.Processing, proc)
	p.mu.Lock()
	if p.procLock[path] {
		p.mu.Unlock()
		return Drop{}, nil
	}
	p.procLock[path] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.procLock, path)
		p.mu.Unlock()
	}()

	id := DropID(b.ID, proc)
	for attempt := 0; ; attempt++ {
		d, found, err := p.led.get(ctx, id)
		if err != nil {
			return Drop{}, err
		}
		if found {
			return p.resume(ctx, b, d)
		}
		d, err = p.first(ctx, b, proc)
		if errors.Is(err, errHashTaken) && attempt < 3 {
			// Another process recorded this file (same drop_id), or a
			// copy of it under another name (same hash) won the unique
			// index: read again; the copy becomes a DUPLICATE.
			continue
		}
		return d, err
	}
}

// first handles a file seen for the first time: hash, duplicate check,
// whole-file validation, then the ledger row and the next step.
func (p *Processor) first(ctx context.Context, b Bank, proc string) (Drop, error) {
	f := b.Folders()
	path := filepath.Join(f.Processing, proc)
	file, err := os.Open(path)
	if err != nil {
		return Drop{}, fmt.Errorf("filedrop: %w", err)
	}
	defer file.Close()
	hash, size, err := hashFile(file)
	if err != nil {
		return Drop{}, err
	}
	d := Drop{ID: DropID(b.ID, proc), BankID: b.ID, FileName: originalName(proc), ProcessingName: proc, SHA256: hash, Size: size}
	if orig, dup, err := p.led.original(ctx, hash); err != nil {
		return Drop{}, err
	} else if dup {
		d.Status, d.DuplicateOf = StatusDuplicate, orig.ID
		if err := p.led.insert(ctx, d); err != nil {
			return Drop{}, err
		}
		p.log.WarnContext(ctx, "filedrop.duplicate", "bank_id", b.ID, "file", d.FileName, "drop_id", d.ID,
			"duplicate_of", orig.ID, "file_sha256", hash)
		return p.resume(ctx, b, d)
	}
	// A file that is not a Zengin file at all gets one error that quotes
	// none of its bytes; any other is checked in full.
	errs, err := notZengin(file)
	if err != nil {
		return Drop{}, err
	}
	var sum zengin.Summary
	if errs == nil {
		sum, err = p.check(ctx, b, file, map[string]string{})
		if !errors.As(err, &errs) && err != nil {
			return Drop{}, err
		}
	}
	if errs != nil {
		d.Status, d.ErrorCount, d.ReportName = StatusRejected, len(errs.Errs)+errs.Dropped, proc+reportSuffix
		if err := writeAtomic(filepath.Join(f.Error, d.ReportName), func(w io.Writer) error { return writeReport(w, d, sum, errs) }); err != nil {
			return Drop{}, err
		}
		if err := p.led.insert(ctx, d); err != nil {
			return Drop{}, err
		}
		p.log.WarnContext(ctx, "filedrop.rejected", "bank_id", b.ID, "file", d.FileName, "drop_id", d.ID,
			"errors", d.ErrorCount, "report", d.ReportName)
		return p.resume(ctx, b, d)
	}
	d.Status, d.RecordCount, d.TotalAmount = StatusApplying, sum.DataCount, sum.DataTotal
	if err := p.led.insert(ctx, d); err != nil {
		return Drop{}, err
	}
	failpoint.Hit(FailAfterValidated)
	p.log.InfoContext(ctx, "filedrop.validated", "bank_id", b.ID, "file", d.FileName, "drop_id", d.ID,
		"records", d.RecordCount, "total_amount", d.TotalAmount, "file_sha256", hash)
	return p.resume(ctx, b, d)
}

// resume continues a drop from its ledger status.
func (p *Processor) resume(ctx context.Context, b Bank, d Drop) (Drop, error) {
	f := b.Folders()
	switch d.Status {
	case StatusApplying:
		err := p.apply(ctx, b, &d)
		if err == nil {
			failpoint.Hit(FailAfterApplied)
			err = p.led.advance(ctx, d.ID, StatusApplying, StatusAccepted, nil)
		}
		if errors.Is(err, errMoved) || errors.Is(err, os.ErrNotExist) {
			// Another process finished it: continue from its status.
			now, found, rerr := p.led.get(ctx, d.ID)
			if rerr != nil || !found || now.Status == StatusApplying {
				return d, err
			}
			return p.resume(ctx, b, now)
		}
		if err != nil {
			return d, err
		}
		d.Status = StatusAccepted
		failpoint.Hit(FailAfterAccepted)
		p.log.InfoContext(ctx, "filedrop.accepted", "bank_id", b.ID, "file", d.FileName, "drop_id", d.ID,
			"records", d.RecordCount, "refused", d.RefusedCount)
		return d, moveIfPresent(filepath.Join(f.Processing, d.ProcessingName), filepath.Join(f.Processed, d.ProcessingName))
	case StatusAccepted, StatusResulted, StatusDuplicate:
		return d, moveIfPresent(filepath.Join(f.Processing, d.ProcessingName), filepath.Join(f.Processed, d.ProcessingName))
	case StatusRejected:
		return d, moveIfPresent(filepath.Join(f.Processing, d.ProcessingName), filepath.Join(f.Error, d.ProcessingName))
	}
	return d, fmt.Errorf("filedrop: drop %s has unknown status %q", d.ID, d.Status)
}

// moveIfPresent renames src to dst; a missing src is already moved.
func moveIfPresent(src, dst string) error {
	err := os.Rename(src, dst)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("filedrop: %w", err)
}

func hashFile(f *os.File) (string, int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", 0, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("filedrop: hash: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// writeAtomic writes a file by temp name, fsync and rename, so a reader
// never sees it half-written.
func writeAtomic(path string, fill func(w io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("filedrop: %w", err)
	}
	defer os.Remove(tmp.Name())
	err = fill(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("filedrop: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// retryLater reports whether a Submit error should stop applying and be
// retried on the next pass (rather than recorded as a refusal of the
// record): any non-DomainError, a retryable category, read-only modes and
// idempotency conflicts.
func retryLater(err error) bool {
	de, ok := domainerr.As(err)
	if !ok || domainerr.ShouldRetry(err) {
		return true
	}
	switch de.Code {
	case "SYSTEM_QUORUM_LOSS_READ_ONLY", "SYSTEM_BCP_READ_ONLY", "IDEMPOTENCY_REPLAY", "IDEMPOTENCY_KEY_CONFLICT":
		return true
	}
	return false
}
