//go:build unix

package loader

import (
	"github.com/faster-training/faster/internal/usage"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// The benchmarks of bench/run_scale.sh for the loader's orders and record
// table, at ImageNet's 1.28M records and at 100M. Memory is the heap bytes
// a structure's construction allocated (runtime.MemStats.TotalAlloc),
// per record; times are the process's CPU time (cpuNow), so that they
// hold on a shared machine.

var scaleSizes = []int{1_281_167, 100_000_000}

// BenchmarkScaleRankPlan: one rank's plan of an epoch (world 8), the
// stride view over the epoch's Permutation that Loader.plan builds: its
// memory per record, and the CPU time per position served, walked over
// min(n/8, 2M) positions (epoch-s extrapolates to the rank's n/8).
func BenchmarkScaleRankPlan(b *testing.B) {
	const world = 8
	for _, n := range scaleSizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var heap uint64
			var walk float64
			var per int
			for b.Loop() {
				var pl ordering
				heap, _ = usage.Measure(func() {
					pl = stride{of: epochPerm(1, 0, n, true), rank: 3, world: world}
				})
				per = pl.Len()
				m := min(per, 2<<20)
				_, t := usage.Measure(func() {
					s := 0
					for i := range m {
						s += pl.At(i)
					}
					benchSink = s
				})
				walk = float64(t.Nanoseconds()) / float64(m)
			}
			b.ReportMetric(float64(heap)/float64(n), "B/record")
			b.ReportMetric(walk, "ns/record")
			b.ReportMetric(walk*float64(per)/1e9, "epoch-s")
		})
	}
}

// BenchmarkScaleResume: what resuming an epoch stopped half-way costs
// (remaining: the order of what is left, world 8, every rank at the same
// count): memory per record and CPU time per record of the dataset.
func BenchmarkScaleResume(b *testing.B) {
	const world = 8
	for _, n := range scaleSizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			if n > 10_000_000 && testing.Short() {
				b.Skip("-short")
			}
			seg := Segment{World: world, Consumed: make([]int, world)}
			for r := range seg.Consumed {
				seg.Consumed[r] = strideLen(n, world, r) / 2
			}
			var heap uint64
			var t time.Duration
			for b.Loop() {
				heap, t = usage.Measure(func() {
					rem, err := remaining(epochPerm(1, 0, n, true), []Segment{seg})
					if err != nil {
						b.Fatal(err)
					}
					benchSink = rem.Len()
				})
				runtime.GC()
			}
			b.ReportMetric(float64(heap)/float64(n), "B/record")
			b.ReportMetric(float64(t.Nanoseconds())/float64(n), "ns/record")
			b.ReportMetric(t.Seconds(), "build-s")
		})
	}
}

var benchSink int

func bigScale() bool { return os.Getenv("FASTER_SCALE_BIG") == "1" }
