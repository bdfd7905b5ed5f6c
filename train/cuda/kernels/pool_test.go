package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/faster-training/faster/train"
)

// poolCases: ThinNet's 2×2 max pool (an eighth of its batch), ResNet-18's
// 3×3/2 pad 1 max pool on 112×112 (overlapping windows: an input gathers
// from up to four outputs), and average pools with and without padding,
// odd sizes and both divisor rules.
var poolCases = []struct {
	name       string
	n, c, h, w int
	spec       train.PoolSpec
}{
	{"thinnet max 2x2/2", 64, 32, 30, 30, train.PoolSpec{Kind: train.MaxPool, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2}},
	{"resnet max 3x3/2 pad 1", 4, 64, 112, 112, train.PoolSpec{Kind: train.MaxPool, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
	{"max 3x2/1 pad 1x0", 2, 3, 9, 7, train.PoolSpec{Kind: train.MaxPool, KernelH: 3, KernelW: 2, StrideH: 1, StrideW: 1, PadH: 1}},
	{"thinnet avg 2x2/2", 64, 32, 30, 30, train.PoolSpec{Kind: train.AvgPool, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2}},
	{"resnet avg 3x3/2 pad 1", 4, 64, 56, 56, train.PoolSpec{Kind: train.AvgPool, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
	{"resnet avg 3x3/2 pad 1 exclude", 4, 64, 56, 56, train.PoolSpec{Kind: train.AvgPool, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, ExcludePad: true}},
	{"avg 3x2/1 pad 1x1 exclude", 2, 3, 9, 7, train.PoolSpec{Kind: train.AvgPool, KernelH: 3, KernelW: 2, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, ExcludePad: true}},
	{"avg 7x7 global", 8, 512, 7, 7, train.PoolSpec{Kind: train.AvgPool, KernelH: 7, KernelW: 7, StrideH: 7, StrideW: 7}},
}

// The pools against the reference backend's: its forward's scan (first
// valid element, then strictly greater: ties keep the first, a NaN wins
// only as the first) and divisors, and its backward's float32 scatter in
// the outputs' order, which the gather repeats: bit-exact. The inputs are
// quantised so that windows tie, and hold NaNs, ±Inf and ±0.
func TestPoolAgainstReference(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 70))
	ref := train.NewReference(train.BackendOptions{})
	for _, k := range poolCases {
		x := randn(r, k.n*k.c*k.h*k.w, 2)
		for i := range x {
			x[i] = float32(math.Round(float64(x[i]) * 2)) // ties
		}
		specials(r, x)
		op, err := ref.NewPool(k.spec)
		if err != nil {
			t.Fatal(err)
		}
		y := read(t)(op.Forward(tensor(t, ref, x, k.n, k.c, k.h, k.w), true))
		s := k.spec
		p := Pool{N: k.n, C: k.c, H: k.h, W: k.w, OH: train.ConvOut(k.h, s.KernelH, s.StrideH, s.PadH),
			OW: train.ConvOut(k.w, s.KernelW, s.StrideW, s.PadW), KH: s.KernelH, KW: s.KernelW,
			SH: s.StrideH, SW: s.StrideW, PH: s.PadH, PW: s.PadW, ExcludePad: s.ExcludePad}
		dy := specials(r, randn(r, len(y), 1))
		dx := read(t)(op.Backward(tensor(t, ref, dy, k.n, k.c, p.OH, p.OW)))
		for _, l := range launches(t, PerRow, int64(k.n*k.c), int64(k.h*k.w)) {
			gy, gdx := make([]float32, len(y)), make([]float32, len(dx))
			if s.Kind == train.MaxPool {
				arg := make([]int32, len(y))
				if err := MaxPoolFwd(l, x, gy, arg, p); err != nil {
					t.Fatal(err)
				}
				for o, a := range arg { // arg names the maximum (or the NaN) within the plane
					if a < 0 || int(a) >= k.h*k.w || bitDiff([]float32{x[o/(p.OH*p.OW)*k.h*k.w+int(a)]}, []float32{gy[o]}) != 0 {
						t.Fatalf("%s: output %d: arg %d does not hold y %v", k.name, o, a, gy[o])
					}
				}
				if err := MaxPoolBwd(l, dy, arg, gdx, p); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := AvgPoolFwd(l, x, gy, p); err != nil {
					t.Fatal(err)
				}
				if err := AvgPoolBwd(l, dy, gdx, p); err != nil {
					t.Fatal(err)
				}
			}
			if d1, d2 := bitDiff(gy, y), bitDiff(gdx, dx); d1+d2 != 0 {
				t.Errorf("%s %+v: forward %d, backward %d elements differ from the reference", k.name, l, d1, d2)
			}
		}
	}
}

// The gather covers exactly the windows (pool_range's bounds): on every
// pool of small sizes, windows, strides and paddings, avgpool_bwd against
// the reference's scatter, bit-exact.
func TestPoolGatherRanges(t *testing.T) {
	needCPU(t)
	ref := train.NewReference(train.BackendOptions{})
	r := rand.New(rand.NewPCG(37, 71))
	cases := 0
	for h := 1; h <= 6; h++ {
		for k := 1; k <= 4; k++ {
			for st := 1; st <= 3; st++ {
				for pad := 0; 2*pad <= k; pad++ {
					s := train.PoolSpec{Kind: train.AvgPool, KernelH: k, KernelW: max(1, k-1), StrideH: st, StrideW: 1, PadH: pad, PadW: min(pad, (k-1)/2)}
					w := h + 1
					oh, ow := train.ConvOut(h, s.KernelH, s.StrideH, s.PadH), train.ConvOut(w, s.KernelW, s.StrideW, s.PadW)
					if oh <= 0 || ow <= 0 {
						continue
					}
					op, err := ref.NewPool(s)
					if err != nil {
						t.Fatal(err)
					}
					x := randn(r, 2*h*w, 1)
					if _, err := op.Forward(tensor(t, ref, x, 1, 2, h, w), true); err != nil {
						t.Fatal(err)
					}
					dy := randn(r, 2*oh*ow, 1)
					want := read(t)(op.Backward(tensor(t, ref, dy, 1, 2, oh, ow)))
					p := Pool{N: 1, C: 2, H: h, W: w, OH: oh, OW: ow, KH: s.KernelH, KW: s.KernelW, SH: s.StrideH, SW: s.StrideW, PH: s.PadH, PW: s.PadW}
					got := make([]float32, len(want))
					if err := AvgPoolBwd(Launch{1 + cases%3, 32}, dy, got, p); err != nil {
						t.Fatal(err)
					}
					if d := bitDiff(got, want); d != 0 {
						t.Errorf("pool %+v on %dx%d: %d inputs differ", s, h, w, d)
					}
					cases++
				}
			}
		}
	}
	if cases < 100 {
		t.Fatalf("%d pools checked, want ≥ 100", cases)
	}
	t.Logf("%d pools checked", cases)
}

func TestPoolArgs(t *testing.T) {
	needCPU(t)
	bad := []Pool{{}, {N: 1, C: 1, H: 2, W: 2, OH: 1, OW: 1, KH: 2, KW: 2, SH: 0, SW: 1}, {N: 1, C: 1, H: 2, W: 2, OH: 1, OW: 1, KH: 2, KW: 2, SH: 1, SW: 1, PH: -1}}
	for _, p := range bad {
		if err := AvgPoolFwd(Launch{1, 32}, make([]float32, 64), make([]float32, 64), p); err == nil {
			t.Errorf("pool %+v: no error", p)
		}
	}
	p := Pool{N: 1, C: 1, H: 4, W: 4, OH: 2, OW: 2, KH: 2, KW: 2, SH: 2, SW: 2}
	if err := MaxPoolFwd(Launch{1, 32}, make([]float32, 15), make([]float32, 4), make([]int32, 4), p); err == nil {
		t.Error("short input: no error")
	}
}

// emaNet is a Layer of given tensors, for train.EMA.
type emaNet struct{ params, buffers []*train.Param }

func (e *emaNet) Forward(x train.Tensor, _ bool) (train.Tensor, error)   { return x, nil }
func (e *emaNet) Backward(dy train.Tensor, _ bool) (train.Tensor, error) { return dy, nil }
func (e *emaNet) Params() []*train.Param                                 { return e.params }
func (e *emaNet) Buffers() []*train.Param                                { return e.buffers }
func (e *emaNet) Close()                                                 {}

// ema_update and swap_f32 against train.EMA's Update and Swap on one
// tensor of a ThinNet's and a ResNet-18's size: the first update copies
// (bit-exact); later ones are bit-exact when the decay is a float32 (0.5,
// 0.75); otherwise train.EMA rounds 1−decay from its float64 decay, the
// kernel from the float32 one (the kernel's signature has no other), so
// they differ by |float32(decay) − decay|·|v| (1.3e-8·|v| for 0.999) and
// the roundings, in ulps u of the larger term max(|decay·avg|,
// |(1−decay)·v|) (where the sum cancels its own ulps are no measure):
// (1−decay)·v's on both sides u, train.EMA's 1−decay's ½u, the sums' u:
// 2.5u; measured 2.5u, allowed 3u. Each update starts from the same
// average, so that the differences do not accumulate.
func TestEMAAgainstTrain(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 72))
	for _, size := range []int{330_000, 11_689_512 / 8} {
		for _, c := range []struct {
			decay  float64
			warmup bool
			ulps   float64
		}{{0.75, false, 0}, {0.5, false, 0}, {0.999, false, 3}, {0.9998, true, 3}} {
			p := &train.Param{Name: "w", Shape: []int{size}, Value: specials(r, randn(r, size, 1))}
			net := &emaNet{params: []*train.Param{p}}
			e := &train.EMA{Decay: c.decay, Warmup: c.warmup}
			l := plan(t, small, Elementwise, int64(size), 0)
			if c.decay == 0.5 {
				l = plan(t, H200, Elementwise, int64(size), 0)
			}
			avg := make([]float32, size)
			worst := 0.0
			for step := range 4 {
				dec := c.decay // train.EMA's float64 decay of this update
				if c.warmup && step > 0 {
					n := float64(e.Updates)
					dec = min(c.decay, (1+n)/(10+n))
				}
				decay := float32(dec)
				prev := slices.Clone(avg)
				if step > 0 { // one update from the same average: no drift
					copy(e.Values[0], avg)
				}
				e.Update(net)
				if err := EMAUpdate(l, avg, p.Value, decay, step == 0); err != nil {
					t.Fatal(err)
				}
				worst = max(worst, emaULP(avg, e.Values[0], prev, p.Value, dec))
				if step == 0 && bitDiff(avg, p.Value) != 0 {
					t.Fatalf("%d: the first ema_update is not a copy", size)
				}
				p.Value = randn(r, size, 1)
			}
			t.Logf("size %d decay %v warmup %v: %.3g ulp from train.EMA", size, c.decay, c.warmup, worst)
			if worst > c.ulps {
				t.Errorf("size %d decay %v warmup %v: %.3g ulp from train.EMA, want ≤ %v", size, c.decay, c.warmup, worst, c.ulps)
			}
			// Swap: the net gets the average, the average the net's weights.
			w := slices.Clone(p.Value)
			e.Values[0] = slices.Clone(avg)
			e.Swap(net)
			a2, w2 := slices.Clone(avg), slices.Clone(w)
			if err := SwapF32(Launch{3, 64}, a2, w2); err != nil {
				t.Fatal(err)
			}
			if bitDiff(w2, p.Value) != 0 || bitDiff(a2, e.Values[0]) != 0 {
				t.Errorf("size %d: swap_f32 differs from train.EMA's Swap", size)
			}
		}
	}
}

