package train_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
)

// run is one toy training run's outcome: everything a checkpoint holds
// and what each step reported.
type run struct {
	weights  [][]float32 // params then buffers
	velocity [][]float32
	ema      [][]float32
	losses   []float64
	correct  []int
	skipped  int
	scaler   train.GradScaler // the trainer's after the run
	eval     train.Metrics
	evalMid  train.Metrics // from within a step's callback, the state bound
}

// trainDevice trains toyNet for two epochs on b with setup applied,
// checking with each step that the parameters are bound to a device
// state exactly when want says.
func trainDevice(t *testing.T, b train.Backend, bound bool, setup func(tr *train.Trainer), stream func(tr *train.Trainer, d *train.Images) train.Stream) run {
	t.Helper()
	net, err := train.NewThinNet(b, toyNet, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, WeightDecay: 1e-4}, train.Constant(0.05), 16, 3)
	defer tr.Close()
	if setup != nil {
		setup(tr)
	}
	data := toyData(96, 6)
	var r run
	onStep := func(s train.StepResult) error {
		if v, _ := net.Params()[0].Tensors(); (v != nil) != bound {
			t.Fatalf("step %d: parameters bound to a device state: %v, want %v", s.Step, v != nil, bound)
		}
		if s.LossSteps > 0 {
			r.losses, r.correct = append(r.losses, s.Loss), append(r.correct, s.Correct)
		}
		if s.Epoch == 2 && s.Step == 3 { // the EMA swapped where the weights are
			m, err := tr.Evaluate(context.Background(), toyData(40, 9), 16)
			if err != nil {
				return err
			}
			m.Seconds = 0
			r.evalMid = m
		}
		return nil
	}
	for range 2 {
		var err error
		if stream != nil {
			_, err = tr.TrainStream(context.Background(), stream(tr, data), onStep)
		} else {
			_, err = tr.TrainEpoch(context.Background(), data, onStep)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if r.eval, err = tr.Evaluate(context.Background(), toyData(40, 9), 16); err != nil {
		t.Fatal(err)
	}
	r.eval.Seconds = 0
	if err := tr.SaveCheckpoint(t.TempDir() + "/ck"); err != nil { // pulls the state
		t.Fatal(err)
	}
	r.weights = weights(net)
	for _, p := range net.Buffers() {
		r.weights = append(r.weights, slices.Clone(p.Value))
	}
	r.velocity = tr.Opt.Velocity
	if tr.EMA != nil {
		r.ema = tr.EMA.Values
	}
	if tr.Scaler != nil {
		r.skipped, r.scaler = tr.Scaler.Skipped, *tr.Scaler
	}
	return r
}

func sameBits(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tensors, want %d", what, len(got), len(want))
	}
	for i := range want {
		for j := range want[i] {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
				t.Fatalf("%s: tensor %d element %d is %g, want %g (bit-exact)", what, i, j, got[i][j], want[i][j])
			}
		}
	}
}

func sameRun(t *testing.T, got, want run) {
	t.Helper()
	sameBits(t, "weights", got.weights, want.weights)
	sameBits(t, "momentum", got.velocity, want.velocity)
	sameBits(t, "EMA", got.ema, want.ema)
	if !slices.Equal(got.losses, want.losses) || !slices.Equal(got.correct, want.correct) {
		t.Fatalf("losses %v correct %v, want %v %v", got.losses, got.correct, want.losses, want.correct)
	}
	if got.skipped != want.skipped || got.scaler != want.scaler || got.eval != want.eval || got.evalMid != want.evalMid {
		t.Fatalf("skipped %d eval %+v mid-epoch %+v, want %d %+v %+v", got.skipped, got.eval, got.evalMid, want.skipped, want.eval, want.evalMid)
	}
}

