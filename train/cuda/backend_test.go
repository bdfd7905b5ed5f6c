//go:build cgo

package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
	"github.com/faster-training/faster/train/traintest"
)

// twinBackend opens the backend over the CPU twin for one test; its Cleanup
// checks that every op and state released its memory before the backend
// closes (the ops' Close and State.Release free what they own).
func twinBackend(t *testing.T) *Backend {
	t.Helper()
	b, err := OpenTwin(train.BackendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.(*Backend)
}

func TestTwinLayers(t *testing.T)    { traintest.RunLayers(t, twinBackend(t)) }
func TestTwinTorchStep(t *testing.T) { traintest.RunTorchStep(t, twinBackend(t)) }
func TestTwinResNet18(t *testing.T)  { traintest.RunResNet18(t, twinBackend(t)) }

// RunPrecision on the twin: its convolutions write 16-bit outputs (as
// cuDNN's legacy API), checked against the reference's rounded to the
// precision.
func TestTwinPrecision(t *testing.T) {
	traintest.RunPrecision(t, func(o train.BackendOptions) (train.Backend, error) { return OpenTwin(o) })
}

func TestTwinNames(t *testing.T) {
	b := twinBackend(t)
	if b.Name() != "cuda" || train.DeviceOf(b) != "cuda-twin" {
		t.Errorf("twin: name %q device %q, want cuda, cuda-twin", b.Name(), train.DeviceOf(b))
	}
	if p, native := b.Precision(); p != train.Float32 || !native {
		t.Errorf("precision %v native %v, want fp32 native", p, native)
	}
	if c := b.TuneChoices(); len(c) != 0 {
		t.Errorf("the twin made tuning choices: %+v", c)
	}
	n, ok, err := train.MemoryBudget(b)
	if err != nil || !ok || n != twinMemory-memoryReserve {
		t.Errorf("memory budget %d %v %v, want %d", n, ok, err, twinMemory-memoryReserve)
	}
}

// Device option parsing, and what the backend refuses by name.
func TestParseDevice(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{{"", 0, true}, {"cuda", 0, true}, {"cuda:0", 0, true}, {"cuda:3", 3, true},
		{"cpu", 0, false}, {"cuda:", 0, false}, {"cuda:-1", 0, false}, {"cuda:01", 0, false}, {"cuda:x", 0, false}, {"gpu:0", 0, false}} {
		n, err := ParseDevice(c.in)
		if c.ok && (err != nil || n != c.want) {
			t.Errorf("ParseDevice(%q) = %d, %v; want %d", c.in, n, err, c.want)
		}
		if !c.ok && !errors.Is(err, train.ErrDevice) {
			t.Errorf("ParseDevice(%q) = %d, %v; want ErrDevice", c.in, n, err)
		}
	}
	if _, err := train.Open("cuda", train.BackendOptions{Device: "cpu"}); !errors.Is(err, train.ErrDevice) {
		t.Errorf("Open(cuda, cpu): %v, want ErrDevice", err)
	}
	if _, err := OpenTwin(train.BackendOptions{Precision: 7}); !errors.Is(err, train.ErrUnsupported) || !strings.Contains(err.Error(), "Precision(7)") {
		t.Errorf("OpenTwin(Precision(7)): %v, want ErrUnsupported naming it", err)
	}
}

// On a machine without a driver, Open("cuda") fails with the LoadError
// naming the driver's soname.
func TestOpenBackendWithoutDriver(t *testing.T) {
	b, err := train.Open("cuda", train.BackendOptions{})
	if err == nil {
		b.Close()
		t.Skip("this machine has a driver")
	}
	var le *LoadError
	if !errors.As(err, &le) || !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Fatalf("Open(cuda) without a driver: %v, want a *LoadError naming libcuda.so.1", err)
	}
}

// TestRunRefusesMisaligned: the backend refuses to launch a kernel with a
// pointer off its element's size (a GPU faults and loses the context),
// on the twin as it would on the GPU.
func TestRunRefusesMisaligned(t *testing.T) {
	b := twinBackend(t)
	rows, err := b.m.alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := b.m.alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer b.m.free(rows)
	defer b.m.free(sums)
	err = b.run("ce_sums", kernels.Single, 1, 1, rows, i32(1), sums+4)
	if err == nil || !strings.Contains(err.Error(), "not 8-byte aligned") || !strings.Contains(err.Error(), "ce_sums") {
		t.Fatalf("ce_sums with its double *sums at +4: %v, want it refused", err)
	}
	if err := b.run("ce_sums", kernels.Single, 1, 1, rows, i32(1), sums+8); err != nil {
		t.Fatalf("ce_sums with its sums aligned: %v", err)
	}
}

// TestTwinFences: the twin's allocations are fenced, so a kernel, a
// convolution or a product that writes past a buffer (on the GPU another
// buffer's bytes, or an illegal address) fails the call, naming it and
// the byte; a write that stays inside passes.
func TestTwinFences(t *testing.T) {
	b := twinBackend(t)
	buf := func(bytes int) uint64 {
		p, err := b.m.alloc(bytes)
		if err != nil {
			t.Fatal(err)
		}
		if p%256 != 0 {
			t.Errorf("allocation at %#x: not 256-byte aligned, as cuMemAlloc's", p)
		}
		t.Cleanup(func() { b.m.free(p) })
		return p
	}
	v := buf(64)
	one := kernels.Launch{Grid: 1, Block: 32}
	if err := b.m.launch("fill_f32", one, v, 16, f32(1)); err != nil {
		t.Fatalf("fill_f32 of 16 floats into 64 bytes: %v", err)
	}
	for _, c := range []struct {
		off   int64
		n     int
		wants string
	}{
		{0, 17, "byte 64 of it"}, // one float past the end
		{-4, 1, "byte -4 of it"}, // one before the start
	} {
		err := b.m.launch("fill_f32", one, uint64(int64(v)+c.off), uint64(c.n), f32(2))
		if err == nil || !strings.Contains(err.Error(), "kernel fill_f32 wrote outside a buffer of 64 bytes") || !strings.Contains(err.Error(), c.wants) {
			t.Errorf("fill_f32 of %d floats at %+d: %v, want the fence's %q", c.n, c.off, err, c.wants)
		}
		b.m.free(v) // the fence stays broken: a new buffer for the next
		v = buf(64)
	}
	// A convolution's output one element short: 1×1×4×4 input, 1 filter of 3×3, 2×2 output.
	x, w, y := buf(4*16), buf(4*9), buf(4*3)
	cs := &convShape{N: 1, C: 1, H: 4, W: 4, K: 1, R: 3, OH: 2, OW: 2, Stride: 1, Dtype: dtFloat}
	if err := b.m.conv(cs, convFwd, x, w, y); err == nil || !strings.Contains(err.Error(), "convolution") || !strings.Contains(err.Error(), "byte 12 of it") {
		t.Errorf("a convolution into 3 of its 4 outputs: %v, want the fence's", err)
	}
	b.m.free(y)
	g := gemmArgs{In: dtFloat, M: 2, N: 2, K: 2, Alpha: 1, A: buf(16), LDA: 2, B: buf(16), LDB: 2, C: buf(12), LDC: 2}
	if err := b.m.gemm(g); err == nil || !strings.Contains(err.Error(), "product 2×2×2 wrote outside a buffer of 12 bytes") {
		t.Errorf("a product into 3 of its 4 outputs: %v, want the fence's", err)
	}
}
