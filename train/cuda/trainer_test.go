//go:build cgo

package cuda

import (
	"context"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/traintest"
)

// images is a small fixed-seed dataset for traintest.SmallThinNet (one
// channel, 10 classes): each class brightens its own band of rows.
func images(n int, seed uint64) *train.Images {
	rng := rand.New(rand.NewPCG(seed, 1))
	const h, w = 10, 10
	d := &train.Images{C: 1, H: h, W: w, Mean: 0.3, Std: 0.3, Pixels: make([]byte, n*h*w), Labels: make([]int, n)}
	for i := range n {
		k := rng.IntN(10)
		d.Labels[i] = k
		for y := range h {
			for x := range w {
				v := rng.IntN(80)
				if y == k {
					v += 150
				}
				d.Pixels[(i*h+y)*w+x] = byte(v)
			}
		}
	}
	return d
}

// outcome is what a run leaves: weights and buffers, momentum, average,
// the losses of each step.
type outcome struct {
	weights, velocity, ema [][]float32
	losses                 []float64
	bound                  bool // the params were bound to a device state during the steps
	skipped                int  // steps the GradScaler skipped
}

// trainRun trains SmallThinNet on b for epochs epochs (momentum, weight
// decay, EMA), from checkpoint from when not "", saving to save when not "".
func trainRun(t *testing.T, b train.Backend, epochs int, from, save string) outcome {
	t.Helper()
	return trainRunWith(t, b, epochs, from, save, nil)
}

// trainRunWith is trainRun with setup applied to the trainer first.
func trainRunWith(t *testing.T, b train.Backend, epochs int, from, save string, setup func(*train.Trainer)) outcome {
	t.Helper()
	return trainRunStream(t, b, epochs, from, save, setup, nil)
}

// trainRunStream is trainRunWith on the stream that stream makes of the
// data (nil: the trainer's own, TrainEpoch).
func trainRunStream(t *testing.T, b train.Backend, epochs int, from, save string, setup func(*train.Trainer), stream func(*train.Trainer, *train.Images) train.Stream) outcome {
	t.Helper()
	return trainNetRun(t, b, smallThin(false), epochs, from, save, setup, stream)
}

// trainNetRun is trainRunStream on build's network.
func trainNetRun(t *testing.T, b train.Backend, build netBuilder, epochs int, from, save string, setup func(*train.Trainer), stream func(*train.Trainer, *train.Images) train.Stream) outcome {
	t.Helper()
	net, err := build(b)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, WeightDecay: 1e-4}, train.Constant(0.05), 16, 3)
	defer tr.Close()
	tr.EMA = &train.EMA{Decay: 0.9}
	if setup != nil {
		setup(tr)
	}
	if from != "" {
		if err := tr.LoadCheckpoint(from); err != nil {
			t.Fatal(err)
		}
	}
	var o outcome
	onStep := func(s train.StepResult) error {
		v, _ := net.Params()[0].Tensors()
		o.bound = o.bound || v != nil
		o.losses = append(o.losses, s.Loss)
		return nil
	}
	d := images(64, 7)
	var s train.Stream = tr.StreamOf(d)
	if stream != nil {
		s = stream(tr, d)
	}
	for range epochs {
		if _, err := tr.TrainStream(context.Background(), s, onStep); err != nil {
			t.Fatal(err)
		}
	}
	if save != "" {
		if err := tr.SaveCheckpoint(save); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range append(net.Params(), net.Buffers()...) {
		o.weights = append(o.weights, slices.Clone(p.Value))
	}
	o.velocity = tr.Opt.Velocity
	if tr.EMA != nil {
		o.ema = tr.EMA.Values
	}
	if tr.Scaler != nil {
		o.skipped = tr.Scaler.Skipped
	}
	return o
}

// near reports the largest difference of got from want relative to each
// tensor's largest magnitude, failing beyond tol.
func near(t *testing.T, what string, got, want [][]float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tensors, want %d", what, len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s %d: %d values, want %d", what, i, len(got[i]), len(want[i]))
		}
		scale := 1e-3
		for _, v := range want[i] {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		for j := range want[i] {
			if d := math.Abs(float64(got[i][j]) - float64(want[i][j])); !(d <= tol*scale) {
				t.Fatalf("%s: tensor %d element %d is %g, want %g (tolerance %.1g of %.3g)", what, i, j, got[i][j], want[i][j], tol, scale)
			}
		}
	}
}

func nearLosses(t *testing.T, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d losses, want %d", len(got), len(want))
	}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= tol*math.Max(1, math.Abs(want[i]))) {
			t.Fatalf("step %d loss %.7f, reference %.7f (tolerance %.1g)", i+1, got[i], want[i], tol)
		}
	}
}

// trainTol bounds the twin's drift from the reference over 8 steps: the
// same formulas, summed in other orders (cuDNN's and the kernels' trees
// against the reference's loops) and SGD's fused multiply-adds.
const trainTol = 1e-4

// Eight fixed-seed steps of SmallThinNet through train.Trainer on the
// twin (every tensor on the device: State, fused SGD, EMA, loss) and on
// the reference backend (the host path) agree within trainTol.
func TestTwinTrainsLikeReference(t *testing.T) {
	got := trainRun(t, twinBackend(t), 2, "", "")
	want := trainRun(t, train.NewReference(train.BackendOptions{}), 2, "", "")
	if !got.bound {
		t.Fatal("the twin's parameters were never bound to a device state")
	}
	nearLosses(t, got.losses, want.losses, trainTol)
	near(t, "weights", got.weights, want.weights, trainTol)
	near(t, "momentum", got.velocity, want.velocity, trainTol)
	near(t, "EMA", got.ema, want.ema, trainTol)
	if got.losses[len(got.losses)-1] >= got.losses[0] {
		t.Errorf("the loss did not fall: %v", got.losses)
	}
}

