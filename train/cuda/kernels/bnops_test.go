package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/faster-training/faster/train"
)

// bnShapes: ThinNet's BNs at an eighth of its batch, ResNet-18's first at
// a sixty-fourth, and a plane of one.
var bnShapes = []bnCase{
	{64, 32, 30, 30},
	{16, 128, 4, 4},
	{4, 64, 56, 56},
	{3, 5, 1, 1},
}

// bnTrained is BNTrain planned for f on a copy of in's outputs and
// running statistics (in keeps its own).
func bnTrained(t *testing.T, f Facts, in BN) BN {
	t.Helper()
	got := in
	got.Y, got.BatchMean, got.BatchVar = make([]float32, in.N*in.C*in.HW), make([]float32, in.C), make([]float32, in.C)
	got.RunningMean, got.RunningVar = slices.Clone(in.RunningMean), slices.Clone(in.RunningVar)
	if err := BNTrain(f, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// poison puts a NaN in channel 1 and an Inf in channel 2 of x (where c > 2):
// the reference's sums make those channels NaN; the others must not notice.
func poison(x []float32, k bnCase) {
	if k.c > 2 {
		hw := k.h * k.w
		x[1*hw] = float32(math.NaN())
		x[(k.c+2)*hw%len(x)+0] = float32(math.Inf(1))
	}
}

// bn_train against the reference backend's BatchNorm op (training) and
// train.BatchNorm2D's running statistics: the same double arithmetic
// summed in another order; ≤ 1 ulp, as relu_bn_train.
func TestBNTrainAgainstReference(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 60))
	ref := train.NewReference(train.BackendOptions{})
	for _, k := range bnShapes {
		in := bnData(r, k)
		poison(in.X, k)
		x := tensor(t, ref, in.X, k.n, k.c, k.h, k.w)
		op, _ := ref.NewBatchNorm(train.BatchNormSpec{C: k.c})
		bm, bv := make([]float32, k.c), make([]float32, k.c)
		y := read(t)(op.Forward(x, in.Gamma, in.Beta, bm, bv, true))
		bn, err := train.NewBatchNorm2D(ref, "bn", k.c)
		if err != nil {
			t.Fatal(err)
		}
		copy(bn.Gamma.Value, in.Gamma)
		copy(bn.Beta.Value, in.Beta)
		copy(bn.RunningMean.Value, in.RunningMean)
		copy(bn.RunningVar.Value, in.RunningVar)
		if _, err := bn.Forward(x, true); err != nil {
			t.Fatal(err)
		}
		for _, l := range bnFacts {
			got := bnTrained(t, l, in)
			u := max(compare(got.Y, y).ulps, compare(got.BatchMean, bm).ulps, compare(got.BatchVar, bv).ulps,
				compare(got.RunningMean, bn.RunningMean.Value).ulps, compare(got.RunningVar, bn.RunningVar.Value).ulps)
			if u > 1 {
				t.Errorf("%+v %+v: bn_train %d ulp from the reference", k, l, u)
			}
		}
	}
}

// bn_eval against the reference's eval Forward: the same double
// arithmetic element by element, bit-exact; and, reading ReLU(x) (the
// convolution's ReLU fused in), the reference's ReLU then eval Forward.
func TestBNEvalAgainstReference(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 61))
	ref := train.NewReference(train.BackendOptions{})
	for _, k := range bnShapes {
		for _, relu := range []bool{false, true} {
			in := bnData(r, k)
			specials(r, in.X)
			in.ReLU = relu
			x := tensor(t, ref, in.X, k.n, k.c, k.h, k.w)
			if relu {
				rop, _ := ref.NewReLU()
				var err error
				if x, err = rop.Forward(x); err != nil {
					t.Fatal(err)
				}
			}
			op, _ := ref.NewBatchNorm(train.BatchNormSpec{C: k.c})
			y := read(t)(op.Forward(x, in.Gamma, in.Beta, slices.Clone(in.RunningMean), slices.Clone(in.RunningVar), false))
			for _, l := range launches(t, PerRow, int64(k.n*k.c), int64(k.h*k.w)) {
				got := in
				got.Y = make([]float32, len(in.X))
				if err := BNEval(l, got); err != nil {
					t.Fatal(err)
				}
				if d := bitDiff(got.Y, y); d != 0 {
					t.Errorf("%+v relu=%v %+v: bn_eval: %d elements differ from the reference", k, relu, l, d)
				}
			}
		}
	}
}

