package filetool

import (
	"fmt"
	"io"
	"strings"
)

// progress counts bytes read and redraws a bar on w every 1% (or MiB when
// the size is unknown).
type progress struct {
	r    io.Reader
	w    io.Writer
	size int64
	n    int64
	last int64
}

const barWidth = 30

func (p *progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	step := int64(1 << 20)
	if p.size > 0 {
		step = max(p.size/100, 1)
	}
	if p.n-p.last >= step {
		p.last = p.n
		p.draw()
	}
	return n, err
}

func (p *progress) draw() {
	if p.size <= 0 {
		fmt.Fprintf(p.w, "\r%6.1f MiB read", float64(p.n)/(1<<20))
		return
	}
	pct := min(100*p.n/p.size, 100)
	fill := int(pct) * barWidth / 100
	fmt.Fprintf(p.w, "\r[%s%s] %3d%% %.1f/%.1f MiB", strings.Repeat("#", fill), strings.Repeat(".", barWidth-fill), pct,
		float64(p.n)/(1<<20), float64(p.size)/(1<<20))
}

// finish draws the final state and ends the line.
func (p *progress) finish() {
	p.draw()
	fmt.Fprintln(p.w)
}
