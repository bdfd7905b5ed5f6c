//go:build cgo

package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/traintest"
)

// roundTo and roundSlice are traintest's rounding (by arithmetic,
// independently of the cast kernels).
var (
	roundTo    = traintest.RoundTo
	roundSlice = traintest.RoundAll
)

// Native bf16 and fp16 (torch.autocast's arithmetic, cuDNN's
// PSEUDO_HALF/PSEUDO_BFLOAT16 and cublasGemmEx): a convolution's y, dx and
// dw are the float32 convolution's on the 16-bit-rounded operands, rounded
// to 16 bits (cuDNN writes 16-bit tensors); a product's are the float32
// product's on rounded operands, unrounded (cublasGemmEx writes float);
// the bias gradient sums the rounded output gradient in float. The twin
// must give exactly that, bit for bit, against the float32 twin on
// operands rounded here. (traintest.RunPrecision asks for float32 outputs
// of convolutions within 1e-5, which 16-bit cuDNN tensors cannot give: see
// doc.go.)
func TestTwinNativePrecision(t *testing.T) {
	f32 := twinBackend(t)
	for _, p := range []train.Precision{train.BFloat16, train.Float16} {
		b, err := OpenTwin(train.BackendOptions{Precision: p})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if got, native := b.(train.PrecisionReporter).Precision(); got != p || !native {
			t.Fatalf("precision %v native %v, want %v native", got, native, p)
		}
		for _, c := range nativeCases {
			t.Run(p.String()+"/"+c.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(9, uint64(len(c.name))))
				x := randSlice(rng, train.Numel(c.in), 2)
				var w, bias []float32
				if c.conv != nil {
					w = randSlice(rng, c.conv.Out*c.conv.In*c.conv.Kernel*c.conv.Kernel, 0.5)
					if c.conv.Bias {
						bias = randSlice(rng, c.conv.Out, 0.5)
					}
				} else {
					w, bias = randSlice(rng, c.lin.Out*c.lin.In, 0.5), randSlice(rng, c.lin.Out, 0.5)
				}
				var dy []float32
				low := nativeRun(t, b, c.in, c.conv, c.lin, x, w, bias, &dy, rng)
				rdy := roundSlice(p, dy)
				// The float32 op without the bias or ReLU, on rounded operands.
				var cs *train.ConvSpec
				var lbias []float32
				if c.conv != nil {
					s := *c.conv
					s.Bias, s.ReLU = false, false
					cs = &s
					if c.conv.ReLU {
						for i := range rdy { // the ReLU's mask, from the low run's output
							if low.y[i] <= 0 {
								rdy[i] = 0
							}
						}
					}
				} else {
					lbias = make([]float32, len(bias))
				}
				pre := nativeRun(t, f32, c.in, cs, c.lin, roundSlice(p, x), roundSlice(p, w), lbias, &rdy, rng)
				out := func(v []float32) []float32 {
					if c.conv != nil {
						return roundSlice(p, v)
					}
					return v
				}
				wantY := out(pre.y)
				if bias != nil {
					hw := len(wantY) / (c.in[0] * len(bias))
					for i := range wantY {
						wantY[i] += bias[(i/hw)%len(bias)]
						if c.conv != nil && c.conv.ReLU && wantY[i] < 0 {
							wantY[i] = 0
						}
					}
				}
				same(t, "y", low.y, wantY)
				same(t, "dx", low.dx, out(pre.dx))
				same(t, "dw", low.dw, out(pre.dw))
				if bias != nil {
					// db sums the rounded (masked) output gradient.
					same(t, "db", low.db, biasGrad(rdy, len(bias), c.in[0]))
				}
				if same16(low.y, pre.y) && c.conv != nil {
					t.Errorf("y is not rounded to %v", p)
				}
			})
		}
	}
}

// nativeCases are the ops checked at bf16 and fp16.
var nativeCases = []struct {
	name string
	in   []int
	conv *train.ConvSpec
	lin  *train.LinearSpec
}{
	{name: "conv3x3_pad", in: []int{2, 3, 7, 7}, conv: &train.ConvSpec{In: 3, Out: 5, Kernel: 3, Pad: 1}},
	{name: "conv3x3_bias_relu", in: []int{2, 16, 6, 6}, conv: &train.ConvSpec{In: 16, Out: 32, Kernel: 3, Bias: true, ReLU: true}},
	{name: "conv1x1_stride2", in: []int{2, 16, 6, 6}, conv: &train.ConvSpec{In: 16, Out: 32, Kernel: 1, Stride: 2}},
	{name: "linear", in: []int{4, 7}, lin: &train.LinearSpec{In: 7, Out: 5}},
	{name: "linear_flatten", in: []int{4, 16, 2, 2}, lin: &train.LinearSpec{In: 64, Out: 10}},
}

