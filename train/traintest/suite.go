// Package traintest is the conformance suite every train.Backend runs
// (the reference backend in package train's tests, oneDNN in
// train/onednn's): per-layer gradient checks against finite differences,
// agreement with the pure-Go reference backend, and one ThinNet training
// step against PyTorch on the same weights and batch (testdata/
// torch_step.json, written by testdata/gen_torch_step.py).
package traintest

import (
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/faster-training/faster/train"
)

// Case is one layer configuration checked by the suite.
type Case struct {
	Name  string
	In    []int
	Build func(b train.Backend, rng *rand.Rand) (train.Layer, error)
}

func conv(name string, s train.ConvSpec) func(train.Backend, *rand.Rand) (train.Layer, error) {
	return func(b train.Backend, rng *rand.Rand) (train.Layer, error) { return train.NewConv2D(b, name, s, rng) }
}

// Cases covers every layer, at small shapes, with channel counts below and
// at oneDNN's block size (16) so plain and blocked layouts both run.
var Cases = []Case{
	{"conv3x3", []int{2, 3, 7, 7}, conv("c", train.ConvSpec{In: 3, Out: 4, Kernel: 3})},
	{"conv3x3_blocked", []int{2, 16, 6, 6}, conv("c", train.ConvSpec{In: 16, Out: 32, Kernel: 3})},
	{"conv3x3_pad_stride2_bias", []int{2, 3, 7, 7}, conv("c", train.ConvSpec{In: 3, Out: 5, Kernel: 3, Stride: 2, Pad: 1, Bias: true})},
	{"conv1x1_stride2_blocked", []int{2, 16, 6, 6}, conv("c", train.ConvSpec{In: 16, Out: 32, Kernel: 1, Stride: 2})},
	{"conv7x7_stride2_pad3", []int{1, 3, 12, 12}, conv("c", train.ConvSpec{In: 3, Out: 16, Kernel: 7, Stride: 2, Pad: 3})},
	{"conv3x3_relu", []int{2, 3, 7, 7}, conv("c", train.ConvSpec{In: 3, Out: 4, Kernel: 3, ReLU: true})},
	{"conv3x3_relu_blocked", []int{2, 16, 6, 6}, conv("c", train.ConvSpec{In: 16, Out: 16, Kernel: 3, ReLU: true})},
	{"batchnorm", []int{3, 4, 3, 3}, func(b train.Backend, rng *rand.Rand) (train.Layer, error) {
		l, err := train.NewBatchNorm2D(b, "bn", 4)
		if err == nil {
			randomise(l.Gamma.Value, rng, 0.5, 1.5)
			randomise(l.Beta.Value, rng, -0.5, 0.5)
		}
		return l, err
	}},
	{"batchnorm_blocked", []int{2, 16, 3, 3}, func(b train.Backend, rng *rand.Rand) (train.Layer, error) {
		l, err := train.NewBatchNorm2D(b, "bn", 16)
		if err == nil {
			randomise(l.Gamma.Value, rng, 0.5, 1.5)
			randomise(l.Beta.Value, rng, -0.5, 0.5)
		}
		return l, err
	}},
	{"relu", []int{2, 3, 4, 4}, func(b train.Backend, _ *rand.Rand) (train.Layer, error) { return train.NewReLU(b) }},
	{"maxpool3_s2_p1", []int{2, 3, 7, 7}, func(b train.Backend, _ *rand.Rand) (train.Layer, error) { return train.NewMaxPool2D(b, 3, 2, 1) }},
	{"maxpool2_blocked", []int{2, 16, 6, 6}, func(b train.Backend, _ *rand.Rand) (train.Layer, error) { return train.NewMaxPool2D(b, 2, 2, 0) }},
	{"avgpool3_s2_p1", []int{2, 3, 7, 7}, func(b train.Backend, _ *rand.Rand) (train.Layer, error) { return train.NewAvgPool2D(b, 3, 2, 1) }},
	{"adaptive_avgpool2x2", []int{2, 16, 6, 6}, func(b train.Backend, _ *rand.Rand) (train.Layer, error) {
		return train.NewAdaptiveAvgPool2D(b, 2, 2)
	}},
	{"linear", []int{4, 7}, func(b train.Backend, rng *rand.Rand) (train.Layer, error) { return train.NewLinear(b, "fc", 7, 5, rng) }},
	{"linear_flatten_blocked", []int{2, 16, 2, 2}, func(b train.Backend, rng *rand.Rand) (train.Layer, error) {
		return train.NewLinear(b, "fc", 64, 10, rng)
	}},
	{"residual_identity", []int{2, 16, 4, 4}, func(b train.Backend, rng *rand.Rand) (train.Layer, error) {
		c, err := train.NewConv2D(b, "c", train.ConvSpec{In: 16, Out: 16, Kernel: 3, Pad: 1}, rng)
		if err != nil {
			return nil, err
		}
		n, _ := train.NewBatchNorm2D(b, "bn", 16)
		return train.NewResidual(b, &train.Sequential{Layers: []train.Layer{c, n}}, nil)
	}},
	{"residual_projection", []int{2, 3, 6, 6}, func(b train.Backend, rng *rand.Rand) (train.Layer, error) {
		c, err := train.NewConv2D(b, "c", train.ConvSpec{In: 3, Out: 16, Kernel: 3, Stride: 2, Pad: 1}, rng)
		if err != nil {
			return nil, err
		}
		n, _ := train.NewBatchNorm2D(b, "bn", 16)
		d, err := train.NewConv2D(b, "d", train.ConvSpec{In: 3, Out: 16, Kernel: 1, Stride: 2}, rng)
		if err != nil {
			return nil, err
		}
		return train.NewResidual(b, &train.Sequential{Layers: []train.Layer{c, n}}, d)
	}},
	{"conv_relu_bn", []int{2, 16, 6, 6}, func(b train.Backend, rng *rand.Rand) (train.Layer, error) {
		c, err := train.NewConv2D(b, "c", train.ConvSpec{In: 16, Out: 16, Kernel: 3}, rng)
		if err != nil {
			return nil, err
		}
		r, _ := train.NewReLU(b)
		n, err := train.NewBatchNorm2D(b, "bn", 16)
		return &train.Sequential{Layers: []train.Layer{c, r, n}}, err
	}},
}

