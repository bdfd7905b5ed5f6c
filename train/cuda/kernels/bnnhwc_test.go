package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// toNHWC is v (n×c×hw, channels first) laid out channels last (nil
// for nil).
func toNHWC[T any](v []T, n, c, hw int) []T { return relayout(v, n, c, hw, true) }

// toNCHW is toNHWC's inverse.
func toNCHW[T any](v []T, n, c, hw int) []T { return relayout(v, n, c, hw, false) }

func relayout[T any](v []T, n, c, hw int, last bool) []T {
	if v == nil {
		return nil
	}
	out := make([]T, len(v))
	for b := range n {
		for ch := range c {
			for p := range hw {
				first, l := (b*c+ch)*hw+p, (b*hw+p)*c+ch
				if last {
					out[l] = v[first]
				} else {
					out[first] = v[l]
				}
			}
		}
	}
	return out
}

// ulps16 is how many 16-bit values (binary16 or bfloat16: both sign and
// magnitude) lie between a and b; 0 for two NaNs.
func ulps16(a, b uint16, f Format) int64 {
	nan := func(h uint16) bool {
		if f == BFloat16 {
			return h&0x7f80 == 0x7f80 && h&0x7f != 0
		}
		return h&0x7c00 == 0x7c00 && h&0x3ff != 0
	}
	if nan(a) || nan(b) {
		if nan(a) && nan(b) {
			return 0
		}
		return math.MaxInt32
	}
	ord := func(h uint16) int64 {
		if h&0x8000 != 0 {
			return -int64(h & 0x7fff)
		}
		return int64(h)
	}
	return abs64(ord(a) - ord(b))
}

// within1 fails when a 16-bit (or float32) output of the channels-last
// kernels, laid out channels first again, is more than an ulp from the
// channels-first kernels'.
func within1(t *testing.T, what string, f Format, want, got []float32, want16, got16 []uint16) {
	t.Helper()
	if f != Float32 && want16 != nil {
		for i := range want16 {
			if u := ulps16(want16[i], got16[i], f); u > 1 {
				t.Fatalf("%s: [%d] = %#04x, channels first %#04x (%d ulp)", what, i, got16[i], want16[i], u)
			}
		}
		return
	}
	if d := compare(want, got); d.ulps > 1 {
		t.Fatalf("%s: [%d] = %v, channels first %v (%d ulp)", what, d.at, got[d.at], want[d.at], d.ulps)
	}
}