// bn_bwd against the reference's BatchNorm backward (after its training
// Forward) and, with relu_in, its ReLU then BatchNorm backward. The
// reference keeps the batch's mean and 1/σ in double; the kernel has the
// float32 mean and variance the forward wrote, so x̂ differs by about
// 2⁻²⁴(|mean| + σ)/σ: a bound relative to the largest |dx| of the channel
// and to Σ|dy| for the sums (measured at most 1.2e-7; allowed 1e-6).
func TestBNBwdAgainstReference(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 62))
	ref := train.NewReference(train.BackendOptions{})
	for _, k := range bnShapes {
		for _, reluIn := range []bool{false, true} {
			in := bnData(r, k)
			dy := randn(r, len(in.X), 1)
			x := tensor(t, ref, in.X, k.n, k.c, k.h, k.w)
			relu, _ := ref.NewReLU()
			bnIn := x
			if reluIn {
				var err error
				if bnIn, err = relu.Forward(x); err != nil {
					t.Fatal(err)
				}
			}
			op, _ := ref.NewBatchNorm(train.BatchNormSpec{C: k.c})
			bm, bv := make([]float32, k.c), make([]float32, k.c)
			if _, err := op.Forward(bnIn, in.Gamma, in.Beta, bm, bv, true); err != nil {
				t.Fatal(err)
			}
			dg, db := make([]float32, k.c), make([]float32, k.c)
			dxt, err := op.Backward(tensor(t, ref, dy, k.n, k.c, k.h, k.w), in.Gamma, in.Beta, dg, db)
			if err != nil {
				t.Fatal(err)
			}
			if reluIn {
				dxt, err = relu.Backward(dxt)
			}
			dx := read(t)(dxt, err)
			// Scales: the largest |dx| of each channel, Σ|dy| of each.
			hw := k.h * k.w
			dxMax, dySum := make([]float64, k.c), make([]float64, k.c)
			for i := range dx {
				ch := (i / hw) % k.c
				dxMax[ch] = max(dxMax[ch], math.Abs(float64(dx[i])))
				dySum[ch] += math.Abs(float64(dy[i]))
			}
			worst := 0.0
			for _, l := range bnFacts {
				g := BNGrad{DY: dy, X: in.X, Gamma: in.Gamma, BatchMean: bm, BatchVar: bv,
					DX: make([]float32, len(dy)), DGamma: make([]float32, k.c), DBeta: make([]float32, k.c),
					N: k.n, C: k.c, HW: hw, Eps: 1e-5, ReLUIn: reluIn}
				if err := BNBwd(l, g); err != nil {
					t.Fatal(err)
				}
				for i := range dx {
					ch := (i / hw) % k.c
					if reluIn && !(in.X[i] > 0) && math.Float32bits(g.DX[i]) != 0 {
						t.Fatalf("%+v: dx[%d] = %v where the ReLU masked (x %v)", k, i, g.DX[i], in.X[i])
					}
					worst = max(worst, math.Abs(float64(g.DX[i])-float64(dx[i]))/max(dxMax[ch], 1e-30))
				}
				for ch := range k.c {
					worst = max(worst, math.Abs(float64(g.DGamma[ch])-float64(dg[ch]))/dySum[ch],
						math.Abs(float64(g.DBeta[ch])-float64(db[ch]))/dySum[ch])
				}
			}
			t.Logf("%+v relu_in=%v: bn_bwd within %.2g (relative) of the reference", k, reluIn, worst)
			if worst > 1e-6 {
				t.Errorf("%+v relu_in=%v: bn_bwd %.2g (relative) from the reference", k, reluIn, worst)
			}
		}
	}
}