// The device path (DeviceReference: parameters, gradients, momentum, EMA,
// BatchNorm statistics and the loss in its own tensors, fused SGD) and
// the host adapter over the same arithmetic give the same bits, for each
// optimiser and step variant.
func TestDeviceStateMatchesHost(t *testing.T) {
	cases := []struct {
		name  string
		prec  train.Precision
		setup func(tr *train.Trainer)
	}{
		{"momentum", train.Float32, nil},
		{"plain-sgd", train.Float32, func(tr *train.Trainer) { tr.Opt.Momentum = 0; tr.Opt.WeightDecay = 5e-4 }},
		{"nesterov-smoothing", train.Float32, func(tr *train.Trainer) { tr.Opt.Nesterov = true; tr.LabelSmoothing = 0.1 }},
		{"ema-warmup", train.Float32, func(tr *train.Trainer) { tr.EMA = &train.EMA{Decay: 0.9, Warmup: true} }},
		{"fp16-scaler", train.Float16, func(tr *train.Trainer) {
			tr.Scaler = train.NewGradScaler()
			tr.Scaler.Scale = 1 << 24 // overflows at first: skipped steps, backoff, then steps
		}},
		{"fp16-scaler-growth-ema", train.Float16, func(tr *train.Trainer) {
			// backs off, then grows by a factor that is no power of two
			tr.Scaler = &train.GradScaler{Scale: 4e6, GrowthFactor: 1.5, BackoffFactor: 0.25, GrowthInterval: 2}
			tr.EMA = &train.EMA{Decay: 0.9, Warmup: true}
			tr.LossEvery = 4
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := train.BackendOptions{Threads: 1, Precision: c.prec}
			host := trainDevice(t, train.NewReference(o), false, c.setup, nil)
			dev := train.NewDeviceReference(o)
			native := trainDevice(t, dev, true, c.setup, nil)
			sameRun(t, native, host)
			if sc := host.scaler; strings.HasPrefix(c.name, "fp16-scaler") && (sc.Skipped == 0 || sc.Skipped == 12 || sc.Scale == 1<<24) {
				t.Fatalf("scaler %+v: the scaler's path is not exercised (want steps skipped and taken)", sc)
			}
			if dev.Unscales != 0 {
				t.Errorf("the device state's finite check was read back %d times: the GradScaler stays on the device", dev.Unscales)
			}
		})
	}
}

