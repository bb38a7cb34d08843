package recordio

import (
	"io"
	"iter"

	"github.com/zcgw/zcgw/formats/fixed"
)

// Stream is the record loop shared by the streaming readers of record
// formats (zengin, overnight): it drives a Scanner, hands each record to
// the format's Decode, and gathers the errors reported while reading one
// record (the scanner's and Decode's) so that Next returns them together,
// in file order, instead of the record.
//
// Set Scanner, Decode and Finish before the first Next; the scanner's
// report function and the format's checker report through Add.
type Stream[R any] struct {
	Scanner *Scanner
	// Decode validates one record and decodes it; ok is false when the
	// record is invalid, in which case it has reported why through Add.
	Decode func(Record) (rec R, ok bool)
	// Finish runs once at the end of the input (not after an I/O error),
	// to report what only the whole file shows, such as a missing trailer.
	Finish func()
	// MaxErrors caps the errors kept per Next call (the rest are counted
	// in the list's Dropped).
	MaxErrors int

	pending *fixed.ErrorList
	done    bool
}

// Add records an error of the record being read.
func (s *Stream[R]) Add(e *fixed.Error) {
	if s.pending == nil {
		s.pending = fixed.NewErrorList(s.MaxErrors)
	}
	s.pending.Add(e)
}

func (s *Stream[R]) take() error {
	if s.pending == nil || s.pending.Len() == 0 {
		return nil
	}
	l := s.pending
	s.pending = nil
	return l
}

// Next returns the next valid record. It returns a *fixed.ErrorList for a
// record (or a gap between records) with errors, and io.EOF at the end of
// the input, after any error found at the end. An I/O error is returned
// as is and ends reading.
func (s *Stream[R]) Next() (R, error) {
	var zero R
	for {
		if s.done {
			if err := s.take(); err != nil {
				return zero, err
			}
			return zero, io.EOF
		}
		rec, ok := s.Scanner.Next()
		if !ok {
			s.done = true
			if err := s.Scanner.Err(); err != nil {
				return zero, err
			}
			s.Finish()
			continue
		}
		r, valid := s.Decode(rec)
		if err := s.take(); err != nil {
			return zero, err
		}
		if valid {
			return r, nil
		}
	}
}

// All iterates over the input: each step yields a valid record with a nil
// error, or a zero record with the errors of a broken record (a
// *fixed.ErrorList) or an I/O error, after which iteration ends. Breaking
// out of the loop stops reading.
func (s *Stream[R]) All() iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		for {
			r, err := s.Next()
			if err == io.EOF || !yield(r, err) {
				return
			}
			if err != nil && s.Scanner.Err() != nil {
				return
			}
		}
	}
}

// Drain reads the whole input, passing every record to check, then runs
// finish. It returns the scanner's I/O error, if any (finish does not run
// then). Validators use it: they hand over no record.
func Drain(sc *Scanner, check func(Record), finish func()) error {
	for {
		rec, ok := sc.Next()
		if !ok {
			break
		}
		check(rec)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	finish()
	return nil
}
