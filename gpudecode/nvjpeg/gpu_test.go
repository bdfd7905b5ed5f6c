//go:build cgo

package nvjpeg

// The decoder's GPU check, PREPARED and NOT YET RUN on a GPU: skipped
// without a driver, failed under FASTER_REQUIRE_GPU=1 (gpucheck.sh sets
// it). Each result is a line "GPUCHECK|…" gpucheck.sh prints as a table.

import (
	"image"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/train/cuda"
	ck "github.com/faster-training/faster/train/cuda/kernels"
)

// spinSource is a kernel that holds one SM for about cycles clock ticks.
const spinSource = `extern "C" __global__ void faster_spin(long long cycles) {
	long long t0 = clock64();
	while (clock64() - t0 < cycles) {
	}
}
`

// TestGPUStreamBesideLegacyStream: a batch is not held up by work on the
// legacy default stream. A kernel spinning for about a second on it (as
// a trainer's blocking stream's step would be) is launched first; the
// batch, on the decoder's non-blocking stream and ended by that stream's
// synchronisation, must return while it still spins. On the legacy
// stream, or ended by cudaDeviceSynchronize, it would wait for the spin.
// It also shows whether nvJPEG itself synchronises with the legacy
// stream or the device inside a batch.
func TestGPUStreamBesideLegacyStream(t *testing.T) {
	d, err := Open(Options{})
	if err != nil {
		if v := os.Getenv("FASTER_REQUIRE_GPU"); v != "" && v != "0" {
			t.Fatalf("FASTER_REQUIRE_GPU=1: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	defer d.Close()
	m, err := d.dev.Compile(spinSource)
	if err != nil {
		t.Fatal(err)
	}
	spin, err := m.Function("faster_spin")
	if err != nil {
		t.Fatal(err)
	}
	td := os.Getenv("FASTER_TESTDATA")
	if td == "" {
		td = filepath.Join("..", "..", "imgcodec", "testdata")
	}
	var jobs []Job
	for k, f := range []string{"ycc420.jpg", "progressive.jpg", "ycc420.jpg", "progressive.jpg"} {
		data, err := os.ReadFile(filepath.Join(td, f))
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, Job{Data: data, Crop: image.Rect(8*k, 4*k, 8*k+200, 4*k+160), ResizeW: 256, ResizeH: 224,
			View: image.Rect(16, 0, 240, 224), Flip: k%2 == 1, Filter: augment.Triangle, Dst: int64(k * 224 * 224 * 3)})
	}
	buf, err := d.Alloc(len(jobs) * 224 * 224 * 3)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(buf)
	rows := Rows{W: 224, H: 224}
	// Warm: nvJPEG's buffers and the decoder's scratch grow here, not
	// under the spin (cudaFree may wait for the device).
	if _, err := d.DecodeBatch(jobs, buf, rows); err != nil {
		t.Fatal(err)
	}
	const cycles = 2_000_000_000 // about a second at 1.5 to 2 GHz
	one := ck.Launch{Grid: 1, Block: 1}
	start := time.Now()
	if err := spin.LaunchOn(nil, one, cuda.I64(cycles)); err != nil {
		t.Fatal(err)
	}
	if err := d.dev.Sync(); err != nil {
		t.Fatal(err)
	}
	spinMs := float64(time.Since(start).Microseconds()) / 1000

	start = time.Now()
	if err := spin.LaunchOn(nil, one, cuda.I64(cycles)); err != nil {
		t.Fatal(err)
	}
	res, err := d.DecodeBatch(jobs, buf, rows)
	if err != nil {
		t.Fatal(err)
	}
	batchMs := float64(time.Since(start).Microseconds()) / 1000
	if err := d.dev.Sync(); err != nil {
		t.Fatal(err)
	}
	// A figure, not a verdict (no timing decides a test): "waited" says
	// the batch did not run beside the spin — our stream's flags, or a
	// call inside nvJPEG on the legacy stream (internal buffers grown
	// with cudaFree/cudaFreeHost would do it).
	verdict := "beside"
	if batchMs >= spinMs/2 {
		verdict = "waited"
	}
	t.Logf("GPUCHECK|stream|%d images (%d hardware, %d hybrid)|%.3f|batch %.1f ms beside a %.1f ms spin on the legacy stream|%s",
		len(jobs), res.Count(Hardware), res.Count(Hybrid), batchMs, batchMs, spinMs, verdict)
}
