//go:build unix

package shard

import (
	"os"
	"strconv"
	"testing"

	"github.com/faster-training/faster/internal/usage"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/tfrecord"
)

// The record table's benchmark of bench/run_scale.sh (the loader's order
// benchmarks are in loader/scale_bench_test.go): memory is the heap bytes
// the construction allocated, per record; times are the process's CPU
// time, so that they hold on a shared machine.

func bigScale() bool { return os.Getenv("FASTER_SCALE_BIG") == "1" }

var benchSink int

// BenchmarkScaleRecordTable: the shards' record table of a global shuffle
// (recordTable: the parsed .idx entries, 16 B a record, and a word a
// shard), ImageNet-like shards of 1251 records: memory per record and CPU
// time per lookup (random global indices). At 100M records the table is
// 1.6 GB: that size runs only with FASTER_SCALE_BIG=1, else B/record is
// measured at 1.28M and 12.8M (it does not depend on n).
func BenchmarkScaleRecordTable(b *testing.B) {
	const perShard = 1251
	sizes := []int{1_281_167, 12_811_670}
	if bigScale() {
		sizes = append(sizes, 100_000_000)
	}
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var heap uint64
			var look float64
			for b.Loop() {
				var t recordTable
				heap, _ = usage.Measure(func() {
					var idx [][]tfrecord.IndexEntry
					for left := n; left > 0; left -= perShard {
						k := min(left, perShard)
						e := make([]tfrecord.IndexEntry, k)
						off := int64(0)
						for i := range e {
							e[i] = tfrecord.IndexEntry{Offset: off, Size: 110_000}
							off += 110_016
						}
						idx = append(idx, e)
					}
					t = newRecordTable(idx)
				})
				const m = 1 << 20
				p := pipeline.NewPermutation(n, 2, 0, 0x726573756d65)
				_, d := usage.Measure(func() {
					s := 0
					for i := range m {
						f, r, _ := t.at(p.At(i))
						s += f + r
					}
					benchSink = s
				})
				// The lookup's share: minus the permutation's own cost.
				_, dp := usage.Measure(func() {
					s := 0
					for i := range m {
						s += p.At(i)
					}
					benchSink = s
				})
				look = float64((d - dp).Nanoseconds()) / m
			}
			b.ReportMetric(float64(heap)/float64(n), "B/record")
			b.ReportMetric(look, "ns/lookup")
		})
	}
}
