package filetool

import (
	"bufio"
	"fmt"
	"io"

	"github.com/zcgw/zcgw/formats/corebalance"
	"github.com/zcgw/zcgw/formats/overnight"
	"github.com/zcgw/zcgw/formats/zengin"
)

// ConvertOptions say what to convert to.
type ConvertOptions struct {
	Options
	// Encoding is "" (keep), "jis" or "ebcdic" (Zengin files only): the
	// コード区分 of every header and the bytes of its group.
	Encoding string
	// Separator is "crlf" (the canonical form, default) or "none".
	Separator string
}

// Convert validates a whole file first and, only when it is valid, writes
// it to w in canonical form with the requested encoding and separator.
// An invalid file writes nothing: its errors are in the Result.
func Convert(w io.Writer, r io.ReadSeeker, o ConvertOptions) (*Result, error) {
	var enc *zengin.Encoding
	switch o.Encoding {
	case "":
	case "jis", "JIS", "sjis":
		e := zengin.JIS
		enc = &e
	case "ebcdic", "EBCDIC":
		e := zengin.EBCDIC
		enc = &e
	default:
		return &Result{}, fmt.Errorf("unknown encoding %q (want jis or ebcdic)", o.Encoding)
	}
	if o.Separator != "" && o.Separator != "crlf" && o.Separator != "none" {
		return &Result{}, fmt.Errorf("unknown separator %q (want crlf or none)", o.Separator)
	}
	res, err := Check(r, o.Options)
	if err != nil || !res.OK() {
		return res, err
	}
	if res.Format != Zengin && enc != nil {
		return res, fmt.Errorf("overnight and core balance files are single-byte JIS X 0201 only; --encoding applies to Zengin files")
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return res, err
	}
	recLen := zengin.RecordLen
	switch res.Format {
	case Overnight:
		recLen = overnight.RecordLen
	case CoreBalance:
		recLen = corebalance.RecordLen
	}
	out := io.Writer(bufio.NewWriterSize(w, 64<<10))
	flush := out.(*bufio.Writer).Flush
	if o.Separator == "none" {
		out = &stripCRLF{w: out, recLen: recLen}
	}
	switch res.Format {
	case Zengin:
		zw := zengin.NewWriter(out)
		zw.Names = o.Names
		for rec, err := range zengin.NewReaderOptions(r, zengin.Options{Names: o.Names}).Records() {
			if err != nil {
				return res, fmt.Errorf("file changed since validation: %w", err)
			}
			if h, ok := rec.(*zengin.Header); ok && enc != nil {
				h.Encoding = *enc
			}
			if err := zw.Write(rec); err != nil {
				return res, err
			}
		}
		if err := zw.Flush(); err != nil {
			return res, err
		}
	case CoreBalance:
		cw := corebalance.NewWriter(out)
		for rec, err := range corebalance.NewReader(r).Records() {
			if err != nil {
				return res, fmt.Errorf("file changed since validation: %w", err)
			}
			switch v := rec.(type) {
			case *corebalance.Header:
				err = cw.WriteHeader(v)
			case *corebalance.Detail:
				err = cw.WriteDetail(v)
			case *corebalance.Trailer:
				err = cw.Close()
			}
			if err != nil {
				return res, err
			}
		}
	default:
		ow := overnight.NewWriter(out)
		for rec, err := range overnight.NewReader(r).Records() {
			if err != nil {
				return res, fmt.Errorf("file changed since validation: %w", err)
			}
			if err := ow.Write(rec); err != nil {
				return res, err
			}
		}
	}
	return res, flush()
}

// stripCRLF drops the CR LF the canonical writers put after every record.
type stripCRLF struct {
	w      io.Writer
	recLen int
	pos    int // position within the current record+CRLF
}

func (s *stripCRLF) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if s.pos >= s.recLen {
			// Skip the separator bytes.
			skip := min(s.recLen+2-s.pos, len(p))
			p = p[skip:]
			s.pos += skip
			if s.pos == s.recLen+2 {
				s.pos = 0
			}
			continue
		}
		k := min(s.recLen-s.pos, len(p))
		if _, err := s.w.Write(p[:k]); err != nil {
			return 0, err
		}
		p = p[k:]
		s.pos += k
	}
	return n, nil
}
