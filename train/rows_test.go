package train_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/faster-training/faster/train"
)

// fakeMem is device memory for the tests of DeviceRows: buffers at made-up
// addresses, a ring of them as a batch decoder keeps, each poisoned when
// given back so that a read after Done changes the run's bits.
type fakeMem struct {
	mu     sync.Mutex
	bufs   map[uint64][]byte
	free   []uint64
	out    int // rows handed out and not given back
	reused int // a buffer asked for while none was free
}

func newFakeMem(n, size int) *fakeMem {
	m := &fakeMem{bufs: map[uint64][]byte{}}
	for i := range n {
		a := uint64(0x10000 * (i + 1))
		m.bufs[a] = make([]byte, size)
		m.free = append(m.free, a)
	}
	return m
}

func (m *fakeMem) get() (uint64, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.free) == 0 {
		m.reused++
		return 0, nil, errors.New("fake ring: every buffer is out (rows read and never given back)")
	}
	a := m.free[0]
	m.free = m.free[1:]
	m.out++
	return a, m.bufs[a], nil
}

func (m *fakeMem) put(a uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.bufs[a] {
		m.bufs[a][i] = 0xff
	}
	m.free = append(m.free, a)
	m.out--
}

func (m *fakeMem) bytes(a uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bufs[a]
}

// rowsRef is DeviceReference reading DeviceRows from a fakeMem.
type rowsRef struct {
	*train.DeviceReference
	mem   *fakeMem
	loads int
}

func (r *rowsRef) NewDeviceInput() (train.DeviceInputOp, error) { return &fakeInput{r: r}, nil }

// capturingRowsRef is rowsRef as a StepCapturer (capturingRef's).
type capturingRowsRef struct {
	*rowsRef
	keys map[string]int
}

func (c *capturingRowsRef) RunStep(key string, step func() error) (train.StepRun, error) {
	c.keys[key]++
	return train.StepReplayed, step()
}

func (c *capturingRowsRef) ReleaseStep() {}

type fakeInput struct {
	r   *rowsRef
	buf []float32
}

func (f *fakeInput) Load(dst train.Tensor, r train.DeviceRows, lo, hi int) error {
	f.r.loads++
	src := f.r.mem.bytes(r.Ptr)
	per := r.C * r.H * r.W
	f.buf = slices.Grow(f.buf[:0], (hi-lo)*per)[:(hi-lo)*per]
	rows := src[lo*r.RowBytes : hi*r.RowBytes]
	if r.U8 {
		if err := train.NormalizeHWC(f.buf, train.ByteBatch{Pixels: rows, N: hi - lo, H: r.H, W: r.W, C: r.C, Mean: r.Mean, Std: r.Std}); err != nil {
			return err
		}
	} else {
		for i := range f.buf {
			f.buf[i] = math.Float32frombits(binary.LittleEndian.Uint32(rows[4*i:]))
		}
	}
	return dst.Write(f.buf)
}

func (f *fakeInput) Close() {}

// rowsStream serves byteStream's batches as DeviceRows in buffers of a
// fakeMem, as U8 H×W×C bytes or F32 C×H×W floats.
type rowsStream struct {
	byteStream
	mem  *fakeMem
	dev  string
	f32  bool
	errs []error
}

func (s *rowsStream) Epoch(ctx context.Context, e, skip int) iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		c, h, w := s.d.Shape()
		for b := range s.byteStream.Epoch(ctx, e, skip) {
			a, buf, err := s.mem.get()
			if err != nil {
				yield(train.Batch{}, err)
				return
			}
			rows := &train.DeviceRows{Device: s.dev, Ptr: a, N: b.Bytes.N, C: c, H: h, W: w, Mean: b.Bytes.Mean, Std: b.Bytes.Std}
			if s.f32 {
				x := make([]float32, len(b.Bytes.Pixels))
				if err := train.NormalizeHWC(x, b.Bytes); err != nil {
					yield(train.Batch{}, err)
					return
				}
				for i, v := range x {
					binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
				}
				rows.RowBytes = 4 * c * h * w
			} else {
				copy(buf, b.Bytes.Pixels)
				rows.U8, rows.RowBytes = true, c*h*w
			}
			rows.Done = func() { s.mem.put(a) }
			if !yield(train.Batch{Y: b.Y, Rows: rows}, nil) {
				return
			}
		}
	}
}