// AMP: native fp16 with a GradScaler whose first scale overflows, so
// that the first steps are skipped on the device's finite check and the
// scale backs off, as on the reference. The reference emulates fp16 with
// float32 convolution outputs; the twin's are 16-bit (cuDNN's, as
// torch.autocast's), so the runs agree within ampTol, fp16's precision
// over 8 steps, rather than trainTol.
func TestTwinAMPLikeReference(t *testing.T) {
	amp := func(tr *train.Trainer) {
		tr.Scaler = train.NewGradScaler()
		tr.Scaler.Scale = 1e38
	}
	o := train.BackendOptions{Precision: train.Float16}
	b, err := OpenTwin(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got := trainRunWith(t, b, 2, "", "", amp)
	want := trainRunWith(t, train.NewReference(o), 2, "", "", amp)
	if got.skipped == 0 || got.skipped != want.skipped {
		t.Fatalf("skipped %d steps, the reference %d (want the same, more than 0)", got.skipped, want.skipped)
	}
	nearLosses(t, got.losses, want.losses, ampTol)
	near(t, "weights", got.weights, want.weights, ampTol)
	near(t, "momentum", got.velocity, want.velocity, ampTol)
}

// ampTol bounds native fp16's drift from the reference's emulation: a few
// of fp16's half-ulps (2^-11) through 8 steps.
const ampTol = 4e-3

// A checkpoint written on the twin resumes on the reference backend, and
// one written on the reference resumes on the twin: the next epoch's
// steps are those of the run that wrote it, continued.
func TestTwinCheckpointAcrossBackends(t *testing.T) {
	ref := func() train.Backend { return train.NewReference(train.BackendOptions{}) }
	for _, c := range []struct {
		name           string
		writer, reader func() train.Backend
	}{{"twin-to-reference", func() train.Backend { return twinBackend(t) }, ref}, {"reference-to-twin", ref, func() train.Backend { return twinBackend(t) }}} {
		t.Run(c.name, func(t *testing.T) {
			ck := t.TempDir() + "/ck"
			trainRun(t, c.writer(), 1, "", ck)
			whole := trainRun(t, c.writer(), 2, "", "")
			resumed := trainRun(t, c.reader(), 1, ck, "")
			nearLosses(t, resumed.losses, whole.losses[len(whole.losses)-len(resumed.losses):], trainTol)
			near(t, "weights", resumed.weights, whole.weights, trainTol)
			near(t, "momentum", resumed.velocity, whole.velocity, trainTol)
			near(t, "EMA", resumed.ema, whole.ema, trainTol)
		})
	}
}

// State's methods against the host's arithmetic on the same values:
// train.SGD.Step (momentum, weight decay, Nesterov), the GradScaler's
// unscale and finite check, the anomaly check's reduction, the EMA's
// update and swap, Pull and Push.
func TestTwinStateMatchesHost(t *testing.T) { stateMatchesHost(t, twinBackend) }

func stateMatchesHost(t *testing.T, open func(*testing.T) *Backend) {
	for _, opt := range []train.SGD{{Momentum: 0.9, WeightDecay: 1e-4}, {Momentum: 0.8, Nesterov: true}, {WeightDecay: 5e-4}} {
		t.Run(fmt.Sprintf("%+v", opt), func(t *testing.T) {
			b := open(t)
			rng := rand.New(rand.NewPCG(1, 2))
			mk := func(name string, n int, grad bool) *train.Param {
				p := &train.Param{Name: name, Shape: []int{n}, Value: make([]float32, n)}
				for i := range p.Value {
					p.Value[i] = float32(rng.NormFloat64())
				}
				if grad {
					p.Grad = make([]float32, n)
				}
				return p
			}
			params := []*train.Param{mk("a", 37, true), mk("b", 300, true), mk("c", 1, true)}
			buffers := []*train.Param{mk("m", 5, false)}
			host := make([]*train.Param, len(params))
			for i, p := range params {
				host[i] = &train.Param{Name: p.Name, Value: slices.Clone(p.Value), Grad: make([]float32, len(p.Grad))}
			}
			dopt, hopt := opt, opt
			st, err := b.NewState(params, buffers, &dopt, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Release()
			if v, g := st.Tensors(3); v == nil || g != nil {
				t.Fatalf("buffer's tensors %v %v, want a value and no gradient", v, g)
			}
			setGrads := func(scale float32) {
				for i, p := range host {
					for j := range p.Grad {
						p.Grad[j] = float32(rng.NormFloat64()) * scale
					}
					_, g := st.Tensors(i)
					if err := g.Write(p.Grad); err != nil {
						t.Fatal(err)
					}
				}
			}
			for step := range 3 {
				setGrads(4)
				finite, err := st.Unscale(0.25)
				if err != nil || !finite {
					t.Fatalf("step %d: Unscale: %v %v", step, finite, err)
				}
				for _, p := range host {
					for j := range p.Grad {
						p.Grad[j] *= 0.25
					}
				}
				if err := st.SGDStep(&dopt, 0.1); err != nil {
					t.Fatal(err)
				}
				hopt.Step(host, 0.1)
			}
			if err := st.Pull(&dopt, nil); err != nil {
				t.Fatal(err)
			}
			var got, want [][]float32
			for i := range host {
				got, want = append(got, params[i].Value), append(want, host[i].Value)
			}
			near(t, "weights after 3 steps", got, want, 1e-6)
			if (dopt.Velocity != nil) != (hopt.Velocity != nil) {
				t.Fatalf("momentum pulled: %v, host has one: %v", dopt.Velocity != nil, hopt.Velocity != nil)
			}
			if hopt.Velocity != nil {
				near(t, "momentum", dopt.Velocity, hopt.Velocity, 1e-6)
			}
			// A NaN gradient in b and an infinite value in c.
			_, g := st.Tensors(1)
			host[1].Grad[7] = float32(math.NaN())
			if err := g.Write(host[1].Grad); err != nil {
				t.Fatal(err)
			}
			if bad, err := st.NonFinite(false); err != nil || !slices.Equal(bad, []int{1}) {
				t.Errorf("NonFinite(gradients) = %v %v, want [1]", bad, err)
			}
			if finite, err := st.Unscale(1); err != nil || finite {
				t.Errorf("Unscale over a NaN: finite %v %v", finite, err)
			}
			v, _ := st.Tensors(2)
			if err := v.Write([]float32{float32(math.Inf(1))}); err != nil {
				t.Fatal(err)
			}
			if bad, err := st.NonFinite(true); err != nil || !slices.Equal(bad, []int{2}) {
				t.Errorf("NonFinite(values) = %v %v, want [2]", bad, err)
			}
			if err := v.Write([]float32{0.5}); err != nil {
				t.Fatal(err)
			}
			// The EMA: a copy first, then the average; the swap exchanges.
			e := &train.EMA{Decay: 0.9}
			if err := st.EMASwap(); err == nil {
				t.Error("EMASwap before an update: no error")
			}
			if err := st.EMAUpdate(0.9, true); err != nil {
				t.Fatal(err)
			}
			if err := st.Pull(&dopt, e); err != nil {
				t.Fatal(err)
			}
			before := [][]float32{}
			for _, p := range append(params, buffers...) {
				before = append(before, slices.Clone(p.Value))
			}
			near(t, "first EMA update", e.Values, before, 0)
			bump := make([]float32, 300)
			for i := range bump {
				bump[i] = before[1][i] + 1
			}
			v1, _ := st.Tensors(1)
			if err := v1.Write(bump); err != nil {
				t.Fatal(err)
			}
			if err := st.EMAUpdate(0.9, false); err != nil {
				t.Fatal(err)
			}
			if err := st.EMASwap(); err != nil {
				t.Fatal(err)
			}
			if err := st.Pull(&dopt, e); err != nil {
				t.Fatal(err)
			}
			avg := make([]float32, 300)
			for i := range avg {
				avg[i] = 0.9*before[1][i] + float32(1-0.9)*bump[i]
			}
			near(t, "averaged weights swapped in", [][]float32{params[1].Value}, [][]float32{avg}, 1e-6)
			near(t, "weights swapped out", [][]float32{e.Values[1]}, [][]float32{bump}, 0)
			// Push then Pull round-trips, and refuses a wrong length.
			params[0].Value[0] = 42
			if err := st.Push(&dopt, e); err != nil {
				t.Fatal(err)
			}
			params[0].Value[0] = 0
			if err := st.Pull(&dopt, e); err != nil || params[0].Value[0] != 42 {
				t.Errorf("Push then Pull: %g %v, want 42", params[0].Value[0], err)
			}
			params[2].Value = make([]float32, 2)
			if err := st.Push(&dopt, e); err == nil {
				t.Error("Push of a param of the wrong length: no error")
			}
		})
	}
}

// The loss op against train.CrossEntropy on the reference: the gradient
// (label smoothing, a loss scale), and the sums read once for two batches.
func TestTwinLoss(t *testing.T) { lossMatchesReference(t, twinBackend(t)) }

func lossMatchesReference(t *testing.T, b *Backend) {
	ref := train.NewReference(train.BackendOptions{})
	rng := rand.New(rand.NewPCG(4, 4))
	const n, k = 9, 12
	lo, err := b.NewLoss(train.LossSpec{LabelSmoothing: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	ce := train.NewCrossEntropy(ref)
	ce.LabelSmoothing, ce.GradScale = 0.1, 8
	defer ce.Close()
	var want train.LossSums
	for range 2 {
		x := make([]float32, n*k)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 3)
		}
		labels := make([]int, n)
		for i := range labels {
			labels[i] = rng.IntN(k)
		}
		xt, _ := b.NewTensor(n, k)
		defer xt.Release()
		rt, _ := ref.NewTensor(n, k)
		if err := xt.Write(x); err != nil {
			t.Fatal(err)
		}
		rt.Write(x)
		dl, err := lo.Forward(xt, labels, 8)
		if err != nil {
			t.Fatal(err)
		}
		r, rdl, err := ce.Forward(rt, labels, true)
		if err != nil {
			t.Fatal(err)
		}
		want.Add(train.LossSums{Loss: r.Loss * n, Top1: r.Correct1, Top5: r.Correct5, Samples: n})
		g, w := make([]float32, n*k), make([]float32, n*k)
		dl.Read(g)
		rdl.Read(w)
		near(t, "dlogits", [][]float32{g}, [][]float32{w}, 1e-5)
	}
	got, err := lo.Sums()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Loss-want.Loss) > 1e-4*want.Loss || got.Top1 != want.Top1 || got.Top5 != want.Top5 || got.Samples != want.Samples {
		t.Errorf("sums %+v, reference %+v", got, want)
	}
	if again, _ := lo.Sums(); again != (train.LossSums{}) {
		t.Errorf("sums after a read: %+v, want zero", again)
	}
	xt, _ := b.NewTensor(2, k)
	defer xt.Release()
	if _, err := lo.Forward(xt, []int{0, k}, 1); err == nil {
		t.Error("a label out of range: no error")
	}
}

// normalize_u8 on the twin gives train.NormalizeHWC's bits.
func TestTwinByteInput(t *testing.T) { byteInputMatchesHost(t, twinBackend(t)) }

func byteInputMatchesHost(t *testing.T, b *Backend) {
	in, err := b.NewByteInput()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for _, chw := range []bool{false, true} { // a decoder's HWC rows; Images' planes
		rng := rand.New(rand.NewPCG(5, 5))
		bb := train.ByteBatch{N: 3, H: 5, W: 7, C: 3, Mean: []float32{0.485, 0.456, 0.406}, Std: []float32{0.229, 0.224, 0.225}, CHW: chw}
		bb.Pixels = make([]byte, bb.N*bb.H*bb.W*bb.C)
		for i := range bb.Pixels {
			bb.Pixels[i] = byte(rng.IntN(256))
		}
		dst, _ := b.NewTensor(bb.N, bb.C, bb.H, bb.W)
		defer dst.Release()
		if err := in.Normalize(dst, bb); err != nil {
			t.Fatal(err)
		}
		got, want := make([]float32, len(bb.Pixels)), make([]float32, len(bb.Pixels))
		dst.Read(got)
		if err := train.NormalizeHWC(want, bb); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("chw %v: element %d: %g, NormalizeHWC %g", chw, i, got[i], want[i])
			}
		}
		if chw {
			hwc := bb
			hwc.CHW = false
			train.NormalizeHWC(got, hwc)
			if slices.Equal(got, want) {
				t.Fatal("the planar and interleaved readings agree: the test shows nothing")
			}
		}
		bb.W = 6
		if err := in.Normalize(dst, bb); err == nil {
			t.Errorf("chw %v: a batch of another shape: no error", chw)
		}
	}
}

