package pipeline

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

const (
	benchBatch = 64
	benchRow   = 256 // bytes per row: 64 float32s
)

// work is a map function costing about cost iterations of arithmetic.
func work(cost int) func(context.Context, int) (int, error) {
	return func(_ context.Context, x int) (int, error) {
		s := uint64(x)
		for range cost {
			s = s*6364136223846793005 + 1442695040888963407
		}
		return x + int(s&1), nil
	}
}

func fillRow(row []byte, x int) error {
	f := Float32s(row)
	for j := range f {
		f[j] = float32(x)
	}
	return nil
}

// benchPipeline is the hot path of a training input pipeline: indices →
// ParallelMap → Batch into a pooled arena → Prefetch.
func benchPipeline(n, par, cost int) *PrefetchDataset[*Minibatch[int]] {
	m := ParallelMap(Indices(n), par, work(cost))
	b := Batch(m, benchBatch).Arena(benchRow, fillRow).Remainder(Drop).PoolSize(8)
	return Prefetch(b, 2)
}

// runBatches runs one epoch and releases every batch; it returns the
// batches seen.
func runBatches(tb testing.TB, d Dataset[*Minibatch[int]]) int {
	n := 0
	for b, err := range d.Iter(context.Background()) {
		if err != nil {
			tb.Fatal(err)
		}
		n++
		b.Release()
	}
	return n
}

// BenchmarkPipeline reports items/s through ParallelMap + Batch + Prefetch;
// one op is one batch of 64 items. allocs/op is 0 in the steady state.
func BenchmarkPipeline(b *testing.B) {
	for _, cost := range []int{0, 1000} {
		for _, par := range []int{1, 2, 4, Auto} {
			name := fmt.Sprint(par)
			if par == Auto {
				name = "auto"
			}
			b.Run(fmt.Sprintf("cost=%d/par=%s", cost, name), func(b *testing.B) {
				d := benchPipeline(b.N*benchBatch, par, cost)
				b.ReportAllocs()
				b.SetBytes(benchBatch * benchRow)
				b.ResetTimer()
				got := runBatches(b, d)
				b.StopTimer()
				if got != b.N {
					b.Fatalf("%d batches, want %d", got, b.N)
				}
				b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "items/s")
			})
		}
	}
}

// BenchmarkStage reports the per-element overhead of single stages.
func BenchmarkStage(b *testing.B) {
	stages := map[string]func(Dataset[int]) Dataset[int]{
		"map":          func(d Dataset[int]) Dataset[int] { return Map(d, double) },
		"parallelmap2": func(d Dataset[int]) Dataset[int] { return ParallelMap(d, 2, double) },
		"prefetch4":    func(d Dataset[int]) Dataset[int] { return Prefetch(d, 4) },
		"shuffle1024":  func(d Dataset[int]) Dataset[int] { return Shuffle(d, 1024, 1) },
		"interleave4x16": func(d Dataset[int]) Dataset[int] {
			return Interleave(Indices(4), func(int) Dataset[int] { return d }, 4, 16, 0)
		},
	}
	for name, mk := range stages {
		b.Run(name, func(b *testing.B) {
			d := mk(Indices(b.N))
			b.ReportAllocs()
			n := 0
			for _, err := range d.Iter(context.Background()) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// The steady state allocates nothing: an epoch of many more batches costs
// no more allocations than a short one (per-epoch setup aside).
func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, par := range []int{1, 3} {
		short, long := steadyAllocs(t, par, work(10))
		checkSteady(t, fmt.Sprint(par), short, long)
	}
}

// With Auto the tuner moves the parallelism, and what it sees depends on
// the machine's load; so the Auto case runs in a synctest bubble, where the
// stages' clock is the bubble's fake clock and only time.Sleep advances it.
// The map sleeps 50µs per element for 640 elements, then none for the next
// 640, and so on: the tuner climbs to the budget and comes back down to one
// worker many times in each epoch, the same way on any machine. Growing
// again must reuse the workers and slots it set aside.
func TestSteadyStateAllocsAuto(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	synctest.Test(t, func(t *testing.T) {
		swing := func(_ context.Context, x int) (int, error) {
			if (x/640)%2 == 0 {
				time.Sleep(50 * time.Microsecond)
			}
			return x, nil
		}
		short, long := steadyAllocs(t, Auto, swing)
		checkSteady(t, "auto", short, long)
	})
}

// steadyAllocs returns the allocations of a second epoch of 20 and of 2000
// batches through benchPipeline's stages with map f.
//
// The stages read the process's CPU clock once per epoch (processCPU reads
// /proc/self/task/*/schedstat, allocating per OS thread, and the runtime
// starts threads when it likes); that is per-epoch setup whose size the
// machine decides, so the test counts the pipeline's own allocations with
// a clock that allocates nothing.
func steadyAllocs(t *testing.T, par int, f func(context.Context, int) (int, error)) (short, long uint64) {
	defer func(f func() int64) { procClock = f }(procClock)
	procClock = nanotime
	allocs := func(batches int) uint64 {
		m := ParallelMap(Indices(batches*benchBatch), par, f)
		if par == Auto {
			m.Budget(4)
		}
		b := Batch(m, benchBatch).Arena(benchRow, fillRow).Remainder(Drop).PoolSize(8)
		d := Prefetch(b, 2)
		runBatches(t, d) // warm the pool and the tuner
		// The least of three epochs: the runtime allocates a little once,
		// lazily (its first GC cycles, a new P's caches), and whichever
		// epoch is running then would carry it; a cost per batch shows in
		// every epoch.
		least := uint64(math.MaxUint64)
		for range 3 {
			var a, b2 runtime.MemStats
			runtime.ReadMemStats(&a)
			runBatches(t, d)
			runtime.ReadMemStats(&b2)
			least = min(least, b2.Mallocs-a.Mallocs)
		}
		return least
	}
	return allocs(20), allocs(2000)
}

func checkSteady(t *testing.T, name string, short, long uint64) {
	t.Helper()
	// 1980 more batches (126,720 more items) in the long epoch; allow a
	// little slack for the runtime's own bookkeeping and the batches the
	// pool gives up when the consumer falls behind.
	if long > short+40 {
		t.Errorf("par %s: %d allocations for 20 batches, %d for 2000", name, short, long)
	}
	t.Logf("par %s: %d allocations per epoch of 20 batches, %d of 2000", name, short, long)
}