// threeTrainer is a trainer of the three-channel toy ThinNet on b (SGD
// with momentum 0.9 at rate 0.05, batch 16, seed 3); both are closed when
// the test ends.
func threeTrainer(t *testing.T, b train.Backend) (*train.Trainer, *train.Sequential) {
	t.Helper()
	net3 := toyNet
	net3.InChannels = 3
	net, err := train.NewThinNet(b, net3, 5)
	if err != nil {
		t.Fatal(err)
	}
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.05), 16, 3)
	t.Cleanup(func() { tr.Close(); net.Close() })
	return tr, net
}

// trainThree trains the three-channel toy ThinNet on b (with a replica
// when not nil) for two epochs of the stream stream makes, setup applied
// to the trainer first, and returns its weights.
func trainThree(t *testing.T, b, replica train.Backend, setup func(*train.Trainer), stream func(*train.Trainer) train.Stream, onStep func(train.StepResult) error) ([][]float32, error) {
	t.Helper()
	tr, net := threeTrainer(t, b)
	if replica != nil {
		net3 := toyNet
		net3.InChannels = 3
		rn, err := train.NewThinNet(replica, net3, 5)
		if err != nil {
			t.Fatal(err)
		}
		defer rn.Close()
		if err := tr.AddReplica(replica, rn); err != nil {
			t.Fatal(err)
		}
	}
	if setup != nil {
		setup(tr)
	}
	for range 2 {
		if _, err := tr.TrainStream(context.Background(), stream(tr), onStep); err != nil {
			return nil, err
		}
	}
	return weights(net), nil
}

// Batches whose rows are in device memory (DeviceRows: a GPU decode
// stage's) train to the bits of the same batches as host bytes, with the
// feeder's overlap and without, with the step captured, in U8 and F32
// rows, and over data-parallel replicas (each reading its rows); every
// batch's rows are given back, each before its buffer is needed again (a
// ring of three), and never read after (the ring poisons them).
func TestDeviceRows(t *testing.T) {
	d, nhwc := byteData(96)
	o := train.BackendOptions{Threads: 1}
	trainOn := func(b, replica train.Backend, setup func(*train.Trainer), stream func(*train.Trainer) train.Stream, onStep func(train.StepResult) error) ([][]float32, error) {
		return trainThree(t, b, replica, setup, stream, onStep)
	}
	bytes := func(tr *train.Trainer) train.Stream { return &byteStream{tr: tr, d: d, nhwc: nhwc} }
	want, err := trainOn(train.NewDeviceReference(o), nil, nil, bytes, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantDP, err := trainOn(train.NewDeviceReference(o), train.NewDeviceReference(o), nil, bytes, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name               string
		f32, noOverlap, dp bool
		capture            bool
	}{
		{name: "u8"}, {name: "f32", f32: true}, {name: "u8 no overlap", noOverlap: true},
		{name: "u8 captured", capture: true}, {name: "f32 captured no overlap", f32: true, capture: true, noOverlap: true},
		{name: "u8 dp", dp: true}, {name: "f32 dp", f32: true, dp: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := newFakeMem(3, 16*12*12*3*4)
			ref := &rowsRef{DeviceReference: train.NewDeviceReference(o), mem: mem}
			var b train.Backend = ref
			var capt *capturingRowsRef
			if c.capture {
				capt = &capturingRowsRef{rowsRef: ref, keys: map[string]int{}}
				b = capt
			}
			var replica *rowsRef
			var rb train.Backend
			if c.dp {
				replica = &rowsRef{DeviceReference: train.NewDeviceReference(o), mem: mem}
				rb = replica
			}
			var streams []*rowsStream
			got, err := trainOn(b, rb, func(tr *train.Trainer) { tr.NoOverlap, tr.CaptureStep = c.noOverlap, c.capture },
				func(tr *train.Trainer) train.Stream {
					s := &rowsStream{byteStream: byteStream{tr: tr, d: d, nhwc: nhwc}, mem: mem, dev: "reference-device", f32: c.f32}
					streams = append(streams, s)
					return s
				}, nil)
			if err != nil {
				t.Fatal(err)
			}
			w := want
			if c.dp {
				w = wantDP
			}
			sameBits(t, "weights", got, w) // F32 rows: normalised by the stream with the same arithmetic
			if mem.out != 0 || mem.reused != 0 {
				t.Errorf("rows out at the end: %d (want 0); buffers asked for while none was free: %d", mem.out, mem.reused)
			}
			loads := ref.loads
			if replica != nil {
				loads += replica.loads
			}
			wantLoads := 2 * 96 / 16
			if c.dp {
				wantLoads *= 2
			}
			if loads != wantLoads {
				t.Errorf("%d loads of rows, want %d (one per step per device)", loads, wantLoads)
			}
			if capt != nil && len(capt.keys) != 1 {
				t.Errorf("captured under keys %v: want one", capt.keys)
			}
		})
	}

	// A run that stops early (ErrStop, an error from onStep) gives back
	// the rows the feeder had taken for the steps that never ran.
	for _, capture := range []bool{false, true} {
		for _, stop := range []error{train.ErrStop, errors.New("callback failed")} {
			mem := newFakeMem(3, 16*12*12*3)
			ref := &rowsRef{DeviceReference: train.NewDeviceReference(o), mem: mem}
			var b train.Backend = ref
			if capture {
				b = &capturingRowsRef{rowsRef: ref, keys: map[string]int{}}
			}
			_, err := trainOn(b, nil, func(tr *train.Trainer) { tr.CaptureStep = capture },
				func(tr *train.Trainer) train.Stream {
					return &rowsStream{byteStream: byteStream{tr: tr, d: d, nhwc: nhwc}, mem: mem, dev: "reference-device"}
				}, func(s train.StepResult) error {
					if s.Step == 2 {
						return stop
					}
					return nil
				})
			if stop != train.ErrStop && !errors.Is(err, stop) {
				t.Errorf("capture %v: %v, want the callback's error", capture, err)
			}
			if mem.out != 0 {
				t.Errorf("capture %v, stop %v: %d rows never given back", capture, stop, mem.out)
			}
		}
	}
}

