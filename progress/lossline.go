package progress

import (
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// LossLine draws a Bar with the running loss appended (the progress line
// of a training epoch). The Bar only counts (it is given no writer); this
// line draws it, on a terminal only, from its own goroutine, stopped by
// Done.
type LossLine struct {
	bar  *Bar
	out  io.Writer
	loss atomic.Uint64 // float64 bits of the smoothed loss
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// NewLossLine starts a LossLine labelled label counting towards total
// images, drawn on out when out is a terminal. Call Done to stop it.
func NewLossLine(out io.Writer, label string, total int64) *LossLine {
	l := &LossLine{bar: New(nil, label, total, "images"), out: out, stop: make(chan struct{})}
	if IsTerminal(out) {
		l.wg.Add(1)
		go l.loop()
	}
	return l
}

// Step records a step of images whose loss was loss: the line shows an
// exponential average of the losses (0.9 of the old, 0.1 of the new).
func (l *LossLine) Step(loss float64, images int) {
	old := l.Loss()
	if l.bar.Items() > 0 {
		loss = 0.9*old + 0.1*loss
	}
	l.loss.Store(math.Float64bits(loss))
	l.bar.Add(int64(images), 0)
}

// Loss is the smoothed loss so far.
func (l *LossLine) Loss() float64 { return math.Float64frombits(l.loss.Load()) }

func (l *LossLine) loop() {
	defer l.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			fmt.Fprintf(l.out, "\r\033[K%s  loss %.4f\n", l.bar.Line(), l.Loss())
			return
		case <-t.C:
			fmt.Fprintf(l.out, "\r\033[K%s  loss %.4f", l.bar.Line(), l.Loss())
		}
	}
}

// Done stops the line (drawing it a last time, on a terminal). It is safe
// to call twice.
func (l *LossLine) Done() {
	l.once.Do(func() {
		close(l.stop)
		l.wg.Wait()
		l.bar.Done()
	})
}