// emaULP is the largest |got - want| less what the float32 decay explains,
// |float32(decay) − decay|·(|v| + |prev|), in ulps of the larger term of
// the update from prev and v (NaN against NaN: 0).
func emaULP(got, want, prev, v []float32, decay float64) float64 {
	dd := math.Abs(float64(float32(decay)) - decay)
	worst := 0.0
	for i := range got {
		if got[i] != got[i] && want[i] != want[i] || got[i] == want[i] {
			continue
		}
		scale := float32(max(math.Abs(decay*float64(prev[i])), math.Abs((1-decay)*float64(v[i])), math.Abs(float64(want[i]))))
		ulp := float64(math.Nextafter32(scale, float32(math.Inf(1))) - scale)
		explained := dd * (math.Abs(float64(v[i])) + math.Abs(float64(prev[i])))
		worst = max(worst, (math.Abs(float64(got[i])-float64(want[i]))-explained)/ulp)
	}
	return worst
}

func TestCopyFill(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 73))
	src := specials(r, randn(r, 100_003, 1))
	for _, l := range launches(t, Elementwise, int64(len(src)), 0) {
		dst := make([]float32, len(src)+1)
		dst[len(src)] = 7
		if err := CopyF32(l, src, dst); err != nil {
			t.Fatal(err)
		}
		if bitDiff(dst[:len(src)], src) != 0 || dst[len(src)] != 7 {
			t.Errorf("%+v: copy_f32 differs or wrote past n", l)
		}
		for _, v := range []float32{-0.0, 1.5, float32(math.Inf(-1))} {
			v = float32(math.Copysign(float64(v), float64(v)))
			if err := FillF32(l, src[:1000], v); err != nil {
				t.Fatal(err)
			}
			for i, got := range src[:1000] {
				if math.Float32bits(got) != math.Float32bits(v) {
					t.Fatalf("%+v: fill_f32(%v) at %d: %v", l, v, i, got)
				}
			}
		}
		src = specials(r, randn(r, len(src), 1))
	}
}