// BatchNorm's statistics where the channel's mean lies far from 0 (10 to
// 10⁵ standard deviations): bn_plane_sum sums the values less the
// channel's first value, so the variance's E[(r-k)²] - E[r-k]² cancels
// little and the output stays within an ulp of the reference's two
// passes (a plain E[r²] - E[r]² gave 44 ulp at 10³σ, 2·10⁵ at 10⁵σ). A
// channel whose first value is Inf sums unshifted: the reference's Inf
// mean.
func TestBNTrainFarFromZero(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 63))
	ref := train.NewReference(train.BackendOptions{})
	k := bnCase{16, 8, 30, 30}
	for _, off := range []float32{10, 1e3, 1e5} {
		in := bnData(r, k)
		for i := range in.X {
			in.X[i] += off
		}
		in.X[3*k.h*k.w] = float32(math.Inf(1)) // channel 3's first value
		op, _ := ref.NewBatchNorm(train.BatchNormSpec{C: k.c})
		bm, bv := make([]float32, k.c), make([]float32, k.c)
		y := read(t)(op.Forward(tensor(t, ref, in.X, k.n, k.c, k.h, k.w), in.Gamma, in.Beta, bm, bv, true))
		for _, f := range bnFacts {
			got := bnTrained(t, f, in)
			if !math.IsInf(float64(got.BatchMean[3]), 1) || !math.IsInf(float64(bm[3]), 1) {
				t.Errorf("offset %g: channel 3's mean %v, the reference's %v; want +Inf", off, got.BatchMean[3], bm[3])
			}
			u := max(compare(got.Y, y).ulps, compare(got.BatchMean, bm).ulps, compare(got.BatchVar, bv).ulps)
			if u > 1 {
				t.Errorf("offset %g (%+v): %d ulp from the reference", off, f, u)
			}
		}
	}
}

// An empty batch reads nothing: the statistics' shift (the channel's
// first value) is not read from a tensor that has none, and the batch's
// mean is 0/0, as the sums give it.
func TestBNTrainEmpty(t *testing.T) {
	needCPU(t)
	for _, k := range []bnCase{{0, 3, 2, 2}, {2, 3, 0, 0}} {
		in := BN{N: k.n, C: k.c, HW: k.h * k.w, Eps: 1e-5, Momentum: 0.1, Gamma: make([]float32, k.c), Beta: make([]float32, k.c),
			RunningMean: make([]float32, k.c), RunningVar: make([]float32, k.c)}
		got := bnTrained(t, small, in)
		for ch, m := range got.BatchMean {
			if !math.IsNaN(float64(m)) {
				t.Errorf("%+v: channel %d's mean %v, want NaN (0/0)", k, ch, m)
			}
		}
	}
}

