package workbook

import (
	"bytes"
	"compress/flate"
	"io"
	"runtime"
	"sync"
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
	out *bytes.Buffer
	err error
}

// The chunk buffers, output buffers and compressors are reused: a large
// workbook deflates hundreds of chunks, and a fresh flate.Writer and two
// fresh megabyte buffers per chunk are most of the garbage the save makes
// (and their zeroing most of its memory traffic).
var (
	chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, deflateChunk); return &b }}
	outPool   = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	flatePool = sync.Pool{New: func() any { w, _ := flate.NewWriter(io.Discard, flate.BestSpeed); return w }}
)

func getChunk() []byte { return (*chunkPool.Get().(*[]byte))[:0] }

func putChunk(b []byte) { chunkPool.Put(&b) }

func newParallelDeflate(w io.Writer) io.WriteCloser {
	n := runtime.GOMAXPROCS(0)
	return &parallelDeflate{w: w, sem: make(chan struct{}, n), buf: getChunk()}
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
	d.buf = getChunk()
	res := make(chan deflated, 1)
	d.sem <- struct{}{}
	go func() {
		defer func() { <-d.sem }()
		out := outPool.Get().(*bytes.Buffer)
		out.Reset()
		fw := flatePool.Get().(*flate.Writer)
		fw.Reset(out)
		_, err := fw.Write(data)
		if err == nil {
			err = fw.Flush()
		}
		flatePool.Put(fw)
		putChunk(data)
		res <- deflated{out, err}
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
		_, d.err = d.w.Write(r.out.Bytes())
	}
	outPool.Put(r.out)
}

// Close compresses what is buffered, writes every chunk in order and ends
// the stream with an empty final block.
func (d *parallelDeflate) Close() error {
	if len(d.buf) > 0 && d.err == nil {
		d.dispatch()
	}
	putChunk(d.buf)
	d.buf = nil
	for len(d.pending) > 0 {
		d.writeOldest()
	}
	if d.err != nil {
		return d.err
	}
	fw := flatePool.Get().(*flate.Writer)
	defer flatePool.Put(fw)
	fw.Reset(d.w)
	return fw.Close()
}
