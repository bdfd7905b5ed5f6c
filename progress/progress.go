// Package progress draws a one-line progress report (items, items/s, MB/s,
// ETA) for long-running commands. It draws only when its output is a
// terminal, so piped and --json runs stay clean.
//
// A Bar is safe for concurrent use: workers call Add from any goroutine;
// one goroutine, owned by the Bar and stopped by Done, redraws the line.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// Bar counts items and bytes and, on a terminal, redraws a status line.
type Bar struct {
	label string
	total int64
	unit  string
	out   io.Writer
	start time.Time

	items atomic.Int64
	bytes atomic.Int64

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// New starts a Bar labelled label counting towards total items (0 if
// unknown) named unit ("records", "images"). It draws on out only when out
// is a terminal; otherwise it only counts. Call Done to stop it.
func New(out io.Writer, label string, total int64, unit string) *Bar {
	b := &Bar{label: label, total: total, unit: unit, out: out, start: time.Now(), stop: make(chan struct{})}
	if out != nil && IsTerminal(out) {
		b.wg.Add(1)
		go b.loop()
	}
	return b
}

// Add records n more items and nbytes more bytes.
func (b *Bar) Add(n, nbytes int64) {
	b.items.Add(n)
	b.bytes.Add(nbytes)
}

// SetTotal changes the expected number of items.
func (b *Bar) SetTotal(total int64) { atomic.StoreInt64(&b.total, total) }

// Items returns the items counted so far.
func (b *Bar) Items() int64 { return b.items.Load() }

// Done stops redrawing and clears the line. It is safe to call twice.
func (b *Bar) Done() {
	b.once.Do(func() {
		close(b.stop)
		b.wg.Wait()
	})
}

func (b *Bar) loop() {
	defer b.wg.Done()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			b.draw(true)
			return
		case <-t.C:
			b.draw(false)
		}
	}
}

func (b *Bar) draw(final bool) {
	fmt.Fprint(b.out, "\r\033[K"+b.Line())
	if final {
		fmt.Fprintln(b.out)
	}
}

// Line renders the current status: label, count, rate, MB/s and ETA.
func (b *Bar) Line() string {
	n := b.items.Load()
	total := atomic.LoadInt64(&b.total)
	el := time.Since(b.start).Seconds()
	rate, mbps := 0.0, 0.0
	if el > 0 {
		rate = float64(n) / el
		mbps = float64(b.bytes.Load()) / el / 1e6
	}
	s := fmt.Sprintf("%s %d", b.label, n)
	if total > 0 {
		s += fmt.Sprintf("/%d (%.0f%%)", total, 100*float64(n)/float64(total))
	}
	s += fmt.Sprintf(" %s  %.0f %s/s  %.1f MB/s", b.unit, rate, b.unit, mbps)
	if total > 0 && rate > 0 && n < total {
		s += "  ETA " + time.Duration(float64(total-n)/rate*float64(time.Second)).Round(time.Second).String()
	}
	return s
}