func randomise(v []float32, rng *rand.Rand, lo, hi float64) {
	for i := range v {
		v[i] = float32(lo + (hi-lo)*rng.Float64())
	}
}

// run holds one layer's forward and backward results.
type run struct {
	y, dx []float32
	grads [][]float32
}

// must unwraps a result; an error is a test bug or a backend failure and
// stops the test (through the panic testing reports).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func read(t testing.TB, x train.Tensor) []float32 {
	t.Helper()
	v := make([]float32, train.Numel(x.Shape()))
	if err := x.Read(v); err != nil {
		t.Fatal(err)
	}
	return v
}

func tensor(t testing.TB, b train.Backend, shape []int, v []float32) train.Tensor {
	t.Helper()
	x := must(b.NewTensor(shape...))
	if err := x.Write(v); err != nil {
		t.Fatal(err)
	}
	return x
}

// forwardBackward runs the case on b with weights from seed, input x and
// output gradient from r (generated on first use, so backends share it).
func forwardBackward(t *testing.T, b train.Backend, c Case, x []float32, r *[]float32) (run, train.Layer, train.Tensor) {
	l := must(c.Build(b, rand.New(rand.NewPCG(7, 7))))
	xt := tensor(t, b, c.In, x)
	yt := must(l.Forward(xt, true))
	var out run
	out.y = read(t, yt)
	if *r == nil {
		rng := rand.New(rand.NewPCG(3, 3))
		*r = make([]float32, len(out.y))
		randomise(*r, rng, -1, 1)
	}
	dy := tensor(t, b, yt.Shape(), *r)
	defer dy.Release()
	dx := must(l.Backward(dy, true))
	out.dx = read(t, dx)
	for _, p := range l.Params() {
		out.grads = append(out.grads, append([]float32(nil), p.Grad...))
	}
	return out, l, xt
}

// maxAbs is the largest magnitude in v (at least 1e-3).
func maxAbs(v []float32) float64 {
	m := 1e-3
	for _, e := range v {
		m = math.Max(m, math.Abs(float64(e)))
	}
	return m
}

// close reports whether got matches want within tol relative to want's
// largest magnitude.
func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := maxAbs(want)
	worst, at := 0.0, 0
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > worst {
			worst, at = d, i
		}
	}
	if worst > tol*scale {
		t.Errorf("%s: differs by %.3g at %d (got %g, want %g; scale %.3g, tolerance %.3g)", what, worst, at, got[at], want[at], scale, tol*scale)
	}
}

