package storage

import (
	"sync"
	"time"
)

// clock is the time a Store's stall checks and retry deadlines read: the
// real one, or a test's (so no test's verdict depends on the machine's
// speed).
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) stopper
}

// stopper is a timer that can be stopped (*time.Timer).
type stopper interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time                              { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// watchdog aborts an attempt whose body is too slow: every window
// (Options.StallTimeout) it must deliver at least need bytes, the window's
// worth at Options.MinRate or what is left of its range if that is less
// (and at least one byte). A trickle — a byte every 20 s — is a stall,
// where a timer pushed back by each byte would wait for ever. The window
// does not run while the reader is paused (waiting for its consumer to
// free a buffer): a slow consumer is not a slow server.
type watchdog struct {
	clk    clock
	window time.Duration
	floor  int64 // bytes a window must deliver at MinRate
	abort  func()

	mu     sync.Mutex
	t      stopper
	gen    int   // of the armed window: a stale timer's callback does nothing
	got    int64 // bytes in the current window
	need   int64 // bytes the current window must deliver
	left   int64 // bytes the attempt still has to deliver
	fired  bool  // aborted as stalled
	paused bool
}

// newWatchdog starts checking an attempt that has left bytes to deliver;
// nil (checking nothing) when window is not positive.
func newWatchdog(clk clock, window time.Duration, floor, left int64, abort func()) *watchdog {
	if window <= 0 {
		return nil
	}
	w := &watchdog{clk: clk, window: window, floor: floor, abort: abort, left: left}
	w.mu.Lock()
	w.arm()
	w.mu.Unlock()
	return w
}

// arm starts a window. Called with mu held.
func (w *watchdog) arm() {
	w.gen++
	w.got, w.need = 0, max(1, min(w.floor, w.left))
	gen := w.gen
	w.t = w.clk.AfterFunc(w.window, func() { w.check(gen) })
}

// check ends window gen: too few bytes abort the attempt, else the next
// window starts.
func (w *watchdog) check(gen int) {
	w.mu.Lock()
	if gen != w.gen || w.paused || w.fired {
		w.mu.Unlock()
		return
	}
	if w.got < w.need {
		w.fired = true
		w.gen++
		w.mu.Unlock()
		w.abort()
		return
	}
	w.arm()
	w.mu.Unlock()
}

// add counts n bytes delivered.
func (w *watchdog) add(n int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.got += int64(n)
	w.left -= int64(n)
	w.mu.Unlock()
}

// pause stops the window while the reader does not read.
func (w *watchdog) pause() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if !w.paused && !w.fired {
		w.paused = true
		w.gen++
		w.t.Stop()
	}
	w.mu.Unlock()
}

// resume starts a fresh window after pause.
func (w *watchdog) resume() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if w.paused && !w.fired {
		w.paused = false
		w.arm()
	}
	w.mu.Unlock()
}

// stop ends the checks.
func (w *watchdog) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.gen++
	w.paused = true
	w.t.Stop()
	w.mu.Unlock()
}

// stalled reports whether the watchdog aborted the attempt.
func (w *watchdog) stalled() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}