// Every op's and state's memory goes back when they are closed: a
// ThinNet trained a step and closed leaves the twin as it found it, with
// captured steps too (the state memory kept for the record's addresses
// from one epoch to the next goes back at the trainer's Close).
func TestTwinReleases(t *testing.T) {
	b := twinBackend(t)
	m := b.m.(*twinMachine)
	start := m.liveBytes()
	trainRun(t, b, 1, "", "")
	if left := m.liveBytes(); left != start {
		t.Errorf("%d bytes left after the net, trainer and state closed (%d before)", left, start)
	}
	trainRunWith(t, b, 2, "", "", func(tr *train.Trainer) { tr.CaptureStep = true })
	if left := m.liveBytes(); left != start {
		t.Errorf("captured steps: %d bytes left after the net, trainer and state closed (%d before)", left, start)
	}
	if _, c, r := b.StepRuns(); c != 1 || r == 0 {
		t.Errorf("captured %d times, replayed %d: want one capture, replays", c, r)
	}
	other := train.NewReference(train.BackendOptions{})
	x, _ := other.NewTensor(1, 1, 4, 4)
	c, _ := b.NewConv(train.ConvSpec{In: 1, Out: 1, Kernel: 3})
	defer c.Close()
	if _, err := c.Forward(x, make([]float32, 9), nil); err == nil {
		t.Error("a tensor of another backend: no error")
	}
}

