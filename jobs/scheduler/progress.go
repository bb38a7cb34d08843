package scheduler

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// TerminalWriter returns f when it is an interactive terminal and nil
// otherwise, for Options.Progress: the progress bar is drawn only for a
// person watching, never into logs or pipes.
func TerminalWriter(f *os.File) io.Writer {
	if f == nil || !isTerminal(f) {
		return nil
	}
	return f
}

const barWidth = 20

// progressBar draws "\r<label> [#####-----] 2/4 step" lines on w; a nil w
// draws nothing.
type progressBar struct {
	w     io.Writer
	label string
	total int
}

func newProgressBar(w io.Writer, label string, total int) *progressBar {
	b := &progressBar{w: w, label: label, total: total}
	b.draw(0, "")
	return b
}

func (b *progressBar) draw(done int, note string) {
	if b.w == nil || b.total == 0 {
		return
	}
	filled := done * barWidth / b.total
	fmt.Fprintf(b.w, "\r\x1b[2K%s [%s%s] %d/%d %s", b.label, strings.Repeat("#", filled), strings.Repeat("-", barWidth-filled), done, b.total, note)
}

func (b *progressBar) advance(done int, note string) { b.draw(done, note) }

func (b *progressBar) finish() {
	if b.w != nil && b.total > 0 {
		fmt.Fprint(b.w, "\n")
	}
}