// The fused SGD step of a device state gives SGD.Step's bits, step after
// step, for plain SGD, momentum and Nesterov with weight decay.
func TestFusedSGDMatchesStep(t *testing.T) {
	for _, o := range []train.SGD{{}, {WeightDecay: 1e-3}, {Momentum: 0.9, WeightDecay: 5e-4}, {Momentum: 0.8, WeightDecay: 1e-2, Nesterov: true}} {
		rng := rand.New(rand.NewPCG(1, 2))
		mk := func() []*train.Param {
			var ps []*train.Param
			for i, n := range []int{7, 33, 1} {
				p := &train.Param{Name: string(rune('a' + i)), Shape: []int{n}, Value: make([]float32, n), Grad: make([]float32, n)}
				for j := range p.Value {
					p.Value[j] = float32(rng.NormFloat64())
				}
				ps = append(ps, p)
			}
			return ps
		}
		host, devPs := mk(), mk()
		for i := range host { // the same starting weights
			copy(devPs[i].Value, host[i].Value)
		}
		hostOpt, devOpt := o, o
		st, err := train.NewDeviceReference(train.BackendOptions{}).NewState(devPs, nil, &devOpt, nil)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 4 {
			for i, p := range host {
				for j := range p.Grad {
					p.Grad[j] = float32(rng.NormFloat64())
				}
				_, g := st.Tensors(i)
				if err := g.Write(p.Grad); err != nil {
					t.Fatal(err)
				}
			}
			lr := 0.1 / float64(step+1)
			hostOpt.Step(host, lr)
			if err := st.SGDStep(&devOpt, lr); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Pull(&devOpt, nil); err != nil {
			t.Fatal(err)
		}
		var hw, dw [][]float32
		for i := range host {
			hw, dw = append(hw, host[i].Value), append(dw, devPs[i].Value)
		}
		sameBits(t, "weights", dw, hw)
		sameBits(t, "momentum", devOpt.Velocity, hostOpt.Velocity)
	}
}

// With LossEvery k the device's loss sums are read once per k steps (and
// at the epoch's end), and what is read is the steps' per-step results
// summed; the weights do not depend on it.
func TestLossSumsReadPerInterval(t *testing.T) {
	type interval struct {
		steps   []int // StepResult.LossSteps where read
		losses  []float64
		correct []int
		reads   int
		weights [][]float32
	}
	train1 := func(every int) interval {
		b := train.NewDeviceReference(train.BackendOptions{Threads: 1})
		net, err := train.NewThinNet(b, toyNet, 5)
		if err != nil {
			t.Fatal(err)
		}
		defer net.Close()
		tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.05), 16, 3)
		defer tr.Close()
		tr.LossEvery = every
		var iv interval
		_, err = tr.TrainEpoch(context.Background(), toyData(96, 6), func(s train.StepResult) error { // 6 steps
			if s.LossSteps > 0 {
				iv.steps, iv.losses, iv.correct = append(iv.steps, s.LossSteps), append(iv.losses, s.Loss), append(iv.correct, s.Correct)
			} else if s.Loss != 0 || s.Correct != 0 {
				t.Errorf("step %d: loss %g correct %d reported without a read", s.Step, s.Loss, s.Correct)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		iv.reads, iv.weights = b.LossReads, weights(net)
		return iv
	}
	each, every4 := train1(1), train1(4)
	if each.reads != 6 || every4.reads != 2 || !slices.Equal(every4.steps, []int{4, 2}) {
		t.Fatalf("reads: every step %d, every 4 steps %d at %v; want 6, 2 at [4 2]", each.reads, every4.reads, every4.steps)
	}
	sameBits(t, "weights", every4.weights, each.weights)
	for k, span := range [][2]int{{0, 4}, {4, 6}} {
		loss, correct := 0.0, 0
		for i := span[0]; i < span[1]; i++ {
			loss += each.losses[i]
			correct += each.correct[i]
		}
		loss /= float64(span[1] - span[0])
		if math.Abs(every4.losses[k]-loss) > 1e-12*math.Abs(loss) || every4.correct[k] != correct {
			t.Fatalf("interval %d: loss %.17g correct %d, the steps' %.17g %d", k, every4.losses[k], every4.correct[k], loss, correct)
		}
	}
}

// A device BatchNorm updates its running statistics itself, to the bits
// BatchNorm2D computes on the host, and evaluates with them.
func TestDeviceBatchNormRunningStats(t *testing.T) {
	const c = 3
	host := train.NewReference(train.BackendOptions{})
	layer, err := train.NewBatchNorm2D(host, "bn", c)
	if err != nil {
		t.Fatal(err)
	}
	dev := train.NewDeviceReference(train.BackendOptions{})
	op, err := dev.NewBatchNorm(train.BatchNormSpec{C: c})
	if err != nil {
		t.Fatal(err)
	}
	dop := op.(train.DeviceBatchNormOp)
	tensor := func(v []float32) train.Tensor {
		x, err := dev.NewTensor(len(v))
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Write(v); err != nil {
			t.Fatal(err)
		}
		return x
	}
	gamma, beta := tensor(layer.Gamma.Value), tensor(layer.Beta.Value)
	rm, rv := tensor(layer.RunningMean.Value), tensor(layer.RunningVar.Value)
	rng := rand.New(rand.NewPCG(3, 4))
	read := func(x train.Tensor) []float32 {
		v := make([]float32, train.Numel(x.Shape()))
		if err := x.Read(v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for step := range 4 {
		training := step < 3
		xs := make([]float32, 2*c*5*5)
		for i := range xs {
			xs[i] = float32(rng.NormFloat64()*2 + 1)
		}
		xh, _ := host.NewTensor(2, c, 5, 5)
		xd, _ := dev.NewTensor(2, c, 5, 5)
		xh.Write(xs)
		xd.Write(xs)
		yh, err := layer.Forward(xh, training)
		if err != nil {
			t.Fatal(err)
		}
		yd, err := dop.ForwardDevice(xd, gamma, beta, rm, rv, layer.Momentum, training)
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, "output", [][]float32{read(yd)}, [][]float32{read(yh)})
		sameBits(t, "running statistics", [][]float32{read(rm), read(rv)}, [][]float32{layer.RunningMean.Value, layer.RunningVar.Value})
	}
	if layer.RunningMean.Value[0] == 0 {
		t.Fatal("the running mean did not move")
	}
}

// byteData is toyData with three channels, kept as bytes both ways: NCHW
// for Images, NHWC as a decoder writes them.
func byteData(n int) (*train.Images, []byte) {
	const c, h, w = 3, 12, 12
	d := toyData(n, 6)
	nchw := make([]byte, n*c*h*w)
	nhwc := make([]byte, n*c*h*w)
	for i := range n {
		for ch := range c {
			for k := range h * w {
				v := d.Pixels[i*h*w+k] + byte(40*ch)
				nchw[(i*c+ch)*h*w+k] = v
				nhwc[(i*h*w+k)*c+ch] = v
			}
		}
	}
	return &train.Images{C: c, H: h, W: w, Mean: 0.3, Std: 0.3, Pixels: nchw, Labels: d.Labels}, nhwc
}

// byteStream serves epochs of NHWC bytes in the trainer's order.
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
		px, y := make([]byte, s.tr.Batch*per), make([]int, s.tr.Batch)
		for k := skip; k < s.Steps(); k++ {
			for j, i := range order[k*s.tr.Batch : (k+1)*s.tr.Batch] {
				copy(px[j*per:(j+1)*per], s.nhwc[i*per:(i+1)*per])
				y[j] = s.d.Labels[i]
			}
			b := train.Batch{Y: y, Bytes: train.ByteBatch{Pixels: px, N: s.tr.Batch, H: h, W: w, C: c, Mean: []float32{s.d.Mean}, Std: []float32{s.d.Std}}}
			if !yield(b, nil) {
				return
			}
		}
	}
}

// Batches of NHWC bytes, normalised by the backend (DeviceReference) or
// by the host adapter (Reference, DataParallel replicas), train to the
// bits of float batches normalised by Images.Fill.
func TestByteBatches(t *testing.T) {
	d, nhwc := byteData(96)
	x := make([]float32, len(nhwc))
	err := train.NormalizeHWC(x, train.ByteBatch{Pixels: nhwc, N: 96, H: 12, W: 12, C: 3, Mean: []float32{0.3}, Std: []float32{0.3}})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, len(nhwc))
	d.Fill(slices.Collect(func(yield func(int) bool) {
		for i := range 96 {
			if !yield(i) {
				return
			}
		}
	}), want, make([]int, 96))
	sameBits(t, "NormalizeHWC", [][]float32{x}, [][]float32{want})

	trainOn := func(b train.Backend, replica train.Backend, bytes bool) [][]float32 {
		w, err := trainThree(t, b, replica, nil, func(tr *train.Trainer) train.Stream {
			if bytes {
				return &byteStream{tr: tr, d: d, nhwc: nhwc}
			}
			return tr.StreamOf(d)
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	o := train.BackendOptions{Threads: 1}
	floats := trainOn(train.NewReference(o), nil, false)
	sameBits(t, "host bytes", trainOn(train.NewReference(o), nil, true), floats)
	sameBits(t, "device bytes", trainOn(train.NewDeviceReference(o), nil, true), floats)
	sameBits(t, "replicas' bytes", trainOn(train.NewReference(o), train.NewReference(o), true),
		trainOn(train.NewReference(o), train.NewReference(o), false))
}

// Evaluation and BatchNorm recalibration over batches of bytes give the
// figures of the same batches as floats, on the host and on a device
// state: evaluation (the backend's ByteInputOp), flip TTA and
// RecalibrateBN's running statistics (on the device state: the state
// bound after the reset and read back after the pass).
func TestByteBatchesEvaluate(t *testing.T) {
	ctx := context.Background()
	d, nhwc := byteData(96)
	o := train.BackendOptions{Threads: 1}
	type result struct {
		plain, flip train.Metrics
		stats       [][]float32
	}
	run := func(b train.Backend, bytes bool) result {
		tr, net := threeTrainer(t, b)
		stream := func() train.Stream {
			if bytes {
				return &byteStream{tr: tr, d: d, nhwc: nhwc}
			}
			return tr.StreamOf(d)
		}
		var r result
		_, err := tr.TrainStream(ctx, stream(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.plain, err = tr.EvaluateStream(ctx, stream(), 0); err != nil {
			t.Fatal(err)
		}
		tr.EvalFlip = true
		if r.flip, err = tr.EvaluateStream(ctx, stream(), 0); err != nil {
			t.Fatal(err)
		}
		tr.EvalFlip = false
		dr, _ := b.(*train.DeviceReference)
		syncs := 0
		if dr != nil {
			syncs = dr.Syncs
		}
		if _, err := tr.RecalibrateBN(ctx, stream(), 0, 0); err != nil {
			t.Fatal(err)
		}
		if dr != nil && dr.Syncs == syncs {
			t.Errorf("RecalibrateBN on a device state read nothing back from the device: it ran on the host")
		}
		for _, p := range net.Buffers() {
			r.stats = append(r.stats, slices.Clone(p.Value))
		}
		return r
	}
	same := func(a, b train.Metrics) bool {
		return a.Loss == b.Loss && a.Top1 == b.Top1 && a.Top5 == b.Top5 && a.Samples == b.Samples && a.Samples == 96
	}
	// The host path over floats is the reference: the device state
	// evaluates there too (flip TTA on the device: the bytes mirrored by
	// the byte input, floats mirrored on the host, the two passes'
	// logits averaged as the host averages them).
	want := run(train.NewReference(o), false)
	if same(want.flip, want.plain) {
		t.Fatalf("flip TTA changed nothing (%+v): the test cannot tell it from none", want.plain)
	}
	for _, dev := range []bool{false, true} {
		for _, bytes := range []bool{false, true} {
			b := train.Backend(train.NewReference(o))
			if dev {
				b = train.NewDeviceReference(o)
			}
			got := run(b, bytes)
			if !same(got.plain, want.plain) || !same(got.flip, want.flip) {
				t.Errorf("device state %v, bytes %v: %+v, flip %+v; the host over floats %+v, flip %+v", dev, bytes, got.plain, got.flip, want.plain, want.flip)
			}
			sameBits(t, fmt.Sprintf("device state %v, bytes %v: recalibrated statistics", dev, bytes), got.stats, want.stats)
		}
	}
}

// A checkpoint saved from a device state resumes on the host path (and
// the other way) to the bits of an uninterrupted host run.
func TestDeviceCheckpointAcrossPaths(t *testing.T) {
	o := train.BackendOptions{Threads: 1}
	data := toyData(96, 6)
	trainer := func(b train.Backend) (*train.Trainer, *train.Sequential) {
		net, err := train.NewThinNet(b, toyNet, 5)
		if err != nil {
			t.Fatal(err)
		}
		tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, Nesterov: true}, train.Constant(0.05), 16, 3)
		tr.EMA = &train.EMA{Decay: 0.9}
		t.Cleanup(func() { tr.Close(); net.Close() })
		return tr, net
	}
	epoch := func(tr *train.Trainer) {
		if _, err := tr.TrainEpoch(context.Background(), data, nil); err != nil {
			t.Fatal(err)
		}
	}
	full, fullNet := trainer(train.NewReference(o))
	for range 3 {
		epoch(full)
	}
	ck := t.TempDir() + "/ck"
	a, _ := trainer(train.NewDeviceReference(o)) // device, then host, then device
	epoch(a)
	if err := a.SaveCheckpoint(ck); err != nil {
		t.Fatal(err)
	}
	b, _ := trainer(train.NewReference(o))
	if err := b.LoadCheckpoint(ck); err != nil {
		t.Fatal(err)
	}
	epoch(b)
	if err := b.SaveCheckpoint(ck); err != nil {
		t.Fatal(err)
	}
	c, cNet := trainer(train.NewDeviceReference(o))
	if err := c.LoadCheckpoint(ck); err != nil {
		t.Fatal(err)
	}
	epoch(c)
	if err := c.SaveCheckpoint(ck); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "weights", weights(cNet), weights(fullNet))
	sameBits(t, "momentum", c.Opt.Velocity, full.Opt.Velocity)
	sameBits(t, "EMA", c.EMA.Values, full.EMA.Values)
}

// BackendOptions.Device: the CPU backends run on "cpu" only; Sync,
// DeviceOf and MemoryBudget answer for backends with and without a
// device.
func TestDeviceOptions(t *testing.T) {
	for _, name := range train.Backends() {
		if _, err := train.Open(name, train.BackendOptions{Device: "cuda:0"}); !errors.Is(err, train.ErrDevice) {
			t.Errorf("%s on cuda:0: %v, want ErrDevice", name, err)
		}
		b, err := train.Open(name, train.BackendOptions{Device: "cpu", Threads: 1})
		if err != nil {
			t.Fatalf("%s on cpu: %v", name, err)
		}
		if _, ok, _ := train.MemoryBudget(b); ok || train.DeviceOf(b) != "cpu" || train.Sync(b) != nil {
			t.Errorf("%s: a device budget, device %q or a failing Sync", name, train.DeviceOf(b))
		}
		b.Close()
	}
	dev := train.NewDeviceReference(train.BackendOptions{})
	dev.Budget = 123
	if n, ok, err := train.MemoryBudget(dev); n != 123 || !ok || err != nil || train.DeviceOf(dev) != "reference-device" {
		t.Errorf("device reference: budget %d %v %v, device %q", n, ok, err, train.DeviceOf(dev))
	}
	if err := train.Sync(dev); err != nil || dev.Syncs != 1 {
		t.Errorf("Sync: %v, %d syncs", err, dev.Syncs)
	}
}

// A device state's EMA update and swap give EMA.Update's and EMA.Swap's
// bits, warm-up decays included.
func TestStateEMAMatchesHost(t *testing.T) {
	mk := func(b train.Backend) *train.Sequential {
		net, err := train.NewThinNet(b, toyNet, 5)
		if err != nil {
			t.Fatal(err)
		}
		return net
	}
	host, dev := mk(train.NewReference(train.BackendOptions{})), mk(train.NewDeviceReference(train.BackendOptions{}))
	defer host.Close()
	defer dev.Close()
	he, de := &train.EMA{Decay: 0.95, Warmup: true}, &train.EMA{Decay: 0.95, Warmup: true}
	st, err := train.NewDeviceReference(train.BackendOptions{}).NewState(dev.Params(), dev.Buffers(), &train.SGD{}, de)
	if err != nil {
		t.Fatal(err)
	}
	all := func(n train.Layer) []*train.Param { return append(n.Params(), n.Buffers()...) }
	rng := rand.New(rand.NewPCG(8, 9))
	for step := range 4 {
		for i, p := range all(host) { // new weights, the same on both
			for j := range p.Value {
				p.Value[j] = float32(rng.NormFloat64())
			}
			v, _ := st.Tensors(i)
			if err := v.Write(p.Value); err != nil {
				t.Fatal(err)
			}
		}
		he.Update(host)
		decay := min(0.95, (1+float64(step))/(10+float64(step))) // the warm-up's
		if err := st.EMAUpdate(decay, step == 0); err != nil {
			t.Fatal(err)
		}
	}
	he.Swap(host)
	if err := st.EMASwap(); err != nil {
		t.Fatal(err)
	}
	if err := st.Pull(&train.SGD{}, de); err != nil {
		t.Fatal(err)
	}
	var hw, dw [][]float32
	for i, p := range all(host) {
		hw, dw = append(hw, p.Value), append(dw, all(dev)[i].Value)
	}
	sameBits(t, "swapped weights", dw, hw)
	sameBits(t, "swapped average", de.Values, he.Values)
}

// ResNet-18 (residual joints, projection shortcuts, max pooling) trains
// to the same bits on the device path as on the host's.
func TestDeviceResNetMatchesHost(t *testing.T) {
	trainRes := func(b train.Backend) [][]float32 {
		net, err := train.NewResNet18(b, train.ResNetConfig{InChannels: 1, Classes: 3, SmallInput: true, Widths: []int{2, 3, 4, 5}}, 2)
		if err != nil {
			t.Fatal(err)
		}
		defer net.Close()
		tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, WeightDecay: 5e-4}, train.Constant(0.05), 16, 3)
		defer tr.Close()
		tr.EMA = &train.EMA{Decay: 0.9}
		if _, err := tr.TrainEpoch(context.Background(), toyData(48, 6), nil); err != nil {
			t.Fatal(err)
		}
		w := weights(net)
		for _, p := range net.Buffers() {
			w = append(w, p.Value)
		}
		return append(w, tr.EMA.Values...)
	}
	o := train.BackendOptions{Threads: 1}
	sameBits(t, "weights, statistics and average", trainRes(train.NewDeviceReference(o)), trainRes(train.NewReference(o)))
}

