package traintest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/faster-training/faster/train"
)

// roundTo rounds v to precision p (round to nearest, ties to even), by
// arithmetic rather than bit tricks so that it checks the backends'
// rounding independently: bf16 keeps 8 significant bits (subnormal below
// 2^-126), fp16 11 (subnormal below 2^-14, ±Inf beyond ±65504).
func roundTo(p train.Precision, v float32) float32 {
	return RoundTo(p, v)
}

// RoundTo is roundTo, for other packages' tests (the cuda backend's
// native 16-bit arithmetic is checked with it).
func RoundTo(p train.Precision, v float32) float32 {
	f := float64(v)
	if p == train.Float32 || f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return v
	}
	bits, minExp, maxFinite := 8, -126, math.MaxFloat32
	if p == train.Float16 {
		bits, minExp, maxFinite = 11, -14, 65504
	}
	_, e := math.Frexp(f) // |f| = m·2^e, m in [0.5, 1)
	q := math.Ldexp(1, max(e-1, minExp)-(bits-1))
	r := math.RoundToEven(f/q) * q
	if math.Abs(r) > maxFinite {
		return float32(math.Inf(int(math.Copysign(1, f))))
	}
	return float32(r)
}

func roundAll(p train.Precision, v []float32) []float32 { return RoundAll(p, v) }

// RoundAll is RoundTo of each element, in a new slice.
func RoundAll(p train.Precision, v []float32) []float32 {
	out := make([]float32, len(v))
	for i, e := range v {
		out[i] = RoundTo(p, e)
	}
	return out
}

// precCase is a convolution or linear op at one input shape.
type precCase struct {
	name string
	in   []int
	conv *train.ConvSpec
	lin  *train.LinearSpec
}

var precCases = []precCase{
	{name: "conv3x3_pad_bias", in: []int{2, 3, 7, 7}, conv: &train.ConvSpec{In: 3, Out: 5, Kernel: 3, Pad: 1, Bias: true}},
	{name: "conv3x3_blocked", in: []int{2, 16, 6, 6}, conv: &train.ConvSpec{In: 16, Out: 32, Kernel: 3}},
	{name: "conv1x1_stride2_blocked", in: []int{2, 16, 6, 6}, conv: &train.ConvSpec{In: 16, Out: 32, Kernel: 1, Stride: 2}},
	{name: "linear", in: []int{4, 7}, lin: &train.LinearSpec{In: 7, Out: 5}},
	{name: "linear_flatten", in: []int{4, 16, 2, 2}, lin: &train.LinearSpec{In: 64, Out: 10}},
}

// weightedOp is what train.ConvOp and train.LinearOp have in common.
type weightedOp interface {
	Forward(x train.Tensor, w, b []float32) (train.Tensor, error)
	Backward(dy train.Tensor, w, dw, db []float32, needDX bool) (train.Tensor, error)
	Close()
}

// opRun is one op's forward and backward results.
type opRun struct{ y, dx, dw, db []float32 }

// runOp runs c's op on b with input x, weights w, bias bias and output
// gradient *dy (drawn from rng on first use).
func runOp(t *testing.T, b train.Backend, c precCase, x, w, bias []float32, dy *[]float32, rng *rand.Rand) opRun {
	t.Helper()
	xt := tensor(t, b, c.in, x)
	defer xt.Release()
	var op weightedOp
	if c.conv != nil {
		op = must(b.NewConv(*c.conv))
	} else {
		op = must(b.NewLinear(*c.lin))
	}
	defer op.Close()
	yt := must(op.Forward(xt, w, bias))
	out := opRun{y: read(t, yt), dw: make([]float32, len(w))}
	if bias != nil {
		out.db = make([]float32, len(bias))
	}
	if *dy == nil {
		*dy = make([]float32, len(out.y))
		randomise(*dy, rng, -1, 1)
	}
	dyt := tensor(t, b, yt.Shape(), *dy)
	defer dyt.Release()
	out.dx = read(t, must(op.Backward(dyt, w, out.dw, out.db, true)))
	return out
}

