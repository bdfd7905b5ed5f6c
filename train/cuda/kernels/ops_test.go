package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/faster-training/faster/train"
)

// The kernels of the layers against the reference backend's ops (or the Go
// code train runs), each at a ThinNet-like and a ResNet-like shape and
// over several launches: the striding must not change a bit.

// launches are the launches each test runs: odd grids and every block
// size, and the plans for a small device and the H200.
func launches(t *testing.T, s Shape, items, size int64) []Launch {
	t.Helper()
	return []Launch{{1, 32}, {3, 64}, {5, 128}, {2, 256}, plan(t, small, s, items, size), plan(t, H200, s, items, size)}
}

// specials puts NaN, ±Inf and ±0 at about one element in every 50 of s.
func specials(r *rand.Rand, s []float32) []float32 {
	vals := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1))}
	for i := range s {
		if r.IntN(50) == 0 {
			s[i] = vals[r.IntN(len(vals))]
		}
	}
	return s
}

// bitDiff counts the elements whose bits differ (any NaN equals any NaN).
func bitDiff(a, b []float32) int {
	if len(a) != len(b) {
		return max(len(a), len(b))
	}
	n := 0
	for i := range a {
		if a[i] != a[i] && b[i] != b[i] {
			continue
		}
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			n++
		}
	}
	return n
}

func tensor(t *testing.T, ref *train.Reference, data []float32, shape ...int) train.Tensor {
	t.Helper()
	x, err := ref.NewTensor(shape...)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Write(data); err != nil {
		t.Fatal(err)
	}
	return x
}

// read returns a function reading an op's result: read(t)(op.Forward(…)).
func read(t *testing.T) func(train.Tensor, error) []float32 {
	return func(x train.Tensor, err error) []float32 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		n := 1
		for _, d := range x.Shape() {
			n *= d
		}
		s := make([]float32, n)
		if err := x.Read(s); err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// nchw are the element-wise tests' shapes: a ThinNet activation at an
// eighth of its batch and a ResNet-18 one at a sixty-fourth of its.
var nchw = []struct {
	name       string
	n, c, h, w int
}{
	{"thinnet", 64, 32, 30, 30},
	{"resnet", 4, 64, 56, 56},
}

func TestReLUAgainstReference(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 50))
	ref := train.NewReference(train.BackendOptions{})
	for _, s := range nchw {
		size := s.n * s.c * s.h * s.w
		x, dy := specials(r, randn(r, size, 1)), specials(r, randn(r, size, 1))
		op, _ := ref.NewReLU()
		y := read(t)(op.Forward(tensor(t, ref, x, s.n, s.c, s.h, s.w)))
		dx := read(t)(op.Backward(tensor(t, ref, dy, s.n, s.c, s.h, s.w)))
		for _, l := range launches(t, Elementwise, int64(size), 0) {
			gy, gdx := make([]float32, size), make([]float32, size)
			if err := ReLUFwd(l, x, gy); err != nil {
				t.Fatal(err)
			}
			if err := ReLUBwd(l, dy, gy, gdx); err != nil {
				t.Fatal(err)
			}
			if d1, d2 := bitDiff(gy, y), bitDiff(gdx, dx); d1+d2 != 0 {
				t.Errorf("%s %+v: relu_fwd %d, relu_bwd %d elements differ from the reference", s.name, l, d1, d2)
			}
		}
		// The conv's fused ReLU masks on its output: the same dx.
		conv, err := ref.NewConv(train.ConvSpec{In: 3, Out: 4, Kernel: 1, ReLU: true})
		if err != nil {
			t.Fatal(err)
		}
		cx := specials(r, randn(r, 2*3*9*9, 1))
		w := randn(r, 4*3, 1)
		cy := read(t)(conv.Forward(tensor(t, ref, cx, 2, 3, 9, 9), w, nil))
		cdy := specials(r, randn(r, len(cy), 1))
		// The reference's fused conv backward masks dy where its output y
		// > 0 is false: relu_bwd on that y gives the same mask.
		gdx := make([]float32, len(cy))
		if err := ReLUBwd(Launch{3, 64}, cdy, cy, gdx); err != nil {
			t.Fatal(err)
		}
		for i := range cy {
			want := float32(0)
			if cy[i] > 0 {
				want = cdy[i]
			}
			if bitDiff([]float32{gdx[i]}, []float32{want}) != 0 {
				t.Fatalf("relu_bwd at %d: y %v dy %v: %v, want %v", i, cy[i], cdy[i], gdx[i], want)
			}
		}
	}
}