// Rows a backend cannot read — a host backend, or a device backend on
// another device — stop the run with ErrDeviceRows naming both devices,
// and are given back.
func TestDeviceRowsRefused(t *testing.T) {
	d, nhwc := byteData(96)
	net3 := toyNet
	net3.InChannels = 3
	o := train.BackendOptions{Threads: 1}
	for _, c := range []struct {
		b    train.Backend
		dev  string
		want string
	}{
		{train.NewReference(o), "cuda:0", "rows on cuda:0, backend reference on cpu"},
		{&rowsRef{DeviceReference: train.NewDeviceReference(o)}, "cuda:1", "rows on cuda:1, backend reference-device on reference-device"},
	} {
		mem := newFakeMem(3, 16*12*12*3)
		if r, ok := c.b.(*rowsRef); ok {
			r.mem = mem
		}
		net, err := train.NewThinNet(c.b, net3, 5)
		if err != nil {
			t.Fatal(err)
		}
		tr := train.NewTrainer(c.b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.05), 16, 3)
		_, err = tr.TrainStream(context.Background(), &rowsStream{byteStream: byteStream{tr: tr, d: d, nhwc: nhwc}, mem: mem, dev: c.dev}, nil)
		tr.Close()
		net.Close()
		if !errors.Is(err, train.ErrDeviceRows) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%s: %v, want ErrDeviceRows naming %q", c.b.Name(), err, c.want)
		}
		if mem.out != 0 {
			t.Errorf("%s: %d rows never given back", c.b.Name(), mem.out)
		}
	}
}

// Rows in device memory given to evaluation or BatchNorm recalibration
// (which take batches in host memory) are refused with ErrDeviceRows
// naming their device, on the host path and on a device state, and given
// back to their producer.
func TestDeviceRowsRefusedOutsideSteps(t *testing.T) {
	d, nhwc := byteData(32)
	o := train.BackendOptions{Threads: 1}
	for _, b := range []train.Backend{train.NewReference(o), train.NewDeviceReference(o)} {
		tr, _ := threeTrainer(t, b)
		mem := newFakeMem(2, 16*3*12*12)
		s := &rowsStream{byteStream: byteStream{tr: tr, d: d, nhwc: nhwc}, mem: mem, dev: "elsewhere:3"}
		ctx := context.Background()
		_, evalErr := tr.EvaluateStream(ctx, s, 0)
		_, calErr := tr.RecalibrateBN(ctx, s, 0, 0)
		for what, err := range map[string]error{"evaluation": evalErr, "recalibration": calErr} {
			if !errors.Is(err, train.ErrDeviceRows) || !strings.Contains(err.Error(), "elsewhere:3") {
				t.Errorf("%s: %s over device rows: %v, want ErrDeviceRows naming elsewhere:3", b.Name(), what, err)
			}
		}
		if mem.out != 0 {
			t.Errorf("%s: %d batches of rows never given back", b.Name(), mem.out)
		}
	}
}
