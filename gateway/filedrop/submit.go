package filedrop

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// SubmitFile is `zcgw files submit BANK FILE`. It first checks src where
// it is: a name the file drop cannot process is a *NameError, and a file
// that is not a Zengin file or whose Zengin format is invalid (with the
// bank's name set) an *InvalidFileError; then nothing is copied into the
// bank's folders and nothing is recorded. A valid file is copied into the
// bank's processing folder (temp name, fsync, rename: the same claim a
// dropped file gets) and processed at once: duplicate check, whole-file
// validation with the file-drop rules, apply. It returns the drop (its
// Status says what happened) without waiting for the batch window; the
// result file is written by a later pass (the Watcher of `zcgw serve`, or
// PollOnce).
func (p *Processor) SubmitFile(ctx context.Context, bankID, src string) (Drop, error) {
	b, ok := p.banks[bankID]
	if !ok {
		return Drop{}, fmt.Errorf("filedrop: bank %s is not configured", bankID)
	}
	if err := CheckName(filepath.Base(src)); err != nil {
		return Drop{}, err
	}
	in, err := os.Open(src)
	if err != nil {
		return Drop{}, fmt.Errorf("filedrop: %w", err)
	}
	defer in.Close()
	if err := checkSource(in, filepath.Base(src), b.Names, p.cfg.MaxErrors); err != nil {
		return Drop{}, err
	}
	proc, err := p.processingName(ctx, b, filepath.Base(src))
	if err != nil {
		return Drop{}, err
	}
	if err := writeAtomic(filepath.Join(b.Folders().Processing, proc), func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	}); err != nil {
		return Drop{}, err
	}
	return p.process(ctx, b, proc)
}

// Path is where a drop's file is now (processing, processed or error
// folder), and its error report or result file when it has one.
func (p *Processor) Path(d Drop) (file, report, result string) {
	b, ok := p.banks[d.BankID]
	if !ok {
		return "", "", ""
	}
	f := b.Folders()
	switch d.Status {
	case StatusApplying:
		file = filepath.Join(f.Processing, d.ProcessingName)
	case StatusRejected:
		file, report = filepath.Join(f.Error, d.ProcessingName), filepath.Join(f.Error, d.ReportName)
	default:
		file = filepath.Join(f.Processed, d.ProcessingName)
	}
	if d.ResultName != "" {
		result = filepath.Join(f.Outbound, d.ResultName)
	}
	return file, report, result
}

// Drops returns a bank's drops in a status (oldest first).
func (p *Processor) Drops(ctx context.Context, bankID, status string) ([]Drop, error) {
	return p.led.list(ctx, bankID, status)
}

// Get returns one drop by id.
func (p *Processor) Get(ctx context.Context, dropID string) (Drop, bool, error) {
	return p.led.get(ctx, dropID)
}