// colourData is toyData with three channels of other values each.
func colourData(n int, seed uint64) *train.Images {
	g := toyData(n, seed)
	d := &train.Images{C: 3, H: g.H, W: g.W, Mean: 0.4, Std: 0.25, Labels: g.Labels, Pixels: make([]byte, 3*len(g.Pixels))}
	hw := g.H * g.W
	for i := range n {
		for c := range 3 {
			for p := range hw {
				d.Pixels[(i*3+c)*hw+p] = g.Pixels[i*hw+p] + byte(40*c+p%7)
			}
		}
	}
	return d
}

// Images on a trainer whose devices normalise bytes (ByteInputBackend)
// are fed as their bytes, planar (a quarter of the bytes to copy, no
// float pass on the host), and train to the bits of the float path; on
// a host backend, and for a type that embeds Images to change Fill, the
// stream gives Fill's floats.
func TestImagesAsBytes(t *testing.T) {
	net3 := toyNet
	net3.InChannels = 3
	first := func(b train.Backend, d train.Dataset) train.Batch {
		net, err := train.NewThinNet(b, net3, 5)
		if err != nil {
			t.Fatal(err)
		}
		defer net.Close()
		tr := train.NewTrainer(b, net, &train.SGD{}, train.Constant(0.1), 16, 3)
		defer tr.Close()
		for b, err := range tr.StreamOf(d).Epoch(context.Background(), 0, 0) {
			if err != nil {
				t.Fatal(err)
			}
			b.X, b.Y = slices.Clone(b.X), slices.Clone(b.Y)
			b.Bytes.Pixels = slices.Clone(b.Bytes.Pixels)
			return b
		}
		t.Fatal("no batch")
		return train.Batch{}
	}
	d := colourData(48, 3)
	o := train.BackendOptions{Threads: 1}
	floats, bytes := first(train.NewReference(o), d), first(train.NewDeviceReference(o), d)
	if floats.X == nil || floats.Bytes.Pixels != nil || bytes.X != nil || !bytes.Bytes.CHW || bytes.Bytes.C != 3 {
		t.Fatalf("host backend: floats %v, bytes %v; device: floats %v, bytes %v (chw %v)", floats.X != nil, floats.Bytes.Pixels != nil, bytes.X != nil, bytes.Bytes.Pixels != nil, bytes.Bytes.CHW)
	}
	got := make([]float32, len(floats.X))
	if err := train.NormalizeHWC(got, bytes.Bytes); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "normalised bytes", [][]float32{got}, [][]float32{floats.X})
	if !slices.Equal(bytes.Y, floats.Y) {
		t.Fatalf("labels %v, want %v", bytes.Y, floats.Y)
	}
	if w := first(train.NewDeviceReference(o), nanInput{d, 1 << 30}); w.X == nil {
		t.Fatal("a type embedding Images was fed bytes: its Fill bypassed")
	}
	// Whole runs: the bytes path trains to the float path's bits.
	run := func(b train.Backend) [][]float32 {
		w, err := trainThree(t, b, nil, nil, func(tr *train.Trainer) train.Stream { return tr.StreamOf(d) }, nil)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	sameBits(t, "weights", run(train.NewDeviceReference(o)), run(train.NewReference(o)))
}