// RunLayers checks every Case on b: gradients against central finite
// differences of L = Σ r·y, and (unless b is the reference) outputs and
// gradients against the reference backend.
func RunLayers(t *testing.T, b train.Backend) {
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(len(c.Name))))
			x := make([]float32, train.Numel(c.In))
			randomise(x, rng, -1, 1)
			var r []float32
			got, l, xt := forwardBackward(t, b, c, x, &r)
			defer l.Close()
			defer xt.Release()
			// Finite differences on a sample of inputs and parameters.
			// loss also counts the outputs that are exactly 0 (clamped by a
			// ReLU at the end of the case).
			loss := func() (float64, int) {
				if err := xt.Write(x); err != nil {
					t.Fatal(err)
				}
				y := read(t, must(l.Forward(xt, true)))
				s, zeros := 0.0, 0
				for i := range y {
					s += float64(y[i]) * float64(r[i])
					if y[i] == 0 {
						zeros++
					}
				}
				return s, zeros
			}
			const eps = 1e-3 // small, so ReLU kinks are rarely crossed
			// fd is NaN when a final ReLU's kink lies between the two
			// points (a convolution's weight moves many outputs at once).
			fd := func(v []float32, i int) float64 {
				old := v[i]
				v[i] = old + eps
				up, zu := loss()
				v[i] = old - eps
				down, zd := loss()
				v[i] = old
				if zu != zd {
					return math.NaN()
				}
				return (up - down) / (2 * eps)
			}
			check := func(what string, v, grad []float32) {
				scale := maxAbs(grad)
				for k := range min(len(v), 10) {
					i := rng.IntN(len(v))
					if k == 0 {
						i = 0
					}
					num := fd(v, i)
					if d := math.Abs(num - float64(grad[i])); d > 5e-3*scale+2e-3 && !math.IsNaN(num) {
						t.Errorf("%s[%d]: analytic %g, finite difference %g", what, i, grad[i], num)
					}
				}
			}
			check("dx", x, got.dx)
			for i, p := range l.Params() {
				check(p.Name, p.Value, got.grads[i])
			}
			if b.Name() == "reference" {
				return
			}
			ref := train.NewReference(train.BackendOptions{})
			want, rl, rx := forwardBackward(t, ref, c, x, &r)
			defer rl.Close()
			defer rx.Release()
			closeTo(t, "y vs reference", got.y, want.y, 1e-4)
			closeTo(t, "dx vs reference", got.dx, want.dx, 1e-4)
			for i, p := range rl.Params() {
				closeTo(t, p.Name+" grad vs reference", got.grads[i], want.grads[i], 1e-4)
			}
			// Inference mode (BatchNorm's running statistics, which the
			// finite differences above advanced on b only).
			for i, p := range rl.Buffers() {
				copy(l.Buffers()[i].Value, p.Value)
			}
			if err := xt.Write(x); err != nil {
				t.Fatal(err)
			}
			closeTo(t, "eval y vs reference", read(t, must(l.Forward(xt, false))), read(t, must(rl.Forward(rx, false))), 1e-4)
		})
	}
}

//go:embed testdata/torch_step.json
var torchStep []byte

type torchRef struct {
	Config struct {
		InChannels  int     `json:"in_channels"`
		Classes     int     `json:"classes"`
		Filters     []int   `json:"filters"`
		Blocks      []int   `json:"blocks"`
		Batch       int     `json:"batch"`
		Size        int     `json:"size"`
		LR          float64 `json:"lr"`
		Momentum    float32 `json:"momentum"`
		WeightDecay float32 `json:"weight_decay"`
	} `json:"config"`
	X      string   `json:"x"`
	Labels []int    `json:"labels"`
	Params []string `json:"params"`
	Steps  []struct {
		Loss   float64  `json:"loss"`
		Logits string   `json:"logits"`
		Grads  []string `json:"grads"`
	} `json:"steps"`
	ParamsAfter  []string `json:"params_after"`
	BuffersAfter []string `json:"buffers_after"`
	EvalLogits   string   `json:"eval_logits"`
}

func floats(t testing.TB, s string) []float32 {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw)%4 != 0 {
		t.Fatalf("torch_step.json: bad tensor encoding: %v", err)
	}
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return v
}

