package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/formats/filetool"
	"github.com/zcgw/zcgw/formats/zengin"
	"github.com/zcgw/zcgw/gateway/filedrop"
	"github.com/zcgw/zcgw/gateway/node"
)

func filesSubmitUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: zcgw files submit [--data DIR] [--zengin-code CODE] [--names strict|long-vowel] BANK FILE")
	fmt.Fprintln(w, "Drops FILE (a Zengin 総合振込 or 給与/賞与 file) for participant BANK (3 digits), as if BANK had put it in")
	fmt.Fprintln(w, "<data>/banks/BANK/inbound: duplicate check, whole-file validation, then one BULK transfer per record.")
	fmt.Fprintln(w, "FILE is validated where it is first: a file that is not a valid Zengin file is refused and nothing is copied.")
	fmt.Fprintln(w, "Exit status: 0 accepted, 1 refused, rejected (see the error report) or duplicate, 2 usage or I/O error.")
}

// runFilesSubmit is `zcgw files submit BANK FILE` (docs/filedrop.md).
func runFilesSubmit(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("files submit")
	code := fs.String("zengin-code", "", "the bank's 4-digit 全銀 code (default: BANK zero-padded to 4 digits)")
	namesFlag := fs.String("names", "strict", "the bank's Zengin name character set: strict (no ｰ) or long-vowel")
	fs.Usage = func() { filesSubmitUsage(e.Stderr) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		filesSubmitUsage(e.Stderr)
		return 2
	}
	bank, file := fs.Arg(0), fs.Arg(1)
	names, err := zengin.ParseNameChars(*namesFlag)
	if err == nil {
		err = filedrop.CheckBankID(bank)
	}
	if err == nil {
		err = filedrop.CheckName(filepath.Base(file))
	}
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files submit:", err)
		return 2
	}
	// Validate FILE where it is, before anything is created or copied.
	var invalid *filedrop.InvalidFileError
	if err := filedrop.CheckSource(file, names, 0); errors.As(err, &invalid) {
		return refusedSubmit(e, file, invalid)
	} else if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files submit:", err)
		return 2
	}
	if err := os.MkdirAll(e.DataDir, 0o755); err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files submit:", err)
		return 2
	}
	db, err := e.openCoordinator(ctx)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files submit:", err)
		return 2
	}
	defer db.Close()
	orch, err := orchestrator.New(orchestrator.Config{DB: db})
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files submit:", err)
		return 2
	}
	nodeCfg, _, err := node.LoadConfig(e.DataDir) // files_root: the folders the node's watcher reads
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files submit:", err)
		return 2
	}
	cfg := filedrop.Config{DB: db, Coordinator: orch, Participants: orch.Participants(), Root: nodeCfg.FilesDir(e.DataDir),
		Banks: []filedrop.Bank{{ID: bank, ZenginCode: *code, Names: names}}, Accounts: nodeCfg.FileAccounts()}
	bar := stderrIsTerminal(e)
	if bar {
		cfg.Progress = func(_, _ string, done, total int64) { drawRecords(e.Stderr, done, total) }
	}
	p, err := filedrop.New(cfg)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files submit:", err)
		return 2
	}
	d, err := p.SubmitFile(ctx, bank, file)
	if bar && d.Status == filedrop.StatusAccepted {
		fmt.Fprintln(e.Stderr)
	}
	if errors.As(err, &invalid) { // the file changed since the check above
		return refusedSubmit(e, file, invalid)
	}
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files submit:", err)
		if d.ID != "" {
			fmt.Fprintf(e.Stderr, "zcgw files submit: drop %s stays in processing; `zcgw serve` (or submitting again) resumes it\n", d.ID)
		}
		return 2
	}
	path, report, _ := p.Path(d)
	b, _ := p.Bank(bank)
	switch d.Status {
	case filedrop.StatusAccepted:
		fmt.Fprintf(e.Stdout, "%s: accepted, %d records (%d yen) submitted as BULK transfers, %d refused by the coordinator\n",
			file, d.RecordCount, d.TotalAmount, d.RefusedCount)
		fmt.Fprintf(e.Stdout, "drop %s, sha256 %s, file kept at %s\n", d.ID, d.SHA256, path)
		fmt.Fprintf(e.Stdout, "the result file goes to %s once the batch window has decided every transfer\n", b.Folders().Outbound)
		return 0
	case filedrop.StatusDuplicate:
		fmt.Fprintf(e.Stdout, "%s: duplicate of drop %s (same sha256 %s): nothing applied\n", file, d.DuplicateOf, d.SHA256)
		return 1
	case filedrop.StatusRejected:
		fmt.Fprintf(e.Stdout, "%s: rejected, %d errors, nothing applied; report %s\n", file, d.ErrorCount, report)
		if text, err := os.ReadFile(report); err == nil {
			e.Stderr.Write(text)
		}
		return 1
	}
	fmt.Fprintf(e.Stdout, "%s: drop %s is %s\n", file, d.ID, d.Status)
	return 1
}

// refusedSubmit prints why FILE was refused before it was copied: each
// error with its record, line and byte offset (a file that is not a
// Zengin file gets one error that quotes none of its bytes).
func refusedSubmit(e *env, file string, invalid *filedrop.InvalidFileError) int {
	what := "not a valid Zengin file"
	if invalid.NotZengin {
		what = "not a Zengin file"
	}
	fmt.Fprintf(e.Stdout, "%s: refused, %s: nothing copied, nothing applied\n", file, what)
	filetool.WriteErrors(e.Stderr, &filetool.Result{Format: filetool.Zengin, Errors: invalid.Errs})
	return 1
}

// drawRecords redraws a records progress bar on a terminal.
func drawRecords(w io.Writer, done, total int64) {
	const width = 30
	pct := int64(100)
	if total > 0 {
		pct = min(100*done/total, 100)
	}
	fill := int(pct) * width / 100
	fmt.Fprintf(w, "\r[%s%s] %3d%% %d/%d records", strings.Repeat("#", fill), strings.Repeat(".", width-fill), pct, done, total)
}