// The feeder's work for one ThinNet batch of the table (512 images of
// 3×32×32 from memory): Fill's floats, as a host backend gets them,
// against the planar bytes a device that normalises them gets.
func BenchmarkImagesBatch(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n, batch = 2048, 512
	d := &train.Images{C: 3, H: 32, W: 32, Mean: 0.45, Std: 0.25, Pixels: make([]byte, n*3*32*32), Labels: make([]int, n)}
	for i := range d.Pixels {
		d.Pixels[i] = byte(rng.IntN(256))
	}
	net3 := toyNet
	net3.InChannels = 3
	for _, c := range []struct {
		name string
		b    train.Backend
	}{{"floats", train.NewReference(train.BackendOptions{Threads: 1})}, {"bytes", train.NewDeviceReference(train.BackendOptions{Threads: 1})}} {
		b.Run(c.name, func(b *testing.B) {
			net, err := train.NewThinNet(c.b, net3, 1)
			if err != nil {
				b.Fatal(err)
			}
			defer net.Close()
			tr := train.NewTrainer(c.b, net, &train.SGD{}, train.Constant(0.1), batch, 1)
			defer tr.Close()
			s := tr.StreamOf(d)
			b.SetBytes(batch * 3 * 32 * 32)
			b.ResetTimer()
			for i := 0; i < b.N; {
				for _, err := range s.Epoch(context.Background(), i, 0) {
					if err != nil {
						b.Fatal(err)
					}
					if i++; i == b.N {
						break
					}
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "images/s")
		})
	}
}