// BatchNorm over 16-bit tensors read and written as they are — x (and
// dx) a convolution's 16-bit output (and input gradient), y (and dy) the
// next convolution's 16-bit input (and its gradient) — against the
// float32 kernels over the same values widened: the same bits in every
// output, a 16-bit output the float32 one rounded (what the cast after it
// made of it), in binary16 and bfloat16, with and without the ReLU, NaN
// and Inf in.
func TestBN16BitInput(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 64))
	f := bnFacts[len(bnFacts)-1]
	for _, cd := range codecs[1:] {
		// round is v in 16 bits; narrowed is v rounded and widened back.
		round := func(v []float32) []uint16 {
			h := make([]uint16, len(v))
			if err := cd.to(plan(t, H200, Elementwise, int64(len(v)), 0), v, h); err != nil {
				t.Fatal(err)
			}
			return h
		}
		widen := func(h []uint16) []float32 {
			v := make([]float32, len(h))
			if err := cd.from(plan(t, H200, Elementwise, int64(len(h)), 0), h, v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		same16 := func(what string, want []float32, got []uint16) {
			t.Helper()
			w := round(want)
			for j := range w {
				if w[j] != got[j] {
					t.Fatalf("%s: [%d] = %#04x, the float32 %v rounded %#04x", what, j, got[j], want[j], w[j])
				}
			}
		}
		for _, k := range bnShapes {
			for _, relu := range []bool{false, true} {
				for _, io := range []struct{ x, y bool }{{true, false}, {false, true}, {true, true}} {
					name := fmt.Sprintf("%s %+v relu=%v x16=%v y16=%v", cd.name, k, relu, io.x, io.y)
					in := bnData(r, k)
					poison(in.X, k)
					in.ReLU = relu
					nx := len(in.X)
					x16 := round(in.X)
					in.X = widen(x16)
					low := in
					low.Format = cd.f
					if io.x {
						low.X, low.X16 = nil, x16
					}
					if io.y {
						low.Y16 = make([]uint16, nx)
					}
					want, got := bnTrained(t, f, in), bnTrained(t, f, low)
					if io.y {
						same16(name+" train y", want.Y, got.Y16)
					} else {
						sameBits(t, name+" train y", want.Y, got.Y)
					}
					for _, o := range [][3]any{{"batch mean", want.BatchMean, got.BatchMean},
						{"batch variance", want.BatchVar, got.BatchVar}, {"running mean", want.RunningMean, got.RunningMean},
						{"running variance", want.RunningVar, got.RunningVar}} {
						sameBits(t, fmt.Sprintf("%s train %s", name, o[0]), o[1].([]float32), o[2].([]float32))
					}

					ev, evLow := in, low
					ev.Y, evLow.Y = make([]float32, nx), make([]float32, nx)
					if io.y {
						evLow.Y16 = make([]uint16, nx)
					}
					rows := plan(t, f, PerRow, int64(k.n*k.c), int64(k.h*k.w))
					if err := BNEval(rows, ev); err != nil {
						t.Fatal(err)
					}
					if err := BNEval(rows, evLow); err != nil {
						t.Fatal(err)
					}
					if io.y {
						same16(name+" eval y", ev.Y, evLow.Y16)
					} else {
						sameBits(t, name+" eval y", ev.Y, evLow.Y)
					}

					dy16 := round(randn(r, nx, 1))
					g := BNGrad{DY: widen(dy16), X: in.X, Gamma: in.Gamma, BatchMean: want.BatchMean, BatchVar: want.BatchVar,
						DX: make([]float32, nx), DGamma: make([]float32, k.c), DBeta: make([]float32, k.c),
						N: k.n, C: k.c, HW: k.h * k.w, Eps: in.Eps, ReLUIn: relu}
					gl := g
					gl.Format, gl.DX, gl.DGamma, gl.DBeta = cd.f, make([]float32, nx), make([]float32, k.c), make([]float32, k.c)
					if io.x {
						gl.X, gl.DX, gl.X16, gl.DX16 = nil, nil, x16, make([]uint16, nx)
					}
					if io.y {
						gl.DY, gl.DY16 = nil, dy16
					}
					if err := BNBwd(f, g); err != nil {
						t.Fatal(err)
					}
					if err := BNBwd(f, gl); err != nil {
						t.Fatal(err)
					}
					if io.x {
						same16(name+" backward dx", g.DX, gl.DX16)
					} else {
						sameBits(t, name+" backward dx", g.DX, gl.DX)
					}
					sameBits(t, name+" dgamma", g.DGamma, gl.DGamma)
					sameBits(t, name+" dbeta", g.DBeta, gl.DBeta)
				}
			}
		}
	}
}

// codec is a 16-bit format with its casts (Float32: none).
type codec struct {
	f    Format
	to   func(Launch, []float32, []uint16) error
	from func(Launch, []uint16, []float32) error
	name string
}

var codecs = []codec{{Float32, nil, nil, "fp32"}, {Float16, CastF32F16, CastF16F32, "fp16"}, {BFloat16, CastF32BF16, CastBF16F32, "bf16"}}

// sameBits fails unless a and b hold the same float32 bits.
func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values, want %d", what, len(b), len(a))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s: [%d] = %v, want %v", what, i, b[i], a[i])
		}
	}
}