// add and add_relu against the reference's Add (then ReLU), and
// add_relu_bwd against its Add then ReLU backward, bit for bit (NaN, ±Inf
// and ±0 in), into a new tensor and in place.
func TestAddAgainstReference(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 51))
	ref := train.NewReference(train.BackendOptions{})
	for _, k := range []struct {
		name string
		run  func(Launch, []float32, []float32, []float32) error
		relu bool
	}{{"add", Add, false}, {"add_relu", AddReLU, true}} {
		for _, s := range nchw {
			size := s.n * s.c * s.h * s.w
			a, b := specials(r, randn(r, size, 1)), specials(r, randn(r, size, 1))
			add, _ := ref.NewAdd()
			want, err := add.Forward(tensor(t, ref, a, s.n, s.c, s.h, s.w), tensor(t, ref, b, s.n, s.c, s.h, s.w))
			if err != nil {
				t.Fatal(err)
			}
			if k.relu {
				relu, _ := ref.NewReLU()
				want, err = relu.Forward(want)
			}
			w := read(t)(want, err)
			sum := read(t)(add.Forward(tensor(t, ref, a, s.n, s.c, s.h, s.w), tensor(t, ref, b, s.n, s.c, s.h, s.w)))
			for _, l := range launches(t, Elementwise, int64(size), 0) {
				y := make([]float32, size)
				if err := k.run(l, a, b, y); err != nil {
					t.Fatal(err)
				}
				inplace := slices.Clone(a)
				if err := k.run(l, inplace, b, inplace); err != nil {
					t.Fatal(err)
				}
				if d1, d2 := bitDiff(y, w), bitDiff(inplace, w); d1+d2 != 0 {
					t.Errorf("%s %s %+v: %d elements differ from the reference (%d in place)", k.name, s.name, l, d1, d2)
				}
			}
			if k.relu {
				continue
			}
			// add_relu_bwd: the reference's ReLU backward of the sum, the
			// ReLU's output y of another tensor (the block before's).
			relu, _ := ref.NewReLU()
			y := read(t)(relu.Forward(tensor(t, ref, specials(r, randn(r, size, 1)), s.n, s.c, s.h, s.w)))
			wdx := read(t)(relu.Backward(tensor(t, ref, sum, s.n, s.c, s.h, s.w)))
			for _, l := range launches(t, Elementwise, int64(size), 0) {
				dx := make([]float32, size)
				if err := AddReLUBwd(l, a, b, y, dx); err != nil {
					t.Fatal(err)
				}
				inplace := slices.Clone(b)
				if err := AddReLUBwd(l, a, inplace, y, inplace); err != nil {
					t.Fatal(err)
				}
				if d1, d2 := bitDiff(dx, wdx), bitDiff(inplace, wdx); d1+d2 != 0 {
					t.Errorf("add_relu_bwd %s %+v: %d elements differ from the reference's add then ReLU backward (%d in place)", s.name, l, d1, d2)
				}
			}
		}
	}
}

// convCases: ThinNet's first convolution (3→32, 3×3, on 32×32 at an
// eighth of its batch) and a ResNet-18 1×1 projection (64→128, stride 2).
var convCases = []struct {
	name                   string
	n, ci, co, h, w, k, st int
}{
	{"thinnet", 16, 3, 32, 32, 32, 3, 1},
	{"resnet", 2, 64, 128, 28, 28, 1, 2},
}

