package filedrop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/zcgw/zcgw/formats/filetool"
	"github.com/zcgw/zcgw/formats/fixed"
	"github.com/zcgw/zcgw/formats/recordio"
	"github.com/zcgw/zcgw/formats/zengin"
)

// MaxNameLen is the longest dropped file name (bytes) the file drop takes.
// The processing name adds a 27-byte stamp ("<UTC stamp>_"), the report
// ".errors.txt" and its temporary name ".tmp-…-<random>"; with 160 bytes
// every one of them stays under the 255-byte limit of common file systems.
const MaxNameLen = 160

// NameError says why a dropped file name cannot be processed.
type NameError struct {
	Name   string
	Reason string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("filedrop: file name %s cannot be processed: %s", quoteName(e.Name), e.Reason)
}

// CheckName refuses a file name the file drop cannot process: longer than
// MaxNameLen bytes, not UTF-8, or with a control or format character
// (newline, NUL, DEL, C1 controls, bidirectional overrides).
func CheckName(name string) error {
	if len(name) > MaxNameLen {
		return &NameError{Name: name, Reason: fmt.Sprintf("it is %d bytes, the limit is %d", len(name), MaxNameLen)}
	}
	if !utf8.ValidString(name) {
		return &NameError{Name: name, Reason: "it is not valid UTF-8"}
	}
	for i, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return &NameError{Name: name, Reason: fmt.Sprintf("it has the control or format character %U at byte %d", r, i)}
		}
	}
	return nil
}

// quoteName shows a name in ASCII (escaped), cut to 300 characters, for
// logs and reports.
func quoteName(name string) string {
	q := strconv.QuoteToASCII(name)
	if len(q) > 300 {
		q = q[:300] + "…(" + strconv.Itoa(len(name)) + " bytes)"
	}
	return q
}

// refusedName is the safe name a file whose name cannot be processed gets
// in error/: "<UTC stamp>_refused-name-<first 12 hex of the name's
// SHA-256>".
func (p *Processor) refusedName(name string) string {
	h := sha256.Sum256([]byte(name))
	return p.cfg.Clock.Now().UTC().Format("20060102T150405.000000000Z") + "_refused-name-" + hex.EncodeToString(h[:6])
}

// refuseName moves an inbound file whose name cannot be processed to
// error/ under a safe name, with a report for the bank, and records it as
// REJECTED; it is logged once (filedrop.name_refused), since the file
// leaves inbound. It returns a zero Drop when another process took the
// file first.
func (p *Processor) refuseName(ctx context.Context, b Bank, name string, why *NameError) (Drop, error) {
	f := b.Folders()
	safe := p.refusedName(name)
	for i := 1; exists(filepath.Join(f.Error, safe)); i++ {
		safe = p.refusedName(name) + "-" + strconv.Itoa(i)
	}
	src := filepath.Join(f.Inbound, name)
	// A done-marker whose own name would be too long cannot exist.
	if err := os.Remove(src + doneSuffix); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENAMETOOLONG) {
		return Drop{}, fmt.Errorf("filedrop: remove done-marker: %w", err)
	}
	dst := filepath.Join(f.Error, safe)
	if err := os.Rename(src, dst); errors.Is(err, os.ErrNotExist) {
		return Drop{}, nil // taken by another process
	} else if err != nil {
		return Drop{}, fmt.Errorf("filedrop: move %s to error/: %w", quoteName(name), err)
	}
	p.mu.Lock()
	delete(p.seen, src)
	p.mu.Unlock()
	file, err := os.Open(dst)
	if err != nil {
		return Drop{}, fmt.Errorf("filedrop: %w", err)
	}
	hash, size, err := hashFile(file)
	file.Close()
	if err != nil {
		return Drop{}, err
	}
	d := Drop{ID: DropID(b.ID, safe), BankID: b.ID, FileName: quoteName(name), ProcessingName: safe, SHA256: hash, Size: size,
		Status: StatusRejected, ErrorCount: 1, ReportName: safe + reportSuffix}
	if err := writeAtomic(filepath.Join(f.Error, d.ReportName), func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "zcgw file drop: file name REFUSED, nothing from this file was applied\n"+
			"bank: %s\nfile name: %s\nrenamed to: %s\nsha256: %s\nsize: %d bytes\nerrors: 1\n"+
			"the file name cannot be processed: %s; drop the file again under a name of at most %d bytes of printable characters\n",
			b.ID, quoteName(name), safe, hash, size, why.Reason, MaxNameLen)
		return err
	}); err != nil {
		return Drop{}, err
	}
	if err := p.led.insert(ctx, d); err != nil {
		return Drop{}, err
	}
	p.log.WarnContext(ctx, "filedrop.name_refused", "bank_id", b.ID, "file", quoteName(name), "renamed_to", safe,
		"drop_id", d.ID, "reason", why.Reason, "report", d.ReportName)
	return d, nil
}