// BatchNorm over channels-last tensors (BN_NHWC: the channels-last
// convolutions' 16-bit operands passed as they are) against the
// channels-first kernels on the same values: each value's arithmetic is
// theirs, only the sums' order differs, so the statistics and every
// output are within an ulp (float32 or 16-bit), evaluation (no sums) has
// the same bits, and the backward's 1/σ (stat[4c]) is the one the
// channels-first backward computes from the float32 variance, bit for
// bit. Fed the same statistics, the backward's outputs are within an
// ulp too. In float32, binary16 and bfloat16, with the ReLU before it or
// the ReLU after it folded in, a NaN and an Inf in, channels that fill
// BN_LANES, part of it, and more than one group of it.
func TestBNNHWC(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 66))
	shapes := append(slices.Clone(bnShapes), bnCase{5, 40, 3, 5}, bnCase{2, 3, 7, 9})
	for _, f := range []Facts{bnFacts[1], H200} {
		for _, cd := range codecs {
			for _, k := range shapes {
				for _, act := range []struct{ in, out bool }{{false, false}, {true, false}, {false, true}} {
					name := fmt.Sprintf("%+v %s %+v relu_in=%v relu_out=%v", f, cd.name, k, act.in, act.out)
					n, c, hw := k.n, k.c, k.h*k.w
					nx := n * c * hw
					in := bnData(r, k)
					poison(in.X, k)
					in.ReLU, in.ReLUOut, in.Format = act.in, act.out, cd.f
					el := plan(t, H200, Elementwise, int64(nx), 0)
					var x16 []uint16
					if cd.f != Float32 {
						x16 = make([]uint16, nx)
						if err := cd.to(el, in.X, x16); err != nil {
							t.Fatal(err)
						}
						in.X, in.X16, in.Y16 = nil, x16, make([]uint16, nx)
					}
					in.Stat = make([]float64, StatLen(c, false))
					want := bnTrained(t, f, in)

					last := in
					last.NHWC, last.Stat = true, make([]float64, StatLen(c, true))
					if in.X != nil {
						last.X = toNHWC(in.X, n, c, hw)
					} else {
						last.X16, last.Y16 = toNHWC(x16, n, c, hw), make([]uint16, nx)
					}
					got := bnTrained(t, f, last)
					var gy16 []uint16
					if got.Y16 != nil {
						gy16 = toNCHW(got.Y16, n, c, hw)
					}
					within1(t, name+" y", cd.f, want.Y, toNCHW(got.Y, n, c, hw), want.Y16, gy16)
					for _, o := range [][3]any{{"batch mean", want.BatchMean, got.BatchMean},
						{"batch variance", want.BatchVar, got.BatchVar}, {"running mean", want.RunningMean, got.RunningMean},
						{"running variance", want.RunningVar, got.RunningVar}} {
						within1(t, name+" "+o[0].(string), Float32, o[1].([]float32), o[2].([]float32), nil, nil)
					}
					for ch := range c {
						inv := 1.0 / math.Sqrt(float64(got.BatchVar[ch])+float64(in.Eps))
						if g := got.Stat[4*c+ch]; math.Float64bits(g) != math.Float64bits(inv) && !(math.IsNaN(g) && math.IsNaN(inv)) {
							t.Fatalf("%s: stat[4c+%d] = %v, want 1/sqrt(float32 var + eps) = %v", name, ch, g, inv)
						}
					}

					// Evaluation: element by element, the same bits.
					ev, evl := want, got
					ev.Y, evl.Y = make([]float32, nx), make([]float32, nx)
					if cd.f != Float32 {
						ev.Y16, evl.Y16 = make([]uint16, nx), make([]uint16, nx)
					}
					if err := BNEval(plan(t, f, PerRow, int64(n*c), int64(hw)), ev); err != nil {
						t.Fatal(err)
					}
					if err := BNEval(plan(t, f, PerRow, int64(BNRuns(n, c, hw)), TileValues), evl); err != nil {
						t.Fatal(err)
					}
					if cd.f != Float32 {
						if !slices.Equal(ev.Y16, toNCHW(evl.Y16, n, c, hw)) {
							t.Fatalf("%s: channels-last evaluation differs", name)
						}
					} else {
						sameBits(t, name+" eval y", ev.Y, toNCHW(evl.Y, n, c, hw))
					}

					// Backward from the channels-first forward's statistics.
					dy := randn(r, nx, 1)
					g := BNGrad{DY: dy, X: in.X, X16: in.X16, Gamma: in.Gamma, Beta: in.Beta, BatchMean: want.BatchMean,
						BatchVar: want.BatchVar, DGamma: make([]float32, c), DBeta: make([]float32, c), Stat: want.Stat,
						N: n, C: c, HW: hw, Eps: in.Eps, ReLUIn: act.in, ReLUOut: act.out, Format: cd.f}
					if cd.f != Float32 {
						g.DY16 = make([]uint16, nx)
						if err := cd.to(el, dy, g.DY16); err != nil {
							t.Fatal(err)
						}
						g.DY, g.DX16 = nil, make([]uint16, nx)
					} else {
						g.DX = make([]float32, nx)
					}
					gl := g
					gl.NHWC, gl.Stat = true, make([]float64, StatLen(c, true))
					copy(gl.Stat, want.Stat)
					for ch := range c {
						gl.Stat[4*c+ch] = 1.0 / math.Sqrt(float64(want.BatchVar[ch])+float64(in.Eps))
					}
					gl.DGamma, gl.DBeta = make([]float32, c), make([]float32, c)
					if g.DY != nil {
						gl.DY, gl.X, gl.DX = toNHWC(g.DY, n, c, hw), toNHWC(g.X, n, c, hw), make([]float32, nx)
					} else {
						gl.DY16, gl.X16, gl.DX16 = toNHWC(g.DY16, n, c, hw), toNHWC(g.X16, n, c, hw), make([]uint16, nx)
					}
					if err := BNBwd(f, g); err != nil {
						t.Fatal(err)
					}
					if err := BNBwd(f, gl); err != nil {
						t.Fatal(err)
					}
					var gdx16 []uint16
					if gl.DX16 != nil {
						gdx16 = toNCHW(gl.DX16, n, c, hw)
					}
					within1(t, name+" dx", cd.f, g.DX, toNCHW(gl.DX, n, c, hw), g.DX16, gdx16)
					within1(t, name+" dgamma", Float32, g.DGamma, gl.DGamma, nil, nil)
					within1(t, name+" dbeta", Float32, g.DBeta, gl.DBeta, nil, nil)
				}
			}
		}
	}
}

// The channels-last passes' rows, as Go plans them and as kernels.cu
// counts them, and the backward's refusal without the forward's 1/σ.
func TestBNNHWCRuns(t *testing.T) {
	needCPU(t)
	for _, k := range []struct{ n, c, hw int }{{1, 1, 1}, {256, 64, 3136}, {3, 40, 15}, {2, 2048, 49}, {7, 1025, 3}, {0, 3, 4}} {
		if g, w := BNRuns(k.n, k.c, k.hw), bnNHWCRuns(k.n, k.c, k.hw); g != w {
			t.Errorf("%+v: BNRuns %d, kernels.cu %d", k, g, w)
		}
	}
	b := BNGrad{N: 1, C: 2, HW: 1, NHWC: true, Stat: make([]float64, 4), DY: make([]float32, 2), X: make([]float32, 2),
		DX: make([]float32, 2), Gamma: make([]float32, 2), BatchMean: make([]float32, 2), BatchVar: make([]float32, 2),
		DGamma: make([]float32, 2), DBeta: make([]float32, 2)}
	if err := BNBwd(H200, b); err == nil {
		t.Error("a channels-last backward with 2·c statistics ran")
	}
}