func compareRuns(t *testing.T, what string, got, want opRun, tol float64) {
	t.Helper()
	closeTo(t, what+" y", got.y, want.y, tol)
	closeTo(t, what+" dx", got.dx, want.dx, tol)
	closeTo(t, what+" dw", got.dw, want.dw, tol)
	closeTo(t, what+" db", got.db, want.db, tol)
}

// lowCheck compares a reduced-precision backend's results with float32
// ones. A native backend may write a convolution's results in the
// precision itself (cuDNN's legacy API with 16-bit tensors, as
// torch.autocast's convolutions): when it does (rounds: a convolution's
// output without bias holds only values of the precision), its
// convolutions' y, dx and dw are checked against the float32 results
// rounded to the precision: each element within one unit of the
// precision's last place at the value before the bias is added, plus tol
// of the result's scale (the accumulation bound a float32 output is held
// to). A product's results, the bias gradient, and every result of a
// backend that does not round are held to tol of their scale, as before.
type lowCheck struct {
	t      *testing.T
	p      train.Precision
	rounds bool
}

func (c lowCheck) runs(what string, pc precCase, bias []float32, got, want opRun, tol float64) {
	c.t.Helper()
	if !c.rounds || pc.conv == nil {
		compareRuns(c.t, what, got, want, tol)
		return
	}
	pre := want.y
	if bias != nil { // the value cuDNN rounds: y before bias_act adds the bias
		pre = make([]float32, len(want.y))
		plane := len(want.y) / (pc.in[0] * pc.conv.Out)
		for i, v := range want.y {
			pre[i] = v - bias[(i/plane)%pc.conv.Out]
		}
	}
	c.close(what+" y", got.y, want.y, pre, tol)
	c.close(what+" dx", got.dx, want.dx, want.dx, tol)
	c.close(what+" dw", got.dw, want.dw, want.dw, tol)
	closeTo(c.t, what+" db", got.db, want.db, tol)
}

func (c lowCheck) close(what string, got, want, pre []float32, tol float64) {
	c.t.Helper()
	if len(got) != len(want) {
		c.t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	if i, d, ok := beyondLastPlace(c.p, got, want, pre, tol); !ok {
		c.t.Errorf("%s (%v output): differs by %.3g at %d (got %g, want %g: one unit of %v's last place %.3g plus %.3g)",
			what, c.p, d, i, got[i], want[i], c.p, lastPlace(c.p, pre[i]), tol*maxAbs(want))
	}
}

// beyondLastPlace finds the first element of got farther from want than
// one unit of p's last place at pre's value plus tol of want's scale
// (ok: none is).
func beyondLastPlace(p train.Precision, got, want, pre []float32, tol float64) (at int, diff float64, ok bool) {
	scale := maxAbs(want)
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= lastPlace(p, pre[i])+tol*scale) {
			return i, d, false
		}
	}
	return 0, 0, true
}

// roundsConv reports whether b writes a convolution's output in p: a
// bias-free convolution's outputs are all values of p.
func roundsConv(t *testing.T, b train.Backend, p train.Precision) bool {
	c := precCases[1] // conv3x3_blocked: no bias
	rng := rand.New(rand.NewPCG(9, 9))
	x, w := make([]float32, train.Numel(c.in)), make([]float32, c.conv.Out*c.conv.In*c.conv.Kernel*c.conv.Kernel)
	randomise(x, rng, -1, 1)
	randomise(w, rng, -0.5, 0.5)
	var dy []float32
	return representable(p, runOp(t, b, c, x, w, nil, &dy, rng).y)
}

// representable reports whether every value of v is a value of p.
func representable(p train.Precision, v []float32) bool {
	for _, e := range v {
		if roundTo(p, e) != e {
			return false
		}
	}
	return true
}

// lastPlace is one unit of p's last place at v's magnitude (roundTo's
// quantum; the smallest subnormal's at zero).
func lastPlace(p train.Precision, v float32) float64 {
	bits, minExp := 8, -126
	if p == train.Float16 {
		bits, minExp = 11, -14
	}
	e := minExp + 1
	if v != 0 {
		_, e = math.Frexp(float64(v))
	}
	return math.Ldexp(1, max(e-1, minExp)-(bits-1))
}

