package pipeline

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The autotune tests run in a synctest bubble: time.Sleep advances a fake
// clock only once every goroutine of the bubble is blocked, and the stages'
// clock (nanotime, over time.Now) reads that fake clock. So a map that
// sleeps a millisecond takes exactly a millisecond, work that does not
// sleep takes none, and the tuners see the same rates however loaded the
// machine is: the verdicts are deterministic. synctest.Test also fails when
// a goroutine started in the bubble outlives it, so each is a leak check.

func TestAutotuneParallelMap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slowMap atomic.Bool
		f := func(_ context.Context, x int) (int, error) {
			if slowMap.Load() {
				time.Sleep(time.Millisecond)
			}
			return x, nil
		}
		m := ParallelMap(FromSlice(ints(240)), Auto, f).Budget(8)

		// A slow map and a fast consumer: parallelism rises to the budget.
		slowMap.Store(true)
		mustCollect(t, m)
		if p := m.Parallelism(); p != 8 {
			t.Fatalf("slow map, fast consumer: parallelism %d, want the budget, 8", p)
		}
		if st := m.Stats().Stages[1]; st.Parallelism != m.Parallelism() {
			t.Fatalf("stats parallelism %d", st.Parallelism)
		}

		// A fast map and a slow consumer: it comes back down (from where
		// the last epoch left it) to one worker.
		slowMap.Store(false)
		for _, err := range m.Iter(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Microsecond)
		}
		if p := m.Parallelism(); p != 1 {
			t.Fatalf("fast map, slow consumer: parallelism %d, want 1", p)
		}
		// No leak check is needed: synctest.Test fails if a goroutine of
		// the bubble is still blocked when the test function returns.
	})
}

// When the input is the bottleneck, more workers cannot help: it stays low.
func TestAutotuneSlowInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
		if p := m.Parallelism(); p != 1 {
			t.Fatalf("slow input: parallelism %d, want 1", p)
		}
	})
}

// A map that needs a known number of workers to keep up gets that many:
// f takes 1 ms, the consumer 0.4 ms, so the tuner wants
// ceil(1.25 * 1 / 0.4) = 4 workers, below the budget of 8.
func TestAutotuneNeed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := ParallelMap(FromSlice(ints(400)), Auto, sleepMap(time.Millisecond)).Budget(8)
		for _, err := range m.Iter(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(400 * time.Microsecond)
		}
		if p := m.Parallelism(); p != 4 {
			t.Fatalf("1 ms map, 0.4 ms consumer: parallelism %d, want 4", p)
		}
	})
}

func TestAutotunePrefetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A bursty producer (7 elements at once, then a pause) and a
		// steady consumer: the consumer starves after the pauses although
		// the producer is often ahead, so the queue deepens.
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
		if d := q.Depth(); d != 1 {
			t.Fatalf("slow producer: depth %d, want 1", d)
		}
	})
}
