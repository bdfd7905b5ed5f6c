//go:build cgo

package cuda

import (
	"context"
	"errors"
	"iter"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/faster-training/faster/train"
)

// twinRows serves images' epochs in the trainer's order as DeviceRows in
// memory of a producer (another twin, or the GPU: a decode stage's ring
// of three buffers), U8 H×W×C or F32 C×H×W; a buffer given back is
// poisoned.
type twinRows struct {
	tr   *train.Trainer
	d    *train.Images
	prod machine
	dev  string
	bufs []uint64
	free []uint64
	size int
	f32  bool
	mu   sync.Mutex // free and out: Done runs on the step's goroutine under capture
	out  int
}

func newTwinRows(t *testing.T, tr *train.Trainer, d *train.Images, f32 bool) *twinRows {
	p, err := OpenTwin(train.BackendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pb := p.(*Backend)
	t.Cleanup(func() { pb.Close() })
	return newRows(t, tr, d, f32, pb.m)
}

// newRows is twinRows with buffers of producer prod.
func newRows(t *testing.T, tr *train.Trainer, d *train.Images, f32 bool, prod machine) *twinRows {
	s := &twinRows{tr: tr, d: d, prod: prod, dev: prod.device(), f32: f32, size: tr.Batch * d.C * d.H * d.W * 4}
	for range 3 {
		a, err := s.prod.alloc(s.size)
		if err != nil {
			t.Fatal(err)
		}
		s.bufs = append(s.bufs, a)
	}
	s.free = slices.Clone(s.bufs)
	t.Cleanup(func() {
		for _, a := range s.bufs {
			prod.free(a)
		}
	})
	return s
}

func (s *twinRows) Shape() (c, h, w int) { return s.d.Shape() }
func (s *twinRows) Len() int             { return s.Steps() * s.tr.Batch }
func (s *twinRows) Steps() int           { return s.d.Len() / s.tr.Batch }

func (s *twinRows) Epoch(ctx context.Context, e, skip int) iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		c, h, w := s.d.Shape()
		per := c * h * w
		n := s.tr.Batch
		order := s.tr.Order(s.d.Len(), e)
		x, y := make([]float32, n*per), make([]int, n)
		nhwc := make([]byte, n*per)
		for k := skip; k < s.Steps(); k++ {
			idx := order[k*n : (k+1)*n]
			s.d.Fill(idx, x, y)
			s.mu.Lock()
			if len(s.free) == 0 {
				s.mu.Unlock()
				yield(train.Batch{}, errors.New("twin rows: every buffer is out"))
				return
			}
			a := s.free[0]
			s.free = s.free[1:]
			s.out++
			s.mu.Unlock()
			rows := &train.DeviceRows{Device: s.dev, Ptr: a, N: n, C: c, H: h, W: w, Mean: []float32{s.d.Mean}, Std: []float32{s.d.Std}}
			if s.f32 {
				rows.RowBytes = 4 * per
				if err := s.prod.copyIn(a, unsafe.Pointer(&x[0]), 4*len(x)); err != nil {
					yield(train.Batch{}, err)
					return
				}
			} else {
				for j, i := range idx { // one channel: H×W×C is C×H×W
					copy(nhwc[j*per:(j+1)*per], s.d.Pixels[i*per:(i+1)*per])
				}
				rows.U8, rows.RowBytes = true, per
				if err := s.prod.copyIn(a, unsafe.Pointer(&nhwc[0]), len(nhwc)); err != nil {
					yield(train.Batch{}, err)
					return
				}
			}
			rows.Done = func() {
				poison := slices.Repeat([]byte{0xff}, s.size)
				s.prod.copyIn(a, unsafe.Pointer(&poison[0]), s.size)
				s.mu.Lock()
				s.free = append(s.free, a)
				s.out--
				s.mu.Unlock()
			}
			if !yield(train.Batch{Y: slices.Clone(y), Rows: rows}, nil) {
				return
			}
		}
	}
}