// relDiff is the largest difference of a and b relative to b's largest
// magnitude.
func relDiff(a, b []float32) float64 {
	worst := 0.0
	for i := range a {
		worst = math.Max(worst, math.Abs(float64(a[i])-float64(b[i])))
	}
	return worst / maxAbs(b)
}

// RunPrecision checks reduced precision (BackendOptions.Precision) on the
// backend open makes: for bf16 and fp16, convolution and linear outputs
// and gradients must equal the float32 op's on input, weights and output
// gradient rounded beforehand (the rounding done here independently), and
// differ from the plain float32 op's (so the rounding happens); fp16
// overflows to Inf at 65520 and keeps subnormals; a backend other than the
// reference must agree with the reference at the same precision.
func RunPrecision(t *testing.T, open func(train.BackendOptions) (train.Backend, error)) {
	f32 := must(open(train.BackendOptions{Threads: 2}))
	defer f32.Close()
	for _, p := range []train.Precision{train.BFloat16, train.Float16} {
		t.Run(p.String(), func(t *testing.T) {
			b := must(open(train.BackendOptions{Threads: 2, Precision: p}))
			defer b.Close()
			pr, ok := b.(train.PrecisionReporter)
			if !ok {
				t.Fatalf("%s backend does not report its precision", b.Name())
			}
			got, native := pr.Precision()
			if got != p {
				t.Fatalf("backend reports precision %v, want %v", got, p)
			}
			t.Logf("%s %v native=%v", b.Name(), got, native)
			rounds := native && roundsConv(t, b, p)
			t.Logf("%s %v: convolution outputs in %v: %v", b.Name(), got, p, rounds)
			var ref train.Backend
			if b.Name() != "reference" {
				ref = train.NewReference(train.BackendOptions{Precision: p})
			}
			// Reduced precision changes results by about 2^-9 (bf16) or
			// 2^-12 (fp16) relative: they must move at least this much.
			minEffect := map[train.Precision]float64{train.BFloat16: 3e-4, train.Float16: 3e-5}[p]
			for _, c := range precCases {
				t.Run(c.name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(5, uint64(len(c.name))))
					x := make([]float32, train.Numel(c.in))
					randomise(x, rng, -1, 1)
					var w, bias []float32
					if c.conv != nil {
						w = make([]float32, c.conv.Out*c.conv.In*c.conv.Kernel*c.conv.Kernel)
						if c.conv.Bias {
							bias = make([]float32, c.conv.Out)
						}
					} else {
						w, bias = make([]float32, c.lin.Out*c.lin.In), make([]float32, c.lin.Out)
					}
					randomise(w, rng, -0.5, 0.5)
					randomise(bias, rng, -0.5, 0.5)
					var dy []float32
					master := append([]float32(nil), w...)
					low := runOp(t, b, c, x, w, bias, &dy, rng)
					if relDiff(w, master) != 0 {
						t.Fatal("the op changed the float32 master weights")
					}
					// The float32 op on pre-rounded values (bias unrounded).
					rdy := roundAll(p, dy)
					pre := runOp(t, f32, c, roundAll(p, x), roundAll(p, w), bias, &rdy, rng)
					check := lowCheck{t: t, p: p, rounds: rounds}
					check.runs("vs float32 on rounded values:", c, bias, low, pre, 1e-5)
					plain := runOp(t, f32, c, x, w, bias, &dy, rng)
					for _, d := range []struct {
						what      string
						got, want []float32
					}{{"y", low.y, plain.y}, {"dx", low.dx, plain.dx}, {"dw", low.dw, plain.dw}} {
						if e := relDiff(d.got, d.want); e < minEffect {
							t.Errorf("%v %s differs from float32 by %.3g relative: want at least %.3g (no rounding?)", p, d.what, e, minEffect)
						}
					}
					if ref != nil {
						check.runs("vs reference:", c, bias, low, runOp(t, ref, c, x, w, bias, &dy, rng), 1e-4)
					}
				})
			}
		})
	}
	t.Run("bf16_chain", func(t *testing.T) {
		// Two convolutions: the second's input is the first's output, in
		// whatever layout the backend gives it (blocked for oneDNN), and
		// belongs to the first. Rounding the intermediate activations can
		// flip an element by one bf16 step where the backends' float32
		// results straddle a rounding boundary, hence the looser tolerance.
		b := must(open(train.BackendOptions{Threads: 2, Precision: train.BFloat16}))
		defer b.Close()
		got := convChain(t, b)
		want := convChain(t, train.NewReference(train.BackendOptions{Precision: train.BFloat16}))
		pr, _ := b.(train.PrecisionReporter)
		check := lowCheck{t: t, p: train.BFloat16}
		if pr != nil {
			_, native := pr.Precision()
			check.rounds = native && roundsConv(t, b, train.BFloat16)
		}
		for i := range want {
			if check.rounds { // results written in bf16: within one unit of the reference's
				check.close(fmt.Sprintf("chain result %d", i), got[i], want[i], want[i], 1e-3)
			} else {
				closeTo(t, fmt.Sprintf("chain result %d", i), got[i], want[i], 1e-3)
			}
		}
	})
	t.Run("fp16_range", func(t *testing.T) {
		b := must(open(train.BackendOptions{Threads: 2, Precision: train.Float16}))
		defer b.Close()
		// y = x·1: the rounded input.
		c := precCase{name: "identity", in: []int{4, 1}, lin: &train.LinearSpec{In: 1, Out: 1}}
		x := []float32{65519, 65520, -70000, 1e-7}
		dy := []float32{1, 1, 1, 1}
		r := runOp(t, b, c, x, []float32{1}, []float32{0}, &dy, nil)
		want := []float32{65504, float32(math.Inf(1)), float32(math.Inf(-1)), 2 * 0x1p-24}
		for i := range want {
			if r.y[i] != want[i] || roundTo(train.Float16, x[i]) != want[i] {
				t.Errorf("fp16 of %g: backend %g, test's rounding %g, want %g", x[i], r.y[i], roundTo(train.Float16, x[i]), want[i])
			}
		}
		if !math.IsInf(float64(r.dw[0]), 0) && !math.IsNaN(float64(r.dw[0])) {
			t.Errorf("fp16 weight gradient %g over an overflowed input: want Inf or NaN", r.dw[0])
		}
		bb := must(open(train.BackendOptions{Threads: 2, Precision: train.BFloat16}))
		defer bb.Close()
		r = runOp(t, bb, c, x, []float32{1}, []float32{0}, &dy, nil)
		for i, v := range r.y {
			if want := roundTo(train.BFloat16, x[i]); v != want || math.IsInf(float64(v), 0) {
				t.Errorf("bf16 of %g: %g, want %g (finite)", x[i], v, want)
			}
		}
	})
}

