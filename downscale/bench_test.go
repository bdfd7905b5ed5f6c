package downscale

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRun resizes the benchmark photos (bench/photos.py, FASTER_PHOTOS)
// to a shorter edge of 256 with one worker, the unit of bench/run_resize.sh.
func BenchmarkRun(b *testing.B) {
	dir := os.Getenv("FASTER_PHOTOS")
	if dir == "" {
		dir = "/tmp/faster-photos"
	}
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("no photos in %s: run bench/photos.py", dir)
	}
	for _, scaled := range []bool{true, false} {
		name := "scaled"
		if !scaled {
			name = "exact"
		}
		b.Run(name, func(b *testing.B) {
			images := 0
			for i := 0; b.Loop(); i++ {
				dst := filepath.Join(b.TempDir(), "out")
				res, err := Run(context.Background(), dir, dst, Options{MaxSize: 256, Workers: 1, NoScaledDecode: !scaled})
				if err != nil || res.Failed > 0 {
					b.Fatal(err, res.Failures)
				}
				images += res.Resized + res.Copied
			}
			b.ReportMetric(float64(images)/b.Elapsed().Seconds(), "images/s")
		})
	}
}