// BatchNorm from channels-last values into float32 channels-first y
// (OutNCHW: the BatchNorm after a channels-last convolution whose output
// goes to an add or a pool, the cast back in its own passes) against the
// channels-first kernels on the same values: within an ulp, evaluation
// bit for bit, and the backward from float32 channels-first dy into
// channels-last dx within an ulp; float32, binary16 and bfloat16 x, the
// ReLU before or after it, tiles cut by the channels and the positions.
func TestBNNHWCToNCHW(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 67))
	shapes := append(slices.Clone(bnShapes), bnCase{5, 40, 3, 5}, bnCase{2, 3, 7, 9}, bnCase{2, 33, 6, 6})
	for _, f := range []Facts{bnFacts[1], H200} {
		for _, cd := range codecs {
			for _, k := range shapes {
				for _, act := range []struct{ in, out bool }{{false, false}, {true, false}, {false, true}} {
					name := fmt.Sprintf("%+v %s %+v relu_in=%v relu_out=%v", f, cd.name, k, act.in, act.out)
					n, c, hw := k.n, k.c, k.h*k.w
					nx := n * c * hw
					in := bnData(r, k)
					poison(in.X, k)
					in.ReLU, in.ReLUOut, in.Format = act.in, act.out, cd.f
					el := plan(t, H200, Elementwise, int64(nx), 0)
					if cd.f != Float32 {
						in.X16 = make([]uint16, nx)
						if err := cd.to(el, in.X, in.X16); err != nil {
							t.Fatal(err)
						}
						in.X = nil
					}
					in.Stat = make([]float64, StatLen(c, false))
					want := bnTrained(t, f, in)
					last := in
					last.NHWC, last.OutNCHW, last.Stat = true, true, make([]float64, StatLen(c, true))
					last.X, last.X16 = toNHWC(in.X, n, c, hw), toNHWC(in.X16, n, c, hw)
					got := bnTrained(t, f, last)
					within1(t, name+" y", Float32, want.Y, got.Y, nil, nil)
					for _, o := range [][3]any{{"batch mean", want.BatchMean, got.BatchMean},
						{"batch variance", want.BatchVar, got.BatchVar}, {"running variance", want.RunningVar, got.RunningVar}} {
						within1(t, name+" "+o[0].(string), Float32, o[1].([]float32), o[2].([]float32), nil, nil)
					}

					ev, evl := want, got
					ev.Y, evl.Y = make([]float32, nx), make([]float32, nx)
					if err := BNEval(plan(t, f, PerRow, int64(n*c), int64(hw)), ev); err != nil {
						t.Fatal(err)
					}
					if err := BNEval(plan(t, f, PerRow, int64(CastTiles(n, c, hw)), TileValues), evl); err != nil {
						t.Fatal(err)
					}
					sameBits(t, name+" eval y", ev.Y, evl.Y)

					g := BNGrad{DY: randn(r, nx, 1), X: in.X, X16: in.X16, Gamma: in.Gamma, Beta: in.Beta, BatchMean: want.BatchMean,
						BatchVar: want.BatchVar, DGamma: make([]float32, c), DBeta: make([]float32, c), Stat: want.Stat,
						N: n, C: c, HW: hw, Eps: in.Eps, ReLUIn: act.in, ReLUOut: act.out, Format: cd.f}
					if cd.f != Float32 {
						g.DX16 = make([]uint16, nx)
					} else {
						g.DX = make([]float32, nx)
					}
					gl := g
					gl.NHWC, gl.OutNCHW, gl.Stat = true, true, make([]float64, StatLen(c, true))
					copy(gl.Stat, want.Stat)
					for ch := range c {
						gl.Stat[4*c+ch] = 1.0 / math.Sqrt(float64(want.BatchVar[ch])+float64(in.Eps))
					}
					gl.DGamma, gl.DBeta = make([]float32, c), make([]float32, c)
					gl.X, gl.X16 = toNHWC(g.X, n, c, hw), toNHWC(g.X16, n, c, hw)
					if g.DX != nil {
						gl.DX = make([]float32, nx)
					} else {
						gl.DX16 = make([]uint16, nx)
					}
					if err := BNBwd(f, g); err != nil {
						t.Fatal(err)
					}
					if err := BNBwd(f, gl); err != nil {
						t.Fatal(err)
					}
					within1(t, name+" dx", cd.f, g.DX, toNCHW(gl.DX, n, c, hw), g.DX16, toNCHW(gl.DX16, n, c, hw))
					within1(t, name+" dgamma", Float32, g.DGamma, gl.DGamma, nil, nil)
					within1(t, name+" dbeta", Float32, g.DBeta, gl.DBeta, nil, nil)
				}
			}
		}
	}
	if err := BNTrain(H200, BN{N: 1, C: 1, HW: 1, OutNCHW: true, X: []float32{1}, Y: []float32{0}, Gamma: []float32{1}, Beta: []float32{0},
		BatchMean: []float32{0}, BatchVar: []float32{0}, RunningMean: []float32{0}, RunningVar: []float32{1}}); err == nil {
		t.Error("OutNCHW without NHWC ran")
	}
}