// BatchNorm with the ReLU after it folded in (ReLUOut) against BatchNorm
// then relu_fwd, and backward relu_bwd then BatchNorm's backward: the same
// bits, the backward's mask computed again from the forward's statistics;
// in float32 and with y (and dy) in bfloat16 and binary16, with and without
// the ReLU before it, NaN and Inf in.
func TestBNReLUOut(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 65))
	f := bnFacts[len(bnFacts)-1]
	for _, cd := range codecs {
		for _, k := range bnShapes {
			for _, relu := range []bool{false, true} {
				name := fmt.Sprintf("%s %+v relu_in=%v", cd.name, k, relu)
				in := bnData(r, k)
				poison(in.X, k)
				in.ReLU = relu
				nx := len(in.X)
				el := plan(t, f, Elementwise, int64(nx), 0)
				conv := func(to func(Launch, []float32, []uint16) error, v []float32) []uint16 {
					h := make([]uint16, len(v))
					if err := to(el, v, h); err != nil {
						t.Fatal(err)
					}
					return h
				}
				// The layers apart: BatchNorm, relu_fwd.
				want := bnTrained(t, f, in)
				yr := make([]float32, nx)
				if err := ReLUFwd(el, want.Y, yr); err != nil {
					t.Fatal(err)
				}
				folded := in
				folded.ReLUOut, folded.Stat = true, make([]float64, 2*k.c)
				if cd.f != Float32 {
					folded.Format, folded.Y16 = cd.f, make([]uint16, nx)
				}
				got := bnTrained(t, f, folded)
				if cd.f != Float32 {
					if w := conv(cd.to, yr); !slices.Equal(w, got.Y16) {
						t.Fatalf("%s: the folded 16-bit y is not relu(y) rounded", name)
					}
				} else {
					sameBits(t, name+" y", yr, got.Y)
				}
				sameBits(t, name+" running mean", want.RunningMean, got.RunningMean)

				ev, evf := in, folded
				evr := make([]float32, nx)
				ev.Y, evf.Y = make([]float32, nx), make([]float32, nx)
				if cd.f != Float32 {
					evf.Y16 = make([]uint16, nx)
				}
				rows := plan(t, f, PerRow, int64(k.n*k.c), int64(k.h*k.w))
				if err := BNEval(rows, ev); err != nil {
					t.Fatal(err)
				}
				if err := ReLUFwd(el, ev.Y, evr); err != nil {
					t.Fatal(err)
				}
				if err := BNEval(rows, evf); err != nil {
					t.Fatal(err)
				}
				if cd.f != Float32 {
					if w := conv(cd.to, evr); !slices.Equal(w, evf.Y16) {
						t.Fatalf("%s: the folded 16-bit evaluation y is not relu(y) rounded", name)
					}
				} else {
					sameBits(t, name+" eval y", evr, evf.Y)
				}

				dy := randn(r, nx, 1)
				var dy16 []uint16
				if cd.f != Float32 {
					dy16 = conv(cd.to, dy)
					if err := cd.from(el, dy16, dy); err != nil {
						t.Fatal(err)
					}
				}
				dym := make([]float32, nx)
				if err := ReLUBwd(el, dy, yr, dym); err != nil {
					t.Fatal(err)
				}
				g := BNGrad{DY: dym, X: in.X, Gamma: in.Gamma, BatchMean: want.BatchMean, BatchVar: want.BatchVar,
					DX: make([]float32, nx), DGamma: make([]float32, k.c), DBeta: make([]float32, k.c),
					N: k.n, C: k.c, HW: k.h * k.w, Eps: in.Eps, ReLUIn: relu}
				gf := g
				gf.DY, gf.DY16, gf.Format, gf.Beta, gf.Stat, gf.ReLUOut = dy, dy16, cd.f, in.Beta, got.Stat, true
				gf.DX, gf.DGamma, gf.DBeta = make([]float32, nx), make([]float32, k.c), make([]float32, k.c)
				if err := BNBwd(f, g); err != nil {
					t.Fatal(err)
				}
				if err := BNBwd(f, gf); err != nil {
					t.Fatal(err)
				}
				sameBits(t, name+" dx", g.DX, gf.DX)
				sameBits(t, name+" dgamma", g.DGamma, gf.DGamma)
				sameBits(t, name+" dbeta", g.DBeta, gf.DBeta)
			}
		}
	}
}