// InvalidFileError is SubmitFile's refusal of a file before anything is
// copied into the bank's folders: the file is not a Zengin file, or its
// Zengin format is invalid. Errs lists the errors with their positions;
// for a file that is not a Zengin file at all it holds one error, at
// offset 0, that quotes none of the file's bytes.
type InvalidFileError struct {
	File      string
	NotZengin bool
	Errs      *fixed.ErrorList
}

func (e *InvalidFileError) Error() string {
	if e.NotZengin {
		return fmt.Sprintf("filedrop: %s is not a Zengin file; nothing was copied", e.File)
	}
	return fmt.Sprintf("filedrop: %s is not a valid Zengin file (%d errors); nothing was copied", e.File, len(e.Errs.Errs)+e.Errs.Dropped)
}

// notZengin reports a file whose first bytes are not a Zengin header
// (データ区分 1 and a 種別コード, JIS or EBCDIC): one error at offset 0
// that quotes none of its bytes. nil for a file that starts like a Zengin
// file.
func notZengin(r io.ReadSeeker) (*fixed.ErrorList, error) {
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	head := make([]byte, 3)
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("filedrop: %w", err)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if filetool.Detect(head[:n]) == filetool.Zengin {
		return nil, nil
	}
	msg := "not a Zengin file: the first record is not a header (データ区分 1 and a 種別コード); its bytes are not quoted"
	switch h := head[:n]; {
	case n == 0:
		msg = "not a Zengin file: the file is empty"
	case bytes.HasPrefix(h, []byte{0xEF, 0xBB, 0xBF}):
		msg = "not a Zengin file: it starts with a UTF-8 byte order mark (EF BB BF); Zengin files are single-byte JIS or EBCDIC, without one"
	case bytes.HasPrefix(h, []byte{0xFE, 0xFF}) || bytes.HasPrefix(h, []byte{0xFF, 0xFE}):
		msg = "not a Zengin file: it starts with a UTF-16 byte order mark; Zengin files are single-byte JIS or EBCDIC"
	}
	errs := fixed.NewErrorList(1)
	errs.Add(&fixed.Error{Record: 1, RecordType: "zengin", Offset: 0, Column: 1, Reason: fixed.Invalid,
		Err: &recordio.LineError{Line: 1, Msg: msg}})
	return errs, nil
}

// CheckSource validates a file before it is submitted: it must be a
// Zengin file whose format is valid with the bank's name set. It returns
// an *InvalidFileError listing what is wrong, or an I/O error.
func CheckSource(path string, names zengin.NameChars, maxErrors int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("filedrop: %w", err)
	}
	defer f.Close()
	return checkSource(f, filepath.Base(path), names, maxErrors)
}

func checkSource(r io.ReadSeeker, name string, names zengin.NameChars, maxErrors int) error {
	if errs, err := notZengin(r); err != nil {
		return err
	} else if errs != nil {
		return &InvalidFileError{File: name, NotZengin: true, Errs: errs}
	}
	_, err := zengin.ValidateOptions(r, zengin.Options{Names: names, MaxErrors: maxErrors})
	var errs *fixed.ErrorList
	if errors.As(err, &errs) {
		return &InvalidFileError{File: name, Errs: errs}
	}
	if err != nil {
		return fmt.Errorf("filedrop: %s: %w", name, err)
	}
	_, err = r.Seek(0, io.SeekStart)
	return err
}