// nativeAgainst runs every native case on b and on the twin at b's precision
// and compares: convolutions within one 16-bit ulp of the output's scale
// (cuDNN sums in float in its own order, the twin in double: a rounding
// to 16 bits may land on either side), products within 1e-4 of the scale.
func nativeAgainst(t *testing.T, b train.Backend, p train.Precision) {
	tw, err := OpenTwin(train.BackendOptions{Precision: p})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	ulp := map[train.Precision]float64{train.BFloat16: 0x1p-7, train.Float16: 0x1p-10}[p]
	for _, c := range nativeCases {
		t.Run(p.String()+"/"+c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(len(c.name))))
			x := randSlice(rng, train.Numel(c.in), 2)
			var w, bias []float32
			if c.conv != nil {
				w = randSlice(rng, c.conv.Out*c.conv.In*c.conv.Kernel*c.conv.Kernel, 0.5)
				if c.conv.Bias {
					bias = randSlice(rng, c.conv.Out, 0.5)
				}
			} else {
				w, bias = randSlice(rng, c.lin.Out*c.lin.In, 0.5), randSlice(rng, c.lin.Out, 0.5)
			}
			var dy []float32
			got := nativeRun(t, b, c.in, c.conv, c.lin, x, w, bias, &dy, rng)
			want := nativeRun(t, tw, c.in, c.conv, c.lin, x, w, bias, &dy, rng)
			tol := 1e-4
			if c.conv != nil {
				tol = ulp
			}
			for _, d := range []struct {
				what      string
				got, want []float32
			}{{"y", got.y, want.y}, {"dx", got.dx, want.dx}, {"dw", got.dw, want.dw}, {"db", got.db, want.db}} {
				scale, worst := 0.0, 0.0
				for i := range d.want {
					scale = math.Max(scale, math.Abs(float64(d.want[i])))
					worst = math.Max(worst, math.Abs(float64(d.got[i]-d.want[i])))
				}
				if worst > tol*scale {
					t.Errorf("%s differs from the twin by %.3g (scale %.3g, tolerance %.3g)", d.what, worst, scale, tol*scale)
				}
			}
		})
	}
}

func randSlice(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((r.Float64()*2 - 1) * scale)
	}
	return v
}

// same checks bit equality.
func same(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("%s[%d] = %v, want %v (of %d values)", what, i, got[i], want[i], len(got))
			return
		}
	}
}

func same16(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// biasGrad sums dy (N×K×…) per channel k in float64, rounded once: the
// bias_grad kernel's arithmetic is checked by the kernels' tests; here
// only that its input is the rounded gradient.
func biasGrad(dy []float32, k, n int) []float32 {
	hw := len(dy) / (n * k)
	s := make([]float64, k)
	for i, v := range dy {
		s[(i/hw)%k] += float64(v)
	}
	out := make([]float32, k)
	for i := range s {
		out[i] = float32(s[i])
	}
	return out
}

type nativeOut struct{ y, dx, dw, db []float32 }

func nativeRun(t *testing.T, b train.Backend, in []int, cs *train.ConvSpec, ls *train.LinearSpec, x, w, bias []float32, dy *[]float32, rng *rand.Rand) nativeOut {
	t.Helper()
	xt, err := b.NewTensor(in...)
	if err != nil {
		t.Fatal(err)
	}
	defer xt.Release()
	if err := xt.Write(x); err != nil {
		t.Fatal(err)
	}
	var op interface {
		Forward(x train.Tensor, w, b []float32) (train.Tensor, error)
		Backward(dy train.Tensor, w, dw, db []float32, needDX bool) (train.Tensor, error)
		Close()
	}
	if cs != nil {
		op, err = b.NewConv(*cs)
	} else {
		op, err = b.NewLinear(*ls)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if cs != nil && len(bias) == 0 {
		bias = nil
	}
	yt, err := op.Forward(xt, w, bias)
	if err != nil {
		t.Fatal(err)
	}
	o := nativeOut{y: make([]float32, train.Numel(yt.Shape())), dw: make([]float32, len(w))}
	if err := yt.Read(o.y); err != nil {
		t.Fatal(err)
	}
	if bias != nil {
		o.db = make([]float32, len(bias))
	}
	if *dy == nil {
		*dy = randSlice(rng, len(o.y), 1)
	}
	dyt, err := b.NewTensor(yt.Shape()...)
	if err != nil {
		t.Fatal(err)
	}
	defer dyt.Release()
	if err := dyt.Write(*dy); err != nil {
		t.Fatal(err)
	}
	dxt, err := op.Backward(dyt, w, o.dw, o.db, true)
	if err != nil {
		t.Fatal(err)
	}
	o.dx = make([]float32, train.Numel(dxt.Shape()))
	if err := dxt.Read(o.dx); err != nil {
		t.Fatal(err)
	}
	return o
}
