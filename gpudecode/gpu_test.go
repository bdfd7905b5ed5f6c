package gpudecode

// The GPU stage's check, PREPARED and NOT YET RUN on a GPU: a loader with
// device cuda on photographs against the CPU path (FullDecode: the crop
// decoded at full scale, as nvJPEG's region of interest is), epochs 0
// and 1, both layouts; the fallback counted; every buffer freed. Skipped
// without a driver, failed under FASTER_REQUIRE_GPU=1 (gpucheck.sh sets
// it). Each result is a line "GPUCHECK|…" gpucheck.sh prints as a table.

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/pipeline"
)

// photoFolder is an ImageFolder of the photographs in $FASTER_PHOTOS
// (gpucheck.sh carries them) or Debian's mate-backgrounds, plus the
// repository's progressive, 4:1:1, CMYK and PNG files (the fallback and
// the hybrid backend); it returns the folder and how many files nvJPEG
// cannot take.
func photoFolder(t *testing.T) (string, int) {
	t.Helper()
	var paths []string
	if d := os.Getenv("FASTER_PHOTOS"); d != "" {
		paths, _ = filepath.Glob(filepath.Join(d, "*.jpg"))
	}
	if len(paths) == 0 {
		paths, _ = filepath.Glob("/usr/share/backgrounds/*/*/*.jpg")
	}
	if len(paths) == 0 {
		t.Fatal("no photographs: set FASTER_PHOTOS (gpucheck.sh build makes them)")
	}
	root := t.TempDir()
	cp := func(src, class, name string) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(root, class), 0o755)
		if err := os.WriteFile(filepath.Join(root, class, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range paths {
		cp(p, fmt.Sprintf("c%d", i%2), filepath.Base(p))
	}
	td := os.Getenv("FASTER_TESTDATA")
	if td == "" {
		td = filepath.Join("..", "imgcodec", "testdata")
	}
	cpu := 0
	for _, n := range []string{"progressive.jpg", "ycc411.jpg", "multiscan.jpg", "gray.jpg", "cmyk.jpg", "png_named.JPEG"} {
		cp(filepath.Join(td, n), "c0", "x_"+n)
		if n == "cmyk.jpg" || n == "png_named.JPEG" {
			cpu++
		}
	}
	return root, cpu
}

func row(t *testing.T, what, size string, ms float64, agreement string, ok bool) {
	t.Helper()
	verdict := "ok"
	if !ok {
		verdict = "FAIL"
		t.Errorf("%s %s: %s", what, size, agreement)
	}
	t.Logf("GPUCHECK|%s|%s|%.3f|%s|%s", what, size, ms, agreement, verdict)
}

// openGPU opens a loader on device cuda, or skips (fails under
// FASTER_REQUIRE_GPU=1).
func openGPU(t *testing.T, path string, o loader.Options) *loader.Loader {
	t.Helper()
	o.Device = "cuda"
	l, err := loader.Open(path, o)
	if err != nil {
		if v := os.Getenv("FASTER_REQUIRE_GPU"); v != "" && v != "0" {
			t.Fatalf("FASTER_REQUIRE_GPU=1: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	return l
}

// TestGPUStageMatchesCPU: the stage's rows against the CPU path's with
// FullDecode, the same keys in the same order. Tolerance (uint8 HWC):
// at most 12 levels on any byte and 1.0 level on average per row, from
// nvJPEG's IDCT and colour conversion against libjpeg-turbo's (the
// resample is bit-exact on the same pixels: kernels' tests); the float32
// rows hold the same bytes normalised (checked through the table).
func TestGPUStageMatchesCPU(t *testing.T) {
	dir, cpuFiles := photoFolder(t)
	for _, layout := range []loader.Layout{loader.U8HWC, loader.F32CHW} {
		o := loader.Options{Resolution: 224, Batch: 8, Seed: 7, FullDecode: true, Layout: layout, Workers: 4}
		gl := openGPU(t, dir, o)
		cl, err := loader.Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		st := gl.BatchDecoder().(*Stage)
		for e := range 2 {
			want := map[string][]byte{}
			var order []string
			for b, err := range cl.IterEpoch(context.Background(), e) {
				if err != nil {
					t.Fatal(err)
				}
				for i := range b.Valid {
					want[b.Items[i].Key] = append([]byte(nil), b.Row(i)...)
					order = append(order, b.Items[i].Key)
				}
				b.Release()
			}
			start := time.Now()
			var got []string
			worst, sum, n, fallback := 0.0, 0.0, 0, 0
			for b, err := range gl.IterStaged(context.Background(), e) {
				if err != nil {
					t.Fatal(err)
				}
				host := make([]byte, len(b.Items)*b.RowBytes)
				if err := st.Decoder().Download(host, b.Buffer.(*DeviceBuffer).b, 0); err != nil {
					t.Fatal(err)
				}
				fallback += b.Fallback
				for i := range b.Valid {
					k := b.Items[i].Key
					got = append(got, k)
					w, m := diff(host[i*b.RowBytes:(i+1)*b.RowBytes], want[k], layout, o)
					worst, sum, n = math.Max(worst, w), sum+m, n+1
				}
				b.Release()
			}
			ms := float64(time.Since(start).Microseconds()) / 1000
			size := fmt.Sprintf("%s epoch %d, %d images", layout, e, n)
			row(t, "order", size, ms, fmt.Sprintf("%d keys, same order: %v", len(got), strings.Join(got, ",") == strings.Join(order, ",")),
				strings.Join(got, ",") == strings.Join(order, ","))
			row(t, "pixels", size, ms, fmt.Sprintf("max %.2f levels, mean %.3f", worst, sum/float64(max(n, 1))), worst <= 12 && sum/float64(max(n, 1)) <= 1.0)
			row(t, "fallback", size, 0, fmt.Sprintf("%d rows to the CPU, want %d", fallback, cpuFiles), fallback == cpuFiles)
		}
		if err := gl.Close(); err != nil {
			t.Fatal(err)
		}
		row(t, "buffers", string(layout), 0, fmt.Sprintf("%d live after Close", st.Decoder().Live()), st.Decoder().Live() == 0)
		cl.Close()
	}
}

// diff is the largest and the mean absolute difference of two rows, in
// uint8 levels (float32 rows: through the normalisation, x*std*255).
func diff(a, b []byte, layout loader.Layout, o loader.Options) (worst, mean float64) {
	if layout == loader.U8HWC {
		for i := range a {
			d := math.Abs(float64(a[i]) - float64(b[i]))
			worst, mean = math.Max(worst, d), mean+d
		}
		return worst, mean / float64(len(a))
	}
	fa, fb := pipeline.Float32s(a), pipeline.Float32s(b)
	plane := len(fa) / 3
	std := o.Std
	if std == ([3]float32{}) {
		std = [3]float32{0.229, 0.224, 0.225}
	}
	for i := range fa {
		d := math.Abs(float64(fa[i]-fb[i])) * float64(std[i/plane]) * 255
		worst, mean = math.Max(worst, d), mean+d
	}
	return worst, mean / float64(len(fa))
}

// TestGPUStageRate: images/s of the stage on the photographs (train
// recipe at 224, batch 64, u8-hwc), beside the CPU path's at the same
// workers in the same run. A measurement for the report, not a verdict.
func TestGPUStageRate(t *testing.T) {
	dir, _ := photoFolder(t)
	o := loader.Options{Resolution: 224, Batch: 64, Seed: 1, Layout: loader.U8HWC, Workers: 4}
	gl := openGPU(t, dir, o)
	defer gl.Close()
	cl, err := loader.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rate := func(run func(e int) int) float64 {
		run(0) // warm: NVRTC, nvJPEG's buffers, the page cache
		start, n := time.Now(), 0
		for e := 1; e < 4; e++ {
			n += run(e)
		}
		return float64(n) / time.Since(start).Seconds()
	}
	g := rate(func(e int) int {
		n := 0
		for b, err := range gl.IterStaged(context.Background(), e) {
			if err != nil {
				t.Fatal(err)
			}
			n += b.Valid
			b.Release()
		}
		return n
	})
	c := rate(func(e int) int {
		n := 0
		for b, err := range cl.IterEpoch(context.Background(), e) {
			if err != nil {
				t.Fatal(err)
			}
			n += b.Valid
			b.Release()
		}
		return n
	})
	row(t, "rate", "train 224 u8-hwc, 4 workers", 0, fmt.Sprintf("gpu %.0f images/s, cpu %.0f images/s", g, c), true)
}