// byteStream serves epochs of d as NHWC bytes in the trainer's order.
type byteStream struct {
	tr   *train.Trainer
	d    *train.Images
	nhwc []byte
}

func (s *byteStream) Shape() (c, h, w int) { return s.d.Shape() }
func (s *byteStream) Len() int             { return s.Steps() * s.tr.Batch }
func (s *byteStream) Steps() int           { return s.d.Len() / s.tr.Batch }
func (s *byteStream) Epoch(ctx context.Context, e, skip int) iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		c, h, w := s.d.Shape()
		per := c * h * w
		order := s.tr.Order(s.d.Len(), e)
		for k := skip; k < s.Steps(); k++ {
			px, y := make([]byte, s.tr.Batch*per), make([]int, s.tr.Batch)
			for j, i := range order[k*s.tr.Batch : (k+1)*s.tr.Batch] {
				copy(px[j*per:(j+1)*per], s.nhwc[i*per:(i+1)*per])
				y[j] = s.d.Labels[i]
			}
			b := train.Batch{Y: y, Bytes: train.ByteBatch{Pixels: px, N: s.tr.Batch, H: h, W: w, C: c,
				Mean: []float32{s.d.Mean}, Std: []float32{s.d.Std}}}
			if !yield(b, nil) {
				return
			}
		}
	}
}

// smallTwinTrainer is a trainer of traintest's small ThinNet on a twin
// (SGD with momentum 0.9 at rate 0.05, batch 16, seed 3); the trainer,
// the net and the twin are closed when the test ends.
func smallTwinTrainer(t *testing.T) (*train.Trainer, *train.Sequential) {
	t.Helper()
	b := twinBackend(t)
	net, err := train.NewThinNet(b, traintest.SmallThinNet(), 5)
	if err != nil {
		t.Fatal(err)
	}
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.05), 16, 3)
	t.Cleanup(func() { tr.Close(); net.Close() })
	return tr, net
}

// Batches of NHWC bytes normalised on the device (normalize_u8, from the
// trainer's feeder, beside the step's ops) train the twin to the bits of
// float batches normalised by Images.Fill on the host.
func TestTwinByteBatches(t *testing.T) {
	d := images(64, 9)
	nhwc := d.Pixels // one channel: NCHW and NHWC are the same bytes
	run := func(bytes bool) [][]float32 {
		tr, net := smallTwinTrainer(t)
		var s train.Stream = tr.StreamOf(d)
		if bytes {
			s = &byteStream{tr: tr, d: d, nhwc: nhwc}
		}
		for range 2 {
			if _, err := tr.TrainStream(context.Background(), s, nil); err != nil {
				t.Fatal(err)
			}
		}
		var w [][]float32
		for _, p := range net.Params() {
			w = append(w, slices.Clone(p.Value))
		}
		return w
	}
	near(t, "weights from byte batches", run(true), run(false), 0)
}

