package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zcgw/zcgw/formats/filetool"
	"github.com/zcgw/zcgw/formats/zengin"
)

// progressMin is the file size from which a progress bar is shown (on a
// terminal only).
const progressMin = 8 << 20

func init() {
	register("files", command{
		Summary: "describe|validate|convert FILE: Zengin, overnight posting/result and core balance files",
		Run:     runFiles,
		Usage:   func(w io.Writer) { filesUsage(w); filesSubmitUsage(w) },
	})
}

func filesUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: zcgw files describe [--names strict|long-vowel] FILE")
	fmt.Fprintln(w, "       zcgw files validate [--names strict|long-vowel] FILE")
	fmt.Fprintln(w, "       zcgw files convert [--names strict|long-vowel] [--encoding jis|ebcdic] [--separator crlf|none] [--out OUT] FILE")
	fmt.Fprintln(w, "       zcgw files submit [--data DIR] [--zengin-code CODE] [--names strict|long-vowel] BANK FILE")
	fmt.Fprintln(w, "--names: the Zengin name character set of the bank (strict: no ｰ, the default).")
	fmt.Fprintln(w, "Exit status: 0 valid, 1 invalid file (any content that is not a valid file), 2 usage or I/O error.")
}

func runFiles(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		filesUsage(e.Stderr)
		return 2
	}
	sub := args[0]
	if sub == "submit" {
		return runFilesSubmit(ctx, e, args[1:])
	}
	fs := e.flagSet("files " + sub)
	maxErrors := fs.Int("max-errors", 100, "most errors listed")
	namesFlag := fs.String("names", "strict", "Zengin name character set: strict (no ｰ) or long-vowel")
	var encoding, separator, out *string
	if sub == "convert" {
		encoding = fs.String("encoding", "", "jis or ebcdic (Zengin only; default: keep)")
		separator = fs.String("separator", "crlf", "crlf or none")
		out = fs.String("out", "-", "output file (- for stdout)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 || (sub != "describe" && sub != "validate" && sub != "convert") {
		filesUsage(e.Stderr)
		return 2
	}
	names, err := zengin.ParseNameChars(*namesFlag)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files:", err)
		return 2
	}
	name := fs.Arg(0)
	f, err := os.Open(name)
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files:", err)
		return 2
	}
	defer f.Close()
	opts := filetool.Options{MaxErrors: *maxErrors, Names: names}
	if st, err := f.Stat(); err == nil && st.Size() >= progressMin && stderrIsTerminal(e) {
		opts.Progress, opts.Size = e.Stderr, st.Size()
	}
	var res *filetool.Result
	switch sub {
	case "describe":
		res, err = filetool.Describe(e.Stdout, name, f, opts)
	case "validate":
		res, err = filetool.Validate(e.Stdout, name, f, opts)
	case "convert":
		res, err = convertFile(e, f, *out, filetool.ConvertOptions{Options: opts, Encoding: *encoding, Separator: *separator})
	}
	if err != nil {
		fmt.Fprintln(e.Stderr, "zcgw files:", err)
		return 2
	}
	if !res.OK() {
		if sub == "convert" {
			fmt.Fprintf(e.Stderr, "zcgw files: %s not converted: the file is invalid\n", name)
			filetool.WriteErrors(e.Stderr, res)
		}
		return 1
	}
	return 0
}

func convertFile(e *env, in *os.File, out string, o filetool.ConvertOptions) (*filetool.Result, error) {
	if out == "-" {
		return filetool.Convert(e.Stdout, in, o)
	}
	// Write next to the target and rename, so that a half-written or
	// refused conversion never leaves a file behind.
	tmp, err := os.CreateTemp(filepath.Dir(out), ".zcgw-convert-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	res, err := filetool.Convert(tmp, in, o)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil || !res.OK() {
		return res, err
	}
	return res, os.Rename(tmp.Name(), out)
}

// stderrIsTerminal reports whether the command's stderr is the process's
// stderr and a terminal (character device).
func stderrIsTerminal(e *env) bool {
	if e.Stderr != io.Writer(os.Stderr) {
		return false
	}
	st, err := os.Stderr.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