// convChain runs conv(16→16, 3×3, pad 1) twice, forward and backward,
// and returns the output, the input gradient and the weight gradients.
func convChain(t *testing.T, b train.Backend) [][]float32 {
	rng := rand.New(rand.NewPCG(17, 17))
	shape := []int{2, 16, 5, 5}
	x := make([]float32, train.Numel(shape))
	randomise(x, rng, -1, 1)
	xt := tensor(t, b, shape, x)
	defer xt.Release()
	spec := train.ConvSpec{In: 16, Out: 16, Kernel: 3, Pad: 1}
	var ops [2]train.ConvOp
	var ws, dws [2][]float32
	for i := range ops {
		ops[i] = must(b.NewConv(spec))
		defer ops[i].Close()
		ws[i], dws[i] = make([]float32, 16*16*9), make([]float32, 16*16*9)
		randomise(ws[i], rng, -0.3, 0.3)
	}
	y := must(ops[1].Forward(must(ops[0].Forward(xt, ws[0], nil)), ws[1], nil))
	out := read(t, y)
	dy := make([]float32, len(out))
	randomise(dy, rng, -1, 1)
	dyt := tensor(t, b, y.Shape(), dy)
	defer dyt.Release()
	dx := read(t, must(ops[0].Backward(must(ops[1].Backward(dyt, ws[1], dws[1], nil, true)), ws[0], dws[0], nil, true)))
	return [][]float32{out, dx, dws[0], dws[1]}
}