// bias_act after the reference's convolution without bias against the
// reference's convolution with bias (and fused ReLU): the reference adds
// the bias in its double accumulator, the kernel in float32 after the
// product's rounding. The bound, in ulps u of m = max(|conv|, |bias|)
// (where the sum cancels its own ulps are no measure): the product's
// rounding ½u, the kernel's sum's ½ulp(≤ 2m) = u, the reference's
// rounding u: 2.5u; measured 2u.
// Against the float32 twin (float32(y)+b, then max(·, 0)): bit-exact.
func TestBiasActAgainstReference(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 52))
	ref := train.NewReference(train.BackendOptions{})
	for _, k := range convCases {
		x := randn(r, k.n*k.ci*k.h*k.w, 1)
		w := randn(r, k.co*k.ci*k.k*k.k, 0.3)
		bias := randn(r, k.co, 1)
		for _, relu := range []bool{false, true} {
			plain, _ := ref.NewConv(train.ConvSpec{In: k.ci, Out: k.co, Kernel: k.k, Stride: k.st})
			y0 := read(t)(plain.Forward(tensor(t, ref, x, k.n, k.ci, k.h, k.w), w, nil))
			fused, _ := ref.NewConv(train.ConvSpec{In: k.ci, Out: k.co, Kernel: k.k, Stride: k.st, Bias: true, ReLU: relu})
			want := read(t)(fused.Forward(tensor(t, ref, x, k.n, k.ci, k.h, k.w), w, bias))
			hw := len(y0) / (k.n * k.co)
			twin := make([]float32, len(y0))
			for i, v := range y0 {
				v += bias[(i/hw)%k.co]
				if relu {
					v = max(v, 0)
				}
				twin[i] = v
			}
			for _, l := range launches(t, Elementwise, int64(len(y0)), 0) {
				got := slices.Clone(y0)
				if err := BiasAct(l, got, bias, k.co, hw, relu); err != nil {
					t.Fatal(err)
				}
				if d := bitDiff(got, twin); d != 0 {
					t.Errorf("%s relu=%v %+v: %d elements differ from the float32 twin", k.name, relu, l, d)
				}
				if worst := biasULP(got, want, y0, bias, hw); worst > 2.5 {
					t.Errorf("%s relu=%v %+v: %.2f ulp (of max(|conv|, |bias|)) from the reference's fused bias", k.name, relu, l, worst)
				}
			}
		}
	}
	// After a matrix product: hw = 1, c = the outputs; and without a bias.
	lin, _ := ref.NewLinear(train.LinearSpec{In: 64, Out: 10})
	x, w, b := randn(r, 32*64, 1), randn(r, 10*64, 0.2), randn(r, 10, 1)
	y := read(t)(lin.Forward(tensor(t, ref, x, 32, 64), w, b))
	y0 := read(t)(lin.Forward(tensor(t, ref, x, 32, 64), w, make([]float32, 10)))
	got := slices.Clone(y0)
	if err := BiasAct(Launch{2, 32}, got, b, 10, 1, false); err != nil {
		t.Fatal(err)
	}
	if worst := biasULP(got, y, y0, b, 1); worst > 2.5 {
		t.Errorf("linear: %.2f ulp (of max(|product|, |bias|)) from the reference's bias", worst)
	}
	neg := specials(r, randn(r, 1000, 1))
	got = slices.Clone(neg)
	if err := BiasAct(Launch{3, 32}, got, nil, 7, 5, true); err != nil {
		t.Fatal(err)
	}
	for i, v := range neg {
		if bitDiff([]float32{got[i]}, []float32{max(v, 0)}) != 0 {
			t.Fatalf("bias_act without bias, relu, at %d: %v → %v", i, v, got[i])
		}
	}
}

// biasULP is the largest |got - want| in ulps of max(|y0|, |bias|), y0 the
// product without bias.
func biasULP(got, want, y0, bias []float32, hw int) float64 {
	worst := 0.0
	for i := range got {
		scale := max(math.Abs(float64(y0[i])), math.Abs(float64(bias[(i/hw)%len(bias)])))
		ulp := float64(math.Nextafter32(float32(scale), float32(math.Inf(1)))) - scale
		worst = max(worst, math.Abs(float64(got[i])-float64(want[i]))/ulp)
	}
	return worst
}

// bias_grad against the reference's conv and linear bias gradients: both
// sum in double, in another order; measured: equal, at most 1 ulp allowed.
func TestBiasGradAgainstReference(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 53))
	ref := train.NewReference(train.BackendOptions{})
	for _, k := range convCases {
		conv, _ := ref.NewConv(train.ConvSpec{In: k.ci, Out: k.co, Kernel: k.k, Stride: k.st, Bias: true})
		x := randn(r, k.n*k.ci*k.h*k.w, 1)
		w, b := randn(r, k.co*k.ci*k.k*k.k, 0.3), randn(r, k.co, 1)
		y := read(t)(conv.Forward(tensor(t, ref, x, k.n, k.ci, k.h, k.w), w, b))
		dy := randn(r, len(y), 1)
		hw := len(y) / (k.n * k.co)
		dw, db := make([]float32, len(w)), make([]float32, k.co)
		oh := train.ConvOut(k.h, k.k, k.st, 0)
		if _, err := conv.Backward(tensor(t, ref, dy, k.n, k.co, oh, oh), w, dw, db, false); err != nil {
			t.Fatal(err)
		}
		worst := int64(0)
		for _, l := range launches(t, PerChannel, int64(k.co), int64(k.n*hw)) {
			got := make([]float32, k.co)
			if err := BiasGrad(l, dy, got, k.n, k.co, hw); err != nil {
				t.Fatal(err)
			}
			worst = max(worst, compare(got, db).ulps)
		}
		t.Logf("%s: bias_grad %d ulp from the reference", k.name, worst)
		if worst > 1 {
			t.Errorf("%s: bias_grad %d ulp from the reference", k.name, worst)
		}
	}
	lin, _ := ref.NewLinear(train.LinearSpec{In: 64, Out: 1000})
	x, w, b := randn(r, 256*64, 1), randn(r, 1000*64, 0.1), randn(r, 1000, 1)
	if _, err := lin.Forward(tensor(t, ref, x, 256, 64), w, b); err != nil {
		t.Fatal(err)
	}
	dy := randn(r, 256*1000, 1e-3)
	dw, db := make([]float32, len(w)), make([]float32, 1000)
	if _, err := lin.Backward(tensor(t, ref, dy, 256, 1000), w, dw, db, false); err != nil {
		t.Fatal(err)
	}
	for _, l := range launches(t, PerChannel, 1000, 256) {
		got := make([]float32, 1000)
		if err := BiasGrad(l, dy, got, 256, 1000, 1); err != nil {
			t.Fatal(err)
		}
		if d := compare(got, db); d.ulps > 1 {
			t.Errorf("linear %+v: bias_grad %d ulp from the reference", l, d.ulps)
		}
	}
}

