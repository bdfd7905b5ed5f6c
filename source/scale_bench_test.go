//go:build unix

package source

import (
	"github.com/faster-training/faster/internal/usage"
	"os"
	"runtime"
	"testing"
	"time"
)

// BenchmarkScaleListImageFolder lists the ImageFolder tree at
// $FASTER_SCALE_TREE (bench/run_scale.sh makes one of 1.28M empty files)
// with OpenImageFolder, as a loader does before its first epoch: wall and
// CPU seconds, CPU ns per file, and the heap the listing keeps (after a
// GC, with the ImageFolder alive) and allocated, per file.
func BenchmarkScaleListImageFolder(b *testing.B) { benchList(b, OpenImageFolder) }

// BenchmarkScaleListImageFolderNoStat is the same with ListImageFolder,
// the loader's listing (no stat a file, as torchvision).
func BenchmarkScaleListImageFolderNoStat(b *testing.B) { benchList(b, ListImageFolder) }

func benchList(b *testing.B, open func(string) (*ImageFolder, error)) {
	root := os.Getenv("FASTER_SCALE_TREE")
	if root == "" {
		b.Skip("FASTER_SCALE_TREE not set (bench/run_scale.sh)")
	}
	var wall, cpu time.Duration
	var kept, alloc uint64
	files := 0
	for b.Loop() {
		runtime.GC()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		t0, c0 := time.Now(), usage.CPU()
		d, err := open(root)
		if err != nil {
			b.Fatal(err)
		}
		wall, cpu = time.Since(t0), usage.CPU()-c0
		runtime.ReadMemStats(&ms1)
		alloc = ms1.TotalAlloc - ms0.TotalAlloc
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		kept = ms1.HeapAlloc - ms0.HeapAlloc
		files = len(d.Items())
		runtime.KeepAlive(d)
	}
	b.ReportMetric(float64(files), "files")
	b.ReportMetric(wall.Seconds(), "wall-s")
	b.ReportMetric(cpu.Seconds(), "cpu-s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(files, 1)), "cpu-ns/file")
	b.ReportMetric(float64(kept)/float64(max(files, 1)), "kept-B/file")
	b.ReportMetric(float64(alloc)/float64(max(files, 1)), "alloc-B/file")
}
