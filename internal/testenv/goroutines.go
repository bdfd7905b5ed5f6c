package testenv

import (
	"runtime"
	"testing"
	"time"
)

// GoroutinesBack waits for the process's goroutines to fall back to base
// (the count before the code under test started its own) and fails the
// test, with every goroutine's stack, when they do not. A goroutine that
// has been joined (its WaitGroup done) may still be returning, so the
// count is polled; the bound, a minute, is what a leaking run waits
// before it fails, never what a passing one needs, whatever the load.
func GoroutinesBack(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left (baseline %d):\n%s", g, base, buf[:runtime.Stack(buf, true)])
	}
}