// Rows in device memory (a decode stage's batches) train on the twin to
// the bits of the same batches as host floats: U8 rows normalised in
// place by normalize_u8, F32 rows copied device to device, with the
// feeder's overlap, without, and with the step captured (the rows read
// before the captured region); every buffer is given back.
func TestTwinDeviceRows(t *testing.T) {
	run := func(t *testing.T, rows, f32 bool, setup func(*train.Trainer)) ([][]float32, []float64) {
		b, err := OpenTwin(train.BackendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.(*Backend).Close()
		var tw *twinRows
		var stream func(*train.Trainer, *train.Images) train.Stream
		if rows {
			stream = func(tr *train.Trainer, d *train.Images) train.Stream {
				tw = newTwinRows(t, tr, d, f32)
				return tw
			}
		}
		o := trainRunStream(t, b, 2, "", "", setup, stream)
		if tw != nil && tw.out != 0 {
			t.Errorf("%d buffers never given back", tw.out)
		}
		return o.weights, o.losses
	}
	want, wantLoss := run(t, false, false, nil)
	for _, c := range []struct {
		name          string
		f32           bool
		capture, noOv bool
	}{{"u8", false, false, false}, {"f32", true, false, false}, {"u8 no overlap", false, false, true},
		{"u8 captured", false, true, false}, {"f32 captured", true, true, false}} {
		t.Run(c.name, func(t *testing.T) {
			got, loss := run(t, true, c.f32, func(tr *train.Trainer) { tr.CaptureStep, tr.NoOverlap = c.capture, c.noOv })
			for i := range want {
				for j := range want[i] {
					if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
						t.Fatalf("tensor %d element %d: %g, want %g (host floats)", i, j, got[i][j], want[i][j])
					}
				}
			}
			if !slices.Equal(loss, wantLoss) {
				t.Errorf("losses %v, want %v", loss, wantLoss)
			}
		})
	}
}

// Load refuses rows of another device, a range outside the batch, a
// tensor of another shape and rows whose size does not match their
// format, naming what is wrong; and a captured step refuses the copy and
// the wait it needs (the trainer reads rows before the step).
func TestTwinDeviceRowsRefused(t *testing.T) {
	b, err := OpenTwin(train.BackendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	be := b.(*Backend)
	defer be.Close()
	op, err := be.NewDeviceInput()
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	dst, err := be.NewTensor(2, 3, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Release()
	src, err := be.m.alloc(4 * 4 * 4 * 3 * 4)
	if err != nil {
		t.Fatal(err)
	}
	good := train.DeviceRows{Device: "cuda-twin", Ptr: src, N: 4, C: 3, H: 4, W: 4, RowBytes: 4 * 48}
	if err := op.Load(dst, good, 1, 3); err != nil {
		t.Fatalf("good rows: %v", err)
	}
	for _, c := range []struct {
		r      func(train.DeviceRows) train.DeviceRows
		lo, hi int
		want   string
	}{
		{func(r train.DeviceRows) train.DeviceRows { r.Device = "cuda:0"; return r }, 0, 2, "rows on cuda:0, backend on cuda-twin"},
		{func(r train.DeviceRows) train.DeviceRows { return r }, 3, 5, "rows [3, 5) of 4"},
		{func(r train.DeviceRows) train.DeviceRows { return r }, 0, 3, "3 rows of 3×4×4 into [2 3 4 4]"},
		{func(r train.DeviceRows) train.DeviceRows { r.RowBytes = 48; return r }, 0, 2, "F32 rows of 48 bytes"},
		{func(r train.DeviceRows) train.DeviceRows { r.U8 = true; return r }, 0, 2, "U8 rows of 192 bytes"},
	} {
		err := op.Load(dst, c.r(good), c.lo, c.hi)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want an error naming %q", err, c.want)
		}
	}
	w := &recorder{machine: be.m, mode: recCapture}
	if err := w.copyDev(src, src, 8); err == nil || !strings.Contains(err.Error(), "inside a captured step") {
		t.Errorf("copyDev in a captured step: %v", err)
	}
	if err := w.fence(); !errors.Is(err, errHostRead) {
		t.Errorf("fence in a captured step: %v", err)
	}
}
