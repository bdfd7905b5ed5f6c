package pipeline

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// Autotune tests assert on the chosen parallelism with wide margins: the
// slow side sleeps for a millisecond, the fast side takes microseconds, so
// the estimated need is either far above the budget or at 1.

func TestAutotuneParallelMap(t *testing.T) {
	base := leakBase(t)
	var slowMap atomic.Bool
	f := func(_ context.Context, x int) (int, error) {
		if slowMap.Load() {
			time.Sleep(time.Millisecond)
		}
		return x, nil
	}
	m := ParallelMap(FromSlice(ints(240)), Auto, f).Budget(8)

	// A slow map and a fast consumer: parallelism rises towards the budget.
	slowMap.Store(true)
	mustCollect(t, m)
	if p := m.Parallelism(); p < 4 {
		t.Fatalf("slow map, fast consumer: parallelism %d, want >= 4 of 8", p)
	}
	if st := m.Stats().Stages[1]; st.Parallelism != m.Parallelism() {
		t.Fatalf("stats parallelism %d", st.Parallelism)
	}

	// A fast map and a slow consumer: it comes back down (from where the
	// last epoch left it).
	slowMap.Store(false)
	for _, err := range m.Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Microsecond)
	}
	if p := m.Parallelism(); p > 2 {
		t.Fatalf("fast map, slow consumer: parallelism %d, want <= 2", p)
	}
	checkNoLeak(t, base)
}

// When the input is the bottleneck, more workers cannot help: it stays low.
func TestAutotuneSlowInput(t *testing.T) {
	src := FromFunc(func(_ context.Context, i int) (int, error) {
		if i == 120 {
			return 0, errEOF
		}
		time.Sleep(time.Millisecond)
		return i, nil
	})
	m := ParallelMap(src, Auto, func(_ context.Context, x int) (int, error) {
		time.Sleep(100 * time.Microsecond)
		return x, nil
	}).Budget(8)
	mustCollect(t, m)
	if p := m.Parallelism(); p > 2 {
		t.Fatalf("slow input: parallelism %d, want <= 2", p)
	}
}

// A CPU-bound map with a fast consumer uses its whole CPU budget.
func TestAutotuneCPUBound(t *testing.T) {
	spin := func(_ context.Context, x int) (int, error) {
		s := uint64(x)
		for range 200000 {
			s = s*6364136223846793005 + 1442695040888963407
		}
		return int(s & 1), nil
	}
	budget := min(runtime.GOMAXPROCS(0), 4)
	m := ParallelMap(FromSlice(ints(200)), Auto, spin).Budget(budget)
	mustCollect(t, m)
	if p := m.Parallelism(); p != budget {
		t.Fatalf("CPU-bound map: parallelism %d, want the budget, %d", p, budget)
	}
}

func TestAutotunePrefetch(t *testing.T) {
	// A bursty producer (7 elements at once, then a pause) and a steady
	// consumer: the consumer starves after the pauses although the producer
	// is often ahead, so the queue deepens.
	bursty := FromFunc(func(_ context.Context, i int) (int, error) {
		if i == 400 {
			return 0, errEOF
		}
		if i%8 == 7 {
			time.Sleep(2 * time.Millisecond)
		}
		return i, nil
	})
	p := Prefetch(bursty, Auto).MaxDepth(8)
	for _, err := range p.Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Microsecond)
	}
	if d := p.Depth(); d < 2 || d > 8 {
		t.Fatalf("bursty producer: depth %d, want 2 … 8", d)
	}
	// A producer that is simply slower: depth cannot help and stays.
	slow := FromFunc(func(_ context.Context, i int) (int, error) {
		if i == 100 {
			return 0, errEOF
		}
		time.Sleep(300 * time.Microsecond)
		return i, nil
	})
	q := Prefetch(slow, Auto).MaxDepth(8)
	mustCollect(t, q)
	if d := q.Depth(); d > 2 {
		t.Fatalf("slow producer: depth %d, want <= 2", d)
	}
}
