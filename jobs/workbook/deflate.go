package workbook

import (
	"bytes"
	"compress/flate"
	"io"
	"runtime"
)

// deflateChunk is how much input each parallel deflate job compresses.
const deflateChunk = 1 << 20

// parallelDeflate is a raw DEFLATE stream compressed on every core: the
// input is cut into chunks, each compressed on its own goroutine at
// flate.BestSpeed and ended with a sync flush (byte-aligned, not final),
// and the results are written in order, then one empty final block. Each
// chunk starts without the previous chunk's window (the file is a little
// larger), and the stream is an ordinary one any inflater reads (the zip's
// CRC-32 is computed by archive/zip over the uncompressed input).
type parallelDeflate struct {
	w       io.Writer
	buf     []byte
	pending []chan deflated
	sem     chan struct{}
	err     error
}

type deflated struct {
	b   []byte
	err error
}

func newParallelDeflate(w io.Writer) io.WriteCloser {
	n := runtime.GOMAXPROCS(0)
	return &parallelDeflate{w: w, sem: make(chan struct{}, n), buf: make([]byte, 0, deflateChunk)}
}

func (d *parallelDeflate) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && d.err == nil {
		k := min(len(p), deflateChunk-len(d.buf))
		d.buf = append(d.buf, p[:k]...)
		p = p[k:]
		if len(d.buf) == deflateChunk {
			d.dispatch()
		}
	}
	if d.err != nil {
		return 0, d.err
	}
	return n, nil
}

// dispatch starts compressing the buffered chunk and writes out finished
// chunks while more than two per core are pending.
func (d *parallelDeflate) dispatch() {
	data := d.buf
	d.buf = make([]byte, 0, deflateChunk)
	res := make(chan deflated, 1)
	d.sem <- struct{}{}
	go func() {
		defer func() { <-d.sem }()
		var out bytes.Buffer
		out.Grow(len(data) / 4)
		fw, err := flate.NewWriter(&out, flate.BestSpeed)
		if err == nil {
			if _, err = fw.Write(data); err == nil {
				err = fw.Flush()
			}
		}
		res <- deflated{out.Bytes(), err}
	}()
	d.pending = append(d.pending, res)
	for len(d.pending) > 2*cap(d.sem) && d.err == nil {
		d.writeOldest()
	}
}

func (d *parallelDeflate) writeOldest() {
	r := <-d.pending[0]
	d.pending = d.pending[1:]
	if d.err == nil {
		d.err = r.err
	}
	if d.err == nil {
		_, d.err = d.w.Write(r.b)
	}
}

// Close compresses what is buffered, writes every chunk in order and ends
// the stream with an empty final block.
func (d *parallelDeflate) Close() error {
	if len(d.buf) > 0 && d.err == nil {
		d.dispatch()
	}
	for len(d.pending) > 0 {
		d.writeOldest()
	}
	if d.err != nil {
		return d.err
	}
	fw, err := flate.NewWriter(d.w, flate.BestSpeed)
	if err != nil {
		return err
	}
	return fw.Close()
}