// The residual gradient sum with 16-bit operands (a convolution's input
// gradient as cuDNN wrote it, channels-first or -last) against
// add_relu_bwd on the widened values laid out channels-first: the same
// bits, bf16 and fp16, either operand or both 16-bit, NaN, ±Inf and ±0 in.
func TestAddReLUBwdLow(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 53))
	for _, cd := range codecs[1:] {
		for _, s := range []struct{ n, c, hw int }{{2, 64, 49}, {3, 40, 15}, {1, 3, 1}, {4, 33, 70}} {
			size := s.n * s.c * s.hw
			el := plan(t, H200, Elementwise, int64(size), 0)
			low := func() ([]uint16, []float32) {
				h := make([]uint16, size)
				if err := cd.to(el, specials(r, randn(r, size, 1)), h); err != nil {
					t.Fatal(err)
				}
				v := make([]float32, size)
				if err := cd.from(el, h, v); err != nil {
					t.Fatal(err)
				}
				return h, v
			}
			a16, a := low()
			b16, b := low()
			y := specials(r, randn(r, size, 1))
			for i := range y {
				y[i] = max(y[i], 0)
			}
			want := make([]float32, size)
			if err := AddReLUBwd(el, a, b, y, want); err != nil {
				t.Fatal(err)
			}
			for _, nhwc := range []bool{false, true} {
				for _, which := range []struct{ a, b bool }{{true, false}, {false, true}, {true, true}} {
					sg := SumGrad{A: a, B: b, Y: y, DX: make([]float32, size), Format: cd.f, NHWC: nhwc, N: s.n, C: s.c, HW: s.hw}
					lay := func(h []uint16) []uint16 {
						if nhwc {
							return toNHWC(h, s.n, s.c, s.hw)
						}
						return h
					}
					if which.a {
						sg.A, sg.A16 = nil, lay(a16)
					}
					if which.b {
						sg.B, sg.B16 = nil, lay(b16)
					}
					for _, f := range []Facts{bnFacts[1], H200} {
						if err := AddReLUBwdLow(f, sg); err != nil {
							t.Fatal(err)
						}
						if d := bitDiff(sg.DX, want); d != 0 {
							t.Errorf("%s %+v nhwc=%v a16=%v b16=%v %+v: %d elements differ from add_relu_bwd on the widened values",
								cd.name, s, nhwc, which.a, which.b, f, d)
						}
					}
				}
			}
		}
	}
}

// add_relu with the 16-bit copy for the next block's convolutions: y
// add_relu's bits, y16 y cast (and laid out channels-last) as the
// convolutions' own casts would: bf16 and fp16, NaN, ±Inf and ±0 in.
func TestAddReLULow(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 54))
	for _, cd := range codecs[1:] {
		for _, s := range []struct{ n, c, hw int }{{2, 64, 49}, {3, 40, 15}, {1, 3, 1}, {4, 33, 70}} {
			size := s.n * s.c * s.hw
			el := plan(t, H200, Elementwise, int64(size), 0)
			a, b := specials(r, randn(r, size, 1)), specials(r, randn(r, size, 1))
			want, want16 := make([]float32, size), make([]uint16, size)
			if err := AddReLU(el, a, b, want); err != nil {
				t.Fatal(err)
			}
			if err := cd.to(el, want, want16); err != nil {
				t.Fatal(err)
			}
			for _, nhwc := range []bool{false, true} {
				for _, f := range []Facts{bnFacts[1], H200} {
					y, y16 := make([]float32, size), make([]uint16, size)
					if err := AddReLULow(f, a, b, y, y16, cd.f, nhwc, s.n, s.c, s.hw); err != nil {
						t.Fatal(err)
					}
					w16 := want16
					if nhwc {
						w16 = toNHWC(want16, s.n, s.c, s.hw)
					}
					if d := bitDiff(y, want); d != 0 || !slices.Equal(y16, w16) {
						t.Errorf("%s %+v nhwc=%v %+v: %d values differ from add_relu; the 16-bit copy equal to its cast: %v",
							cd.name, s, nhwc, f, d, slices.Equal(y16, w16))
					}
				}
			}
		}
	}
}
