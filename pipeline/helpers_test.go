package pipeline

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// checkNoLeak fails t if the goroutine count does not come back to base
// within a deadline. Tests that use it must not run in parallel.
func checkNoLeak(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutine leak: %d goroutines, want <= %d\n%s", n, base, buf)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// leakBase records the goroutine count for checkNoLeak.
func leakBase(t testing.TB) int {
	t.Helper()
	// Goroutines from earlier tests may still be finishing.
	time.Sleep(time.Millisecond)
	return runtime.NumGoroutine()
}

func ints(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func mustCollect[T any](t testing.TB, d Dataset[T]) []T {
	t.Helper()
	out, err := Collect(context.Background(), d)
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return out
}

// collectEpoch runs epoch e of d and returns its elements.
func collectEpoch[T any](t testing.TB, d Dataset[T], e int64) []T {
	t.Helper()
	out, err := Collect(WithEpoch(context.Background(), e), d)
	if err != nil {
		t.Fatalf("Collect epoch %d: %v", e, err)
	}
	return out
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[int]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

func short(s []int) string {
	var b strings.Builder
	for i, x := range s {
		if i == 40 {
			b.WriteString("…")
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(itoa(x))
	}
	return b.String()
}

func itoa(x int) string {
	if x < 0 {
		return "-" + itoa(-x)
	}
	if x < 10 {
		return string(rune('0' + x))
	}
	return itoa(x/10) + string(rune('0'+x%10))
}
