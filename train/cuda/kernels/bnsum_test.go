package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// same16 reports whether a and b hold the same 16-bit values in f (any
// NaN equal to any NaN: which operand's NaN a sum keeps is the compiler's).
func same16(a, b []uint16, f Format) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if ulps16(a[i], b[i], f) != 0 {
			return false
		}
	}
	return true
}

// BatchNorm with a residual block's sum and ReLU folded in (BN.S, BN_ADD:
// ReLU(BatchNorm(x) + s)) against BatchNorm, then add_relu, then the 16-bit
// copy's cast (BN.Copy16, BN_COPY16): the same bits (a NaN any NaN), training (output,
// batch and running statistics) and evaluation, channels-first and from
// channels-last x into float32 channels-first y (its copy channels-last,
// as add_relu_tiles writes it); float32, binary16 and bfloat16 x, a NaN and
// an Inf in x and in s, tiles cut by the channels and the positions.
func TestBNAddReLU(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 71))
	shapes := append(slices.Clone(bnShapes), bnCase{5, 40, 3, 5}, bnCase{2, 33, 6, 6})
	cases := 0
	for _, f := range []Facts{bnFacts[1], H200} {
		for _, cd := range codecs {
			for _, k := range shapes {
				for _, last := range []bool{false, true} {
					n, c, hw := k.n, k.c, k.h*k.w
					nx := n * c * hw
					name := fmt.Sprintf("%+v %s %+v channels-last=%v", f, cd.name, k, last)
					in := bnData(r, k)
					poison(in.X, k)
					in.Format = cd.f
					el := plan(t, H200, Elementwise, int64(nx), 0)
					if cd.f != Float32 {
						in.X16 = make([]uint16, nx)
						if err := cd.to(el, in.X, in.X16); err != nil {
							t.Fatal(err)
						}
						in.X = nil
					}
					in.Stat = make([]float64, StatLen(c, false))
					rows := plan(t, f, PerRow, int64(n*c), int64(hw))
					if last {
						in.NHWC, in.OutNCHW, in.Stat = true, true, make([]float64, StatLen(c, true))
						in.X, in.X16 = toNHWC(in.X, n, c, hw), toNHWC(in.X16, n, c, hw)
						rows = plan(t, f, PerRow, int64(CastTiles(n, c, hw)), TileValues)
					}
					s := specials(r, randn(r, nx, 1))

					// Apart: the BatchNorm, add_relu, the cast.
					apart := bnTrained(t, f, in)
					want := make([]float32, nx)
					if err := AddReLU(el, apart.Y, s, want); err != nil {
						t.Fatal(err)
					}
					ev := apart
					ev.Y = make([]float32, nx)
					if err := BNEval(rows, ev); err != nil {
						t.Fatal(err)
					}
					wantEval := make([]float32, nx)
					if err := AddReLU(el, ev.Y, s, wantEval); err != nil {
						t.Fatal(err)
					}

					for _, copy16 := range []bool{false, true} {
						if copy16 && cd.f == Float32 {
							continue
						}
						cases++
						what := fmt.Sprintf("%s copy=%v", name, copy16)
						fused := in
						fused.S, fused.Stat = s, make([]float64, len(in.Stat))
						if copy16 {
							fused.Copy16 = make([]uint16, nx)
						}
						got := bnTrained(t, f, fused)
						if d := bitDiff(want, got.Y); d != 0 {
							t.Errorf("%s: %d values differ from the BatchNorm, then add_relu", what, d)
						}
						for _, o := range [][3]any{{"batch mean", apart.BatchMean, got.BatchMean}, {"batch variance", apart.BatchVar, got.BatchVar},
							{"running mean", apart.RunningMean, got.RunningMean}, {"running variance", apart.RunningVar, got.RunningVar}} {
							sameBits(t, what+" "+o[0].(string), o[1].([]float32), o[2].([]float32))
						}
						wantCopy := func(y []float32) []uint16 {
							w := make([]uint16, nx)
							if err := cd.to(el, y, w); err != nil {
								t.Fatal(err)
							}
							if last {
								return toNHWC(w, n, c, hw)
							}
							return w
						}
						if copy16 && !same16(got.Copy16, wantCopy(want), cd.f) {
							t.Errorf("%s: the 16-bit copy is not add_relu's output cast", what)
						}

						fe := got
						fe.Y = make([]float32, nx)
						if copy16 {
							fe.Copy16 = make([]uint16, nx)
						}
						if err := BNEval(rows, fe); err != nil {
							t.Fatal(err)
						}
						if d := bitDiff(wantEval, fe.Y); d != 0 {
							t.Errorf("%s: evaluation: %d values differ from the BatchNorm, then add_relu", what, d)
						}
						if copy16 && !same16(fe.Copy16, wantCopy(wantEval), cd.f) {
							t.Errorf("%s: the evaluation's 16-bit copy is not add_relu's output cast", what)
						}
					}
				}
			}
		}
	}
	if cases == 0 {
		t.Fatal("no case ran")
	}
	one := func() BN {
		return BN{N: 1, C: 1, HW: 1, X: []float32{1}, Y: []float32{0}, Gamma: []float32{1}, Beta: []float32{0}, BatchMean: []float32{0},
			BatchVar: []float32{0}, RunningMean: []float32{0}, RunningVar: []float32{1}, S: []float32{2}, Eps: 1e-5}
	}
	bad := map[string]func(*BN){
		"a sum with the ReLU layer folded in": func(b *BN) { b.ReLUOut = true },
		"a sum into 16-bit y":                 func(b *BN) { b.Y, b.Y16, b.Format = nil, []uint16{0}, BFloat16 },
		"a sum of another size":               func(b *BN) { b.S = []float32{1, 2} },
		"a copy without a sum":                func(b *BN) { b.S, b.Copy16, b.Format = nil, []uint16{0}, BFloat16 },
	}
	for what, spoil := range bad {
		b := one()
		spoil(&b)
		if err := BNTrain(H200, b); err == nil {
			t.Errorf("%s: trained", what)
		}
		if err := BNEval(Launch{1, 32}, b); err == nil {
			t.Errorf("%s: evaluated", what)
		}
	}
	b := one()
	if err := BNTrain(H200, b); err != nil || b.Y[0] != 2 {
		t.Errorf("ReLU(BatchNorm(1) + 2) over one value: %v, %v; want 2", b.Y, err)
	}
}