// ChannelsLast on the twin: 16-bit convolutions channels-last (the casts
// moving the values, the twin's convolution on NHWC tensors) train to
// the bits of channels-first, bf16 and fp16, eager and captured.
func TestTwinChannelsLast(t *testing.T) {
	for _, p := range []train.Precision{train.BFloat16, train.Float16} {
		for _, capture := range []bool{false, true} {
			setup := func(tr *train.Trainer) { tr.CaptureStep = capture }
			want := trainRunWith(t, twinWith(t, train.BackendOptions{Precision: p}), 2, "", "", setup)
			got := trainRunWith(t, twinWith(t, train.BackendOptions{Precision: p, ChannelsLast: true}), 2, "", "", setup)
			nearLosses(t, got.losses, want.losses, 0)
			near(t, "weights", got.weights, want.weights, 0)
			near(t, "momentum", got.velocity, want.velocity, 0)
		}
	}
}

// Flip test-time augmentation and BatchNorm recalibration run on the
// twin's device state (the trainer's evaluation and RecalibrateBN) and
// give what the same twin gives through its host-slice ops (the package
// functions, no state bound): the same statistics to the bit, the same
// top-1 and top-5, and the loss within what the device's loss sums alone
// move it (their order is not the host CrossEntropy's: the plain
// evaluation differs as much); the mirror images' pass changes the loss.
func TestTwinFlipAndRecalibrateOnDevice(t *testing.T) {
	d := images(64, 11)
	type result struct {
		plain, flip train.Metrics
		stats       [][]float32
	}
	run := func(device bool) result {
		tr, net := smallTwinTrainer(t)
		b := tr.Backend
		ctx := context.Background()
		if _, err := tr.TrainStream(ctx, tr.StreamOf(d), nil); err != nil {
			t.Fatal(err)
		}
		eval := train.EvalStream(d, 16, 0, 1)
		evaluate := func(flip bool) train.Metrics {
			var m train.Metrics
			var err error
			if device {
				tr.EvalFlip = flip
				m, err = tr.EvaluateStream(ctx, eval, 0)
			} else {
				m, err = train.EvaluateStreamWith(ctx, b, net, eval, 0, train.EvalOptions{Flip: flip})
			}
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		r := result{plain: evaluate(false), flip: evaluate(true)}
		var err error
		if device {
			_, err = tr.RecalibrateBN(ctx, tr.StreamOf(d), 0, 2)
		} else {
			_, err = train.RecalibrateBN(ctx, b, net, tr.StreamOf(d), 0, 2)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range net.Buffers() {
			r.stats = append(r.stats, slices.Clone(p.Value))
		}
		return r
	}
	got, want := run(true), run(false)
	sums := math.Abs(got.plain.Loss - want.plain.Loss) // what the loss sums' order moves
	for _, c := range []struct {
		what      string
		got, want train.Metrics
	}{{"plain", got.plain, want.plain}, {"flip", got.flip, want.flip}} {
		if c.got.Top1 != c.want.Top1 || c.got.Top5 != c.want.Top5 || c.got.Samples != 64 || math.Abs(c.got.Loss-c.want.Loss) > 1e-7*c.want.Loss {
			t.Errorf("%s on the device: loss %v top-1 %v top-5 %v over %d; through the host-slice ops %v %v %v",
				c.what, c.got.Loss, c.got.Top1, c.got.Top5, c.got.Samples, c.want.Loss, c.want.Top1, c.want.Top5)
		}
	}
	if math.Abs(got.flip.Loss-got.plain.Loss) < 1000*max(sums, 1e-12) {
		t.Errorf("flip TTA on the device: loss %v, without it %v: the mirror images' pass changed nothing", got.flip.Loss, got.plain.Loss)
	}
	near(t, "recalibrated statistics", got.stats, want.stats, 0)
}

// ThinNet's ReLU goes into the BatchNorm after each convolution on the
// cuda backend (train.Sequential's pair): the convolution returns the
// values before the ReLU and the BatchNorm reads ReLU(x), forward, in
// evaluation and backward. The same arithmetic as the ReLU on its own
// (ThinNetConfig.SeparateReLU: relu_fwd and relu_bwd kernels), so the same
// bits: losses, weights, momentum and the evaluation, fp32 and bf16, eager
// and captured. The fused run launches no ReLU of the convolutions'
// (bias_act for it, relu_bwd).
func TestTwinReLUIntoBatchNorm(t *testing.T) {
	for _, p := range []train.Precision{train.Float32, train.BFloat16} {
		for _, capture := range []bool{false, true} {
			open := func() *Backend { return twinWith(t, train.BackendOptions{Precision: p}) }
			fused, separate := pairRun(t, open(), smallThin(false), capture, false), pairRun(t, open(), smallThin(true), capture, false)
			pairsAgree(t, fmt.Sprintf("%s capture=%v fused against the ReLU apart", p, capture), fused, separate, 0)
			if capture {
				continue
			}
			// bias_act: the classifier's bias alone in both (the convolutions
			// have none; with the ReLU fused in they launched it for the ReLU).
			if fused.kernels["relu_bwd"]+fused.kernels["relu_fwd"] != 0 || fused.kernels["bias_act"] != separate.kernels["bias_act"] ||
				fused.kernels["bn_apply"] == 0 {
				t.Errorf("%s: the fused run launched %v", p, fused.kernels)
			}
			if separate.kernels["relu_fwd"] == 0 || separate.kernels["relu_bwd"] == 0 {
				t.Errorf("%s: the run with the ReLU apart launched %v", p, separate.kernels)
			}
			t.Logf("%s: kernels a profiled epoch, fused %d, ReLU apart %d", p, total(fused.kernels), total(separate.kernels))
		}
	}
}

func total(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// train.Sequential's pair on the cuda backend: 16-bit values passed as
// they are between a convolution and a BatchNorm right after each other
// (LowOutputOp, LowInputOp: a convolution's output to the BatchNorm after
// it and its gradient back, a BatchNorm's output to the convolution after
// it and its gradient back), and a ReLU layer after a BatchNorm folded
// into it (ReLUOutputBatchNormOp), and a residual block's add and ReLU
// in one pass (AddReLUOp). ThinNet (conv, BN, conv, …) and a
// small ResNet-18 (conv, BN, ReLU, conv, …), fp32, bf16 and fp16 (with a
// GradScaler), eager and captured, train and evaluate to the bits of the
// runs that cast between them (Backend.noLowHandOff) with each ReLU a
// layer of its own (apart: wrapped in a Sequential, so nothing folds it),
// with two casts a pair and a ReLU pass each way a step fewer, and a
// residual block after another adding its gradients and masking them
// for the block before in one pass (ReLUSumBackwardOp: add_relu_bwd for
// add and relu_bwd), its first convolutions' input gradients summed in 16
// bits as they wrote them (LowGradOp), and their input the block before's
// output rounded as it is written (LowCopyOp: add_relu_low).
func TestTwinLowHandOff(t *testing.T) {
	const steps = 64 / 16 // a profiled epoch
	for _, p := range []train.Precision{train.Float32, train.BFloat16, train.Float16} {
		to, from := "cast_f32_bf16", "cast_bf16_f32"
		if p == train.Float16 {
			to, from = "cast_f32_f16", "cast_f16_f32"
		}
		for _, net := range pairNets {
			for _, capture := range []bool{false, true} {
				name := fmt.Sprintf("%s %s capture=%v", p, net.name, capture)
				open := func() *Backend { return twinWith(t, train.BackendOptions{Precision: p}) }
				handed, apart := pairRun(t, open(), net.build, capture, false), pairRun(t, open(), net.build, capture, true)
				pairsAgree(t, name, handed, apart, 0)
				if capture {
					continue
				}
				// Each pair a step under bf16 and fp16: no cast of the values
				// to float32 one way, none back to 16 bits the other.
				// And each first convolution of a block after a block: its
				// input gradient summed in 16 bits, not cast to float32.
				pairs, lowSums := handed.pairs, handed.chains
				if p == train.Float32 {
					pairs, lowSums = 0, 0
				}
				if got, want := apart.kernels[from]-handed.kernels[from], (pairs+handed.lowGrads*min(lowSums, 1))*steps; got != want {
					t.Errorf("%s: %d fewer %s launches, want %d ((%d pairs + %d first convolutions) × %d steps)", name, got, from, want, pairs,
						handed.lowGrads*min(lowSums, 1), steps)
				}
				// And their input: the block before's output rounded as it is
				// written (add_relu_low), not cast.
				if got, want := apart.kernels[to]-handed.kernels[to], (pairs+handed.lowGrads*min(lowSums, 1))*steps; got != want {
					t.Errorf("%s: %d fewer %s launches, want %d", name, got, to, want)
				}
				// Each folded ReLU a step: no relu_fwd, no relu_bwd; each
				// residual block's end: in its main path's last BatchNorm's
				// pass (BN_ADD), no add, no relu_fwd, no add_relu or
				// add_relu_low of its own; each block after a block:
				// add_relu_bwd for its gradient add and the block before's
				// relu_bwd.
				for k, want := range map[string]int{"relu_fwd": handed.folds + handed.sums, "relu_bwd": handed.folds + handed.chains,
					"add": handed.sums + handed.chains, "add_relu": 0, "add_relu_low": 0,
					"add_relu_bwd": -handed.chains + lowSums, "add_relu_bwd_low": -lowSums} {
					if got := apart.kernels[k] - handed.kernels[k]; got != want*steps {
						t.Errorf("%s: %d fewer %s launches, want %d (%d folded ReLUs, %d block ends, %d blocks after a block, × %d steps)",
							name, got, k, want*steps, handed.folds, handed.sums, handed.chains, steps)
					}
				}
				t.Logf("%s: kernels a profiled epoch, paired %d, apart %d", name, total(handed.kernels), total(apart.kernels))
			}
		}
	}
}

// The pairing under ChannelsLast: a BatchNorm between two convolutions
// reads and writes their channels-last 16-bit operands as they are
// (kernels.cu's BN_NHWC), one with no convolution after it reads them so
// and writes float32 channels-first for the op after it (the bn_tiles
// kernels: the layout changed in its own passes), so a step casts nothing
// between a convolution and its BatchNorm, nor between that and the next
// convolution: four channels-last casts fewer a BatchNorm between
// convolutions, two a BatchNorm after a convolution only. The
// values are the runs' that cast between them within the sums' order
// (the channels-last kernels sum a channel in another order: the
// statistics within the double sums' rounding), bf16 and fp16, ThinNet
// and the small ResNet-18, eager and captured.
func TestTwinLowHandOffChannelsLast(t *testing.T) {
	const steps = 64 / 16
	for _, p := range []train.Precision{train.BFloat16, train.Float16} {
		in, out := "cast_nchw_nhwc_bf16", "cast_nhwc_nchw_bf16"
		if p == train.Float16 {
			in, out = "cast_nchw_nhwc_f16", "cast_nhwc_nchw_f16"
		}
		for _, net := range pairNets {
			for _, capture := range []bool{false, true} {
				name := fmt.Sprintf("%s %s capture=%v channels-last", p, net.name, capture)
				open := func() *Backend { return twinWith(t, train.BackendOptions{Precision: p, ChannelsLast: true}) }
				handed, apart := pairRun(t, open(), net.build, capture, false), pairRun(t, open(), net.build, capture, true)
				pairsAgree(t, name, handed, apart, 1e-5)
				if capture {
					continue
				}
				if handed.through == 0 {
					t.Fatalf("%s: no BatchNorm between two convolutions", name)
				}
				outs := handed.convBN - handed.through // a convolution's BatchNorm with no convolution after it
				// The first convolutions of a block after a block: their
				// channels-last input gradients summed as they are.
				for k, extra := range map[string]int{in: handed.lowGrads, out: handed.lowGrads} {
					if got, want := apart.kernels[k]-handed.kernels[k], (2*handed.through+outs+extra)*steps; got != want {
						t.Errorf("%s: %d fewer %s launches, want %d ((2 × %d BatchNorms between convolutions + %d after one + %d) × %d steps)",
							name, got, k, want, handed.through, outs, extra, steps)
					}
				}
				for k, want := range map[string]int{"bn_nhwc_sum": handed.convBN, "bn_nhwc_bwd_apply": handed.through,
					"bn_tiles_apply": outs, "bn_tiles_bwd_sum": outs, "bn_plane_sum": 0, "add_relu_bwd_tiles": handed.chains,
					"add_relu_bwd": 0, "add_relu_tiles": 0, "add_relu": 0} {
					if got := handed.kernels[k]; got != want*steps {
						t.Errorf("%s: %d %s launches, want %d", name, got, k, want*steps)
					}
				}
				if apart.kernels["bn_nhwc_sum"]+apart.kernels["bn_tiles_apply"] != 0 {
					t.Errorf("%s: the run apart launched %v", name, apart.kernels)
				}
				t.Logf("%s: kernels a profiled epoch, paired %d, apart %d", name, total(handed.kernels), total(apart.kernels))
			}
		}
	}
}

// pairResult is what pairRun saw.
type pairResult struct {
	o        outcome
	metrics  train.Metrics
	kernels  map[string]int // launches by name in the second epoch (not captured)
	pairs    int            // conv→BN, BN→conv and BN→ReLU→conv in the net's Sequentials
	through  int            // BatchNorms with a convolution before and after (a ReLU between them or not)
	convBN   int            // conv→BN
	folds    int            // BN→ReLU
	sums     int            // Residual blocks: ReLU(Main(x) + Shortcut(x))
	chains   int            // Residual blocks right after another: its gradient add and the other's ReLU backward
	lowGrads int            // their first convolutions (main path and shortcut): input gradients summed in 16 bits
}

// netBuilder builds a network on a backend.
type netBuilder func(train.Backend) (*train.Sequential, error)

// smallThin is traintest.SmallThinNet, its ReLU a layer of its own when
// separate.
func smallThin(separate bool) netBuilder {
	return func(b train.Backend) (*train.Sequential, error) {
		cfg := traintest.SmallThinNet()
		cfg.SeparateReLU = separate
		return train.NewThinNet(b, cfg, 5)
	}
}

// smallResNet is ResNet-18 for images' 1×10×10 inputs, 4 to 8 channels.
func smallResNet(b train.Backend) (*train.Sequential, error) {
	return train.NewResNet18(b, train.ResNetConfig{InChannels: 1, Classes: 10, SmallInput: true, Widths: []int{4, 8, 8, 8}}, 5)
}

// pairNets are pairRun's networks by name.
var pairNets = []struct {
	name  string
	build netBuilder
}{{"thinnet", smallThin(false)}, {"resnet18", smallResNet}}

// pairRun trains build's network on b two epochs
// of 64 images, profiling the second unless capture, and evaluates it.
// apart keeps the ops from pairing: the casts between them
// (Backend.noLowHandOff), each ReLU a layer of its own (wrapped in a
// Sequential, so no BatchNorm folds it) and each residual block's end an
// add and a ReLU, forward and backward (Backend.noAddReLU), not in the
// main path's last BatchNorm (Backend.noBNSum).
func pairRun(t *testing.T, b *Backend, build netBuilder, capture, apart bool) pairResult {
	t.Helper()
	d := images(64, 17)
	ctx := context.Background()
	b.noLowHandOff, b.noAddReLU, b.noBNSum = apart, apart, apart
	p, _ := b.Precision()
	net, err := build(b)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	r := pairResult{kernels: map[string]int{}}
	var seqs []*train.Sequential
	train.Walk(net, func(l train.Layer) {
		if _, ok := l.(*train.Residual); ok {
			r.sums++
		}
		s, ok := l.(*train.Sequential)
		if !ok {
			return
		}
		for i := 0; i+1 < len(s.Layers); i++ {
			_, c0 := s.Layers[i].(*train.Conv2D)
			_, b0 := s.Layers[i].(*train.BatchNorm2D)
			_, c1 := s.Layers[i+1].(*train.Conv2D)
			_, b1 := s.Layers[i+1].(*train.BatchNorm2D)
			_, r1 := s.Layers[i+1].(*train.ReLU)
			if r1 && b0 {
				r.folds++
				if i+2 < len(s.Layers) {
					_, c1 = s.Layers[i+2].(*train.Conv2D)
				}
			}
			if c0 && b1 || b0 && c1 {
				r.pairs++
			}
			if c0 && b1 {
				r.convBN++
			}
			_, res0 := s.Layers[i].(*train.Residual)
			_, res1 := s.Layers[i+1].(*train.Residual)
			if res0 && res1 {
				r.chains++
				next := s.Layers[i+1].(*train.Residual)
				for _, l := range []train.Layer{next.Main, next.Shortcut} {
					for l != nil {
						if q, ok := l.(*train.Sequential); ok && len(q.Layers) > 0 {
							l = q.Layers[0]
							continue
						}
						if _, ok := l.(*train.Conv2D); ok {
							r.lowGrads++
						}
						break
					}
				}
			}
			if b0 && c1 && i > 0 {
				if _, ok := s.Layers[i-1].(*train.Conv2D); ok {
					r.through++
				}
			}
		}
		seqs = append(seqs, s)
	})
	for _, s := range seqs {
		for i, l := range s.Layers {
			if _, ok := l.(*train.ReLU); ok && apart {
				s.Layers[i] = &train.Sequential{Layers: []train.Layer{l}}
			}
		}
	}
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, WeightDecay: 1e-4}, train.Constant(0.05), 16, 3)
	defer tr.Close()
	if p == train.Float16 {
		tr.Scaler = train.NewGradScaler()
	}
	tr.CaptureStep = capture
	onStep := func(s train.StepResult) error { r.o.losses = append(r.o.losses, s.Loss); return nil }
	if _, err := tr.TrainStream(ctx, tr.StreamOf(d), onStep); err != nil {
		t.Fatal(err)
	}
	if !capture {
		if err := b.StartProfile(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tr.TrainStream(ctx, tr.StreamOf(d), onStep); err != nil {
		t.Fatal(err)
	}
	if !capture {
		prof, err := b.StopProfile()
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range prof.Rows {
			if name, ok := strings.CutPrefix(row.Op, "kernel "); ok {
				r.kernels[name] += row.Calls
			}
		}
	}
	if r.metrics, err = tr.EvaluateStream(ctx, train.EvalStream(d, 16, 0, 1), 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(net.Params(), net.Buffers()...) {
		r.o.weights = append(r.o.weights, slices.Clone(p.Value))
	}
	r.o.velocity = tr.Opt.Velocity
	return r
}

// pairsAgree fails unless two pairRuns trained alike within tol (0: the
// same bits, and the same evaluation).
func pairsAgree(t *testing.T, name string, got, want pairResult, tol float64) {
	t.Helper()
	nearLosses(t, got.o.losses, want.o.losses, tol)
	near(t, name+" weights", got.o.weights, want.o.weights, tol)
	near(t, name+" momentum", got.o.velocity, want.o.velocity, tol)
	got.metrics.Seconds, want.metrics.Seconds = 0, 0
	if tol == 0 && got.metrics != want.metrics {
		t.Errorf("%s: evaluation %+v, want %+v", name, got.metrics, want.metrics)
	}
}

// A 16-bit tensor reads and writes as float32 (rounded on the way in),
// and an op that reads float32 refuses it by name.
func TestLowTensor(t *testing.T) {
	b := twinWith(t, train.BackendOptions{Precision: train.Float16})
	var x *tensor
	if err := b.ensureLow(&x, 2, 3, 1, 2); err != nil {
		t.Fatal(err)
	}
	defer x.free()
	in := []float32{1, 1.0001, -2.5, 70000, 1e-8, float32(math.NaN()), 3, -0, 65504, 0.1, 1e-5, -1}
	if err := x.Write(in); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, len(in))
	if err := x.Read(got); err != nil {
		t.Fatal(err)
	}
	want := traintest.RoundAll(train.Float16, in)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			t.Errorf("[%d]: wrote %v, read %v, want %v", i, in[i], got[i], want[i])
		}
	}
	relu, err := b.NewReLU()
	if err != nil {
		t.Fatal(err)
	}
	defer relu.Close()
	if _, err := relu.Forward(x); err == nil || !strings.Contains(err.Error(), "16-bit tensor [2 3 1 2]") {
		t.Errorf("ReLU of a 16-bit tensor: %v", err)
	}
	bn, err := b.NewBatchNorm(train.BatchNormSpec{C: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer bn.Close()
	if _, err := bn.Forward(x, make([]float32, 3), make([]float32, 3), make([]float32, 3), make([]float32, 3), true); err == nil ||
		!strings.Contains(err.Error(), "without LowInput") {
		t.Errorf("BatchNorm of a 16-bit tensor without LowInput: %v", err)
	}
}

// The paired ResNet's journeys on the twin, bf16 channels-first and
// -last (16-bit hand-offs, folded ReLUs, the residual blocks' fused ends):
// one epoch, a checkpoint, a fresh backend and trainer and one more epoch
// end where two epochs end, to the bit; DDP over two ranks keeps the
// ranks' parameters the same bits, and ends where two ranks with the casts
// and the blocks' ends apart end (the same bits channels-first; within
// the channels-last sums' order).
func TestTwinPairedResNetJourneys(t *testing.T) {
	for _, last := range []bool{false, true} {
		o := train.BackendOptions{Precision: train.BFloat16, ChannelsLast: last}
		open := func(apart bool) *Backend {
			b := twinWith(t, o)
			b.noLowHandOff, b.noAddReLU, b.noBNSum = apart, apart, apart
			return b
		}
		name := fmt.Sprintf("channels-last=%v", last)
		want := trainNetRun(t, open(false), smallResNet, 2, "", "", nil, nil)
		ck := t.TempDir() + "/one.ckpt"
		trainNetRun(t, open(false), smallResNet, 1, "", ck, nil, nil)
		resumed := trainNetRun(t, open(false), smallResNet, 1, ck, "", nil, nil)
		near(t, name+" resumed weights", resumed.weights, want.weights, 0)
		near(t, name+" resumed momentum", resumed.velocity, want.velocity, 0)

		ddp := func(apart bool) []outcome {
			comms := collective.NewLocal(2)
			got := make([]outcome, 2)
			var wg sync.WaitGroup
			for r := range 2 {
				b := open(apart)
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[r] = trainNetRun(t, b, smallResNet, 2, "", "", func(tr *train.Trainer) {
						if err := tr.Distribute(comms[r], 1<<12); err != nil {
							t.Error(err)
						}
					}, nil)
				}()
			}
			wg.Wait()
			return got
		}
		paired, apart := ddp(false), ddp(true)
		// The parameters (the BatchNorms' running statistics are each
		// rank's own, as torch's DDP keeps them).
		np := len(paired[0].velocity)
		near(t, name+" DDP rank 1 against rank 0", paired[1].weights[:np], paired[0].weights[:np], 0)
		tol := 0.0
		if last {
			tol = 1e-5
		}
		near(t, name+" DDP paired against apart", paired[0].weights, apart[0].weights, tol)
	}
}
