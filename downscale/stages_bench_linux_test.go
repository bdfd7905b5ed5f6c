package downscale

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
)

// BenchmarkStages splits one worker's work on the benchmark photos
// (FASTER_PHOTOS, walked recursively) into its stages, in memory: decode,
// area resize to a shorter edge of 256, JPEG encode. It reports ms/image of
// each, so that a profile of `faster resize` can be read against them:
// the goroutine is locked to its thread and the stages timed with the
// thread's CPU clock, so time other processes take on a busy machine is
// not counted.
func BenchmarkStages(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dir := os.Getenv("FASTER_PHOTOS")
	if dir == "" {
		dir = "/tmp/faster-photos"
	}
	var datas [][]byte
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, err := os.ReadFile(p); err == nil {
				datas = append(datas, data)
			}
		}
		return nil
	})
	if len(datas) == 0 {
		b.Skipf("no photos in %s: run bench/photos.py", dir)
	}
	w := &worker{o: &Options{MaxSize: 256, Quality: imgcodec.DefaultQuality}}
	var tDec, tRes, tEnc time.Duration
	n := 0
	for b.Loop() {
		for _, data := range datas {
			cfg, err := imgcodec.DecodeConfig(data)
			if err != nil {
				b.Fatal(err)
			}
			ow, oh, ok := Size(cfg.Width, cfg.Height, 256)
			if !ok {
				continue
			}
			t0 := threadTime()
			img, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{Gray: cfg.Components == 1})
			if err != nil {
				b.Fatal(err)
			}
			t1 := threadTime()
			small := imgcodec.NewImage(ow, oh, img.Channels)
			box := augment.Box{X1: float64(cfg.Width), Y1: float64(cfg.Height)}
			if err := w.rz.ResizeBox(small, img, box, augment.Area, false); err != nil {
				b.Fatal(err)
			}
			t2 := threadTime()
			w.wbuf.Reset()
			if err := encode(&w.wbuf, small, ".JPEG", w.o.Quality); err != nil {
				b.Fatal(err)
			}
			t3 := threadTime()
			img.Release()
			small.Release()
			tDec, tRes, tEnc = tDec+t1-t0, tRes+t2-t1, tEnc+t3-t2
			n++
		}
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(max(n, 1)) }
	b.ReportMetric(ms(tDec), "decode-ms/image")
	b.ReportMetric(ms(tRes), "resize-ms/image")
	b.ReportMetric(ms(tEnc), "encode-ms/image")
	b.ReportMetric(float64(n)/(tDec+tRes+tEnc).Seconds(), "images/s")
}

// threadTime is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadTime() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}