// RunTorchStep trains a small ThinNet two SGD steps (momentum, weight
// decay) on b from PyTorch's initial weights and batch, and compares loss,
// logits, gradients, updated weights, running statistics and eval-mode
// logits with PyTorch's.
func RunTorchStep(t *testing.T, b train.Backend) {
	var ref torchRef
	if err := json.Unmarshal(torchStep, &ref); err != nil {
		t.Fatal(err)
	}
	cfg := ref.Config
	net := must(train.NewThinNet(b, train.ThinNetConfig{InChannels: cfg.InChannels, Classes: cfg.Classes, Filters: cfg.Filters, Blocks: cfg.Blocks}, 1))
	defer net.Close()
	params := net.Params()
	if len(params) != len(ref.Params) {
		t.Fatalf("ThinNet has %d parameters, PyTorch %d", len(params), len(ref.Params))
	}
	for i, p := range params {
		v := floats(t, ref.Params[i])
		if len(v) != len(p.Value) {
			t.Fatalf("%s: %d values, PyTorch %d", p.Name, len(p.Value), len(v))
		}
		copy(p.Value, v)
	}
	x := tensor(t, b, []int{cfg.Batch, cfg.InChannels, cfg.Size, cfg.Size}, floats(t, ref.X))
	defer x.Release()
	ce := train.NewCrossEntropy(b)
	defer ce.Close()
	opt := &train.SGD{Momentum: cfg.Momentum, WeightDecay: cfg.WeightDecay}
	for step, want := range ref.Steps {
		logits := must(net.Forward(x, true))
		closeTo(t, fmt.Sprintf("step %d logits", step), read(t, logits), floats(t, want.Logits), 1e-4)
		res, dl, err := ce.Forward(logits, ref.Labels, true)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res.Loss-want.Loss) > 1e-4*math.Max(1, want.Loss) {
			t.Errorf("step %d loss %.6f, PyTorch %.6f", step, res.Loss, want.Loss)
		}
		if _, err := net.Backward(dl, false); err != nil {
			t.Fatal(err)
		}
		for i, g := range want.Grads {
			closeTo(t, fmt.Sprintf("step %d grad %s", step, params[i].Name), params[i].Grad, floats(t, g), 1e-3)
		}
		opt.Step(params, cfg.LR)
	}
	for i, p := range params {
		closeTo(t, "after 2 steps "+p.Name, p.Value, floats(t, ref.ParamsAfter[i]), 1e-4)
	}
	for i, p := range net.Buffers() {
		closeTo(t, "after 2 steps "+p.Name, p.Value, floats(t, ref.BuffersAfter[i]), 1e-4)
	}
	closeTo(t, "eval logits", read(t, must(net.Forward(x, false))), floats(t, ref.EvalLogits), 1e-3)
}

// RunResNet18 runs a training step of ResNet-18 (small-input stem, stage
// widths 16/32/32/64 to keep the reference backend fast, 16×16 inputs,
// batch 4, so every BatchNorm still normalises over ≥ 16 values) on b and
// on the reference backend from the same weights, and compares logits and
// every gradient. (At 1×1 spatial size and batch 2, BatchNorm over two
// values amplifies rounding differences beyond any useful tolerance.)
func RunResNet18(t *testing.T, b train.Backend) {
	cfg := train.ResNetConfig{InChannels: 1, Classes: 10, SmallInput: true, Widths: []int{16, 32, 32, 64}}
	step := func(be train.Backend) (logits []float32, grads [][]float32, loss float64) {
		net := must(train.NewResNet18(be, cfg, 3))
		defer net.Close()
		if n := len(net.Params()); n != 62 {
			t.Fatalf("ResNet-18 has %d parameter tensors, torchvision 62", n)
		}
		rng := rand.New(rand.NewPCG(5, 5))
		xs := make([]float32, 4*16*16)
		randomise(xs, rng, -1, 1)
		x := tensor(t, be, []int{4, 1, 16, 16}, xs)
		defer x.Release()
		y := must(net.Forward(x, true))
		logits = read(t, y)
		ce := train.NewCrossEntropy(be)
		defer ce.Close()
		r, dl, err := ce.Forward(y, []int{3, 7, 0, 9}, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := net.Backward(dl, false); err != nil {
			t.Fatal(err)
		}
		for _, p := range net.Params() {
			grads = append(grads, append([]float32(nil), p.Grad...))
		}
		return logits, grads, r.Loss
	}
	gl, gg, loss := step(b)
	if math.IsNaN(loss) || loss <= 0 {
		t.Fatalf("loss %v", loss)
	}
	if b.Name() == "reference" {
		return
	}
	wl, wg, _ := step(train.NewReference(train.BackendOptions{}))
	closeTo(t, "resnet18 logits", gl, wl, 1e-4)
	for i := range wg {
		closeTo(t, fmt.Sprintf("resnet18 grad %d", i), gg[i], wg[i], 1e-3)
	}
}
