//go:build unix

package pipeline

import (
	"github.com/faster-training/faster/internal/usage"
	"runtime"
	"strconv"
	"testing"
	"unsafe"
)

// scaleSizes are ImageNet's train split and a 100M-record corpus.
var scaleSizes = []int{1_281_167, 100_000_000}

// BenchmarkScaleEpochOrder is the "epoch order" row of bench/run_scale.sh:
// what an epoch's shuffled order over n records costs as a Permutation,
// the memory it holds (B/record: its size over n, the heap bytes
// NewPermutation allocated), the time to build it (build-ns) and to
// compute the whole order position by position (ns/record, and epoch-s =
// ns/record * n, measured over the first min(n, 16M) positions: At's cost
// does not depend on the position). Times are the process's CPU time
// (cpuNow), not the wall clock, so that they hold on a shared machine.
func BenchmarkScaleEpochOrder(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			m := min(n, 16<<20)
			var build, walk float64
			var heap uint64
			for b.Loop() {
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				t0 := usage.CPU()
				p := NewPermutation(n, 1, 0, saltIndexed)
				t1 := usage.CPU()
				runtime.ReadMemStats(&ms1)
				s := 0
				for i := range m {
					s += p.At(i)
				}
				t2 := usage.CPU()
				sink = s
				build, walk = float64(t1-t0), float64(t2-t1)/float64(m)
				heap = ms1.TotalAlloc - ms0.TotalAlloc
			}
			b.ReportMetric(float64(unsafe.Sizeof(Permutation{}))/float64(n), "B/record")
			b.ReportMetric(float64(heap), "heap-B")
			b.ReportMetric(build, "build-ns")
			b.ReportMetric(walk, "ns/record")
			b.ReportMetric(walk*float64(n)/1e9, "epoch-s")
		})
	}
}

var sink int
