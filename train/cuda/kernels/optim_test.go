package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/train"
)

var sgdConfigs = []struct {
	momentum, wd float32
	nesterov     bool
}{
	{0.9, 5e-4, false},
	{0.9, 5e-4, true},
	{0, 1e-4, false},
	{0.9, 0, false},
}

const (
	sgdSteps = 5
	sgdLR    = 0.1
)

// sgdRun runs sgdSteps steps of the sgd kernel from w0 with the gradients
// grads[step].
func sgdRun(t *testing.T, l Launch, w0 []float32, grads [][]float32, m, wd float32, nesterov bool) []float32 {
	t.Helper()
	w, v := slices.Clone(w0), make([]float32, len(w0))
	for s, g := range grads {
		a := SGDArgs{LR: sgdLR, Momentum: m, WeightDecay: wd, Nesterov: nesterov, First: s == 0}
		if err := SGD(l, w, g, v, a); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func sgdData(n int) ([]float32, [][]float32, []float32) {
	r := rand.New(rand.NewPCG(37, 3))
	w0 := randn(r, n, 0.1)
	var grads [][]float32
	var flat []float32
	for range sgdSteps {
		g := randn(r, n, 0.01)
		grads = append(grads, g)
		flat = append(flat, g...)
	}
	return w0, grads, flat
}

// Five steps of the sgd kernel against torch.optim.SGD (torch 1.13 on the
// CPU: its AVX2 kernels round a+α·b once, as fmaf) on 10,007 parameters
// (not a multiple of a vector: torch's scalar tail too).
func TestSGDAgainstTorch(t *testing.T) {
	needCPU(t)
	const n = 10007
	w0, grads, flat := sgdData(n)
	script := `
w0 = load("w", np.float32)
G = load("g", np.float32).view(` + fmt.Sprint(sgdSteps) + `, -1)
`
	var outs []string
	for i, c := range sgdConfigs {
		script += fmt.Sprintf(`
p = torch.nn.Parameter(w0.clone())
opt = torch.optim.SGD([p], lr=%v, momentum=%v, weight_decay=%v, nesterov=%v)
for s in range(G.shape[0]):
    p.grad = G[s].clone()
    opt.step()
save("w%d", p)
`, sgdLR, c.momentum, c.wd, map[bool]string{true: "True", false: "False"}[c.nesterov], i)
		outs = append(outs, fmt.Sprintf("w%d", i))
	}
	res := torch(t, script, map[string]any{"w": w0, "g": flat}, outs...)
	for i, c := range sgdConfigs {
		got := sgdRun(t, plan(t, small, Elementwise, n, 0), w0, grads, c.momentum, c.wd, c.nesterov)
		d := compare(got, f32s(res[outs[i]]))
		t.Logf("%+v: %d steps vs torch: max %d ulp, %.3g abs", c, sgdSteps, d.ulps, d.abs)
		if d.ulps > 2 {
			t.Errorf("%+v: %d ulp from torch at %d", c, d.ulps, d.at)
		}
	}
}

// The kernel against train.SGD, the Go optimiser (which rounds a+α·b twice
// where torch and the kernel round once): after five steps within 1e-7
// absolute (weights of about 0.1, whose ulp is 7.5e-9; the ulp distance is
// large only for weights near 0).
func TestSGDAgainstTrain(t *testing.T) {
	needCPU(t)
	const n = 4099
	w0, grads, _ := sgdData(n)
	for _, c := range sgdConfigs {
		got := sgdRun(t, plan(t, H200, Elementwise, n, 0), w0, grads, c.momentum, c.wd, c.nesterov)
		p := &train.Param{Name: "w", Shape: []int{n}, Value: slices.Clone(w0)}
		o := &train.SGD{Momentum: c.momentum, WeightDecay: c.wd, Nesterov: c.nesterov}
		for _, g := range grads {
			p.Grad = g
			o.Step([]*train.Param{p}, sgdLR)
		}
		d := compare(got, p.Value)
		t.Logf("%+v: vs train.SGD: max %d ulp, %.3g abs", c, d.ulps, d.abs)
		if d.abs > 1e-7 {
			t.Errorf("%+v: %.3g from train.SGD", c, d.abs)
		}
	}
}

// The kernel's own striding: any grid and block give the same bits.
func TestSGDGeometry(t *testing.T) {
	needCPU(t)
	const n = 3001
	w0, grads, _ := sgdData(n)
	want := sgdRun(t, Launch{1, 32}, w0, grads, 0.9, 5e-4, true)
	for _, l := range []Launch{{1, 256}, {7, 64}, {100, 32}, plan(t, H200, Elementwise, n, 0)} {
		if got := sgdRun(t, l, w0, grads, 0.9, 5e-4, true); !slices.Equal(got, want) {
			t.Errorf("launch %+v differs", l)
		}
	}
}

// ampTwin is torch's _amp_foreach_non_finite_check_and_unscale_ (its CUDA
// kernel; torch 1.13 has none on the CPU): found where an input is not
// finite, v·inv unless inv is 1.
func ampTwin(g []float32, inv float32) bool {
	found := false
	for i, v := range g {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			found = true
		}
		if inv != 1 {
			g[i] = v * inv
		}
	}
	return found
}

func TestAMPUnscale(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 4))
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, c := range []struct {
		name string
		bad  []float32
		inv  float32
	}{
		{"finite", nil, 1.0 / 65536},
		{"inf", []float32{inf}, 1.0 / 65536},
		{"-inf", []float32{-inf}, 1.0 / 65536},
		{"nan", []float32{nan}, 1.0 / 65536},
		{"finite, inv 1", nil, 1},
		{"nan, inv 1", []float32{nan}, 1},
		{"overflow after scaling is not found", []float32{3e38}, 4}, // torch checks the input
	} {
		g := randn(r, 5000, 1000)
		for i, b := range c.bad {
			g[1234+i*999] = b
		}
		want := slices.Clone(g)
		wantFound := ampTwin(want, c.inv)
		var found float32
		if err := AMPUnscale(plan(t, small, Elementwise, int64(len(g)), 0), g, &found, c.inv); err != nil {
			t.Fatal(err)
		}
		if (found == 1) != wantFound || (found != 0 && found != 1) {
			t.Errorf("%s: found_inf %v, want %v", c.name, found, wantFound)
		}
		if d := compare(g, want); d.ulps != 0 {
			t.Errorf("%s: %d ulp from the twin", c.name, d.ulps)
		}
	}
}

// normalize_u8 against train.Images.Fill (the CPU engine's normalisation,
// of CHW bytes), bit for bit.
func TestNormalizeU8(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 5))
	const n, c, h, w = 5, 3, 7, 9
	mean, std := float32(0.2860), float32(0.3530)
	hwc := make([]uint8, n*h*w*c)
	for i := range hwc {
		hwc[i] = uint8(r.IntN(256))
	}
	chw := make([]uint8, len(hwc))
	for img := range n {
		for y := range h {
			for x := range w {
				for ch := range c {
					chw[((img*c+ch)*h+y)*w+x] = hwc[((img*h+y)*w+x)*c+ch]
				}
			}
		}
	}
	d := &train.Images{Pixels: chw, Labels: make([]int, n), C: c, H: h, W: w, Mean: mean, Std: std}
	want := make([]float32, len(chw))
	d.Fill([]int{0, 1, 2, 3, 4}, want, make([]int, n))
	scale, shift := make([]float32, c), make([]float32, c)
	for i := range c {
		scale[i], shift[i] = 1/(255*std), -mean/std
	}
	got := make([]float32, len(hwc))
	if err := NormalizeU8(plan(t, small, PerRow, int64(n*c), int64(h*w)), hwc, got, scale, shift, n, c, h, w, 0); err != nil {
		t.Fatal(err)
	}
	if dd := compare(got, want); dd.ulps != 0 {
		t.Fatalf("%d ulp from train.Images.Fill at %d", dd.ulps, dd.at)
	}
}

// normalize_u8's division arithmetic against the loader's: augment's
// Normalizer (torchvision's ToTensor and Normalize, as a table) on the
// same pixels, bit for bit, for every byte value and each of three
// channels, and for one channel (a gray image's first statistics).
func TestNormalizeU8Torch(t *testing.T) {
	needCPU(t)
	mean, std := augment.ImageNetMean, augment.ImageNetStd
	norm := augment.NewNormalizer(mean, std)
	for _, c := range []int{3, 1} {
		const n, h, w = 2, 16, 16 // 2×256 pixels: every value in every channel
		hwc := make([]uint8, n*h*w*c)
		for i := range hwc {
			hwc[i] = uint8(i / c) // pixel i/c of the batch, all its channels the same value
			if i/(h*w*c) == 1 {
				hwc[i] = uint8(255 - (i/c)%(h*w)) // the second image backwards
			}
		}
		want := make([]float32, len(hwc))
		for img := range n {
			im := &imgcodec.Image{Width: w, Height: h, Channels: c, Stride: w * c, Pix: hwc[img*h*w*c : (img+1)*h*w*c]}
			if err := norm.CHW(want[img*h*w*c:], im); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]float32, len(hwc))
		if err := NormalizeU8(plan(t, small, PerRow, int64(n*c), int64(h*w)), hwc, got, mean[:c], std[:c], n, c, h, w, NormDiv); err != nil {
			t.Fatal(err)
		}
		if dd := compare(got, want); dd.ulps != 0 {
			t.Fatalf("%d channels: %d ulp from augment.Normalizer at %d", c, dd.ulps, dd.at)
		}
		// And the other arithmetic differs somewhere: the flag is read.
		scale, shift := make([]float32, c), make([]float32, c)
		for i := range c {
			scale[i], shift[i] = 1/(255*std[i]), -mean[i]/std[i]
		}
		other := make([]float32, len(hwc))
		if err := NormalizeU8(plan(t, small, PerRow, int64(n*c), int64(h*w)), hwc, other, scale, shift, n, c, h, w, 0); err != nil {
			t.Fatal(err)
		}
		if compare(other, want).ulps == 0 {
			t.Fatalf("%d channels: Fill's arithmetic gave the table's bits everywhere: the test cannot tell them apart", c)
		}
	}
}

// sgd_lr reads its rate from memory and must step exactly as sgd given the
// same rate as an argument, with and without momentum, Nesterov and first.
func TestSGDLRMatchesSGD(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(7, 8))
	w0, g, v0 := randn(r, 3000, 0.1), randn(r, 3000, 0.01), randn(r, 3000, 0.01)
	for _, c := range []struct {
		m, wd           float32
		nesterov, first bool
	}{{0, 0, false, false}, {0.9, 5e-4, false, true}, {0.9, 5e-4, false, false}, {0.8, 0, true, false}} {
		l := Launch{3, 128}
		w1, v1, w2, v2 := slices.Clone(w0), slices.Clone(v0), slices.Clone(w0), slices.Clone(v0)
		lr := []float32{0.05}
		pin(t, w1, v1, w2, v2, g, lr)
		if err := LaunchCPU("sgd", l, []uint64{ptrSlot(w1), ptrSlot(g), ptrSlot(v1), i64Slot(len(w1)), f32Slot(lr[0]),
			f32Slot(c.m), f32Slot(c.wd), i32Slot(int(b2int(c.nesterov))), i32Slot(int(b2int(c.first)))}); err != nil {
			t.Fatal(err)
		}
		if err := LaunchCPU("sgd_lr", l, []uint64{ptrSlot(w2), ptrSlot(g), ptrSlot(v2), i64Slot(len(w2)), ptrSlot(lr),
			f32Slot(c.m), f32Slot(c.wd), i32Slot(int(b2int(c.nesterov))), i32Slot(int(b2int(c.first)))}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(w1, w2) || !slices.Equal(v1, v2) {
			t.Errorf("%+v: sgd_lr differs from sgd", c)
		}
		if slices.Equal(w1, w0) {
			t.Errorf("%+v: no step taken", c)
		}
	}
}

// sgd_found steps as sgd_lr when the flag is 0 — its first step (the
// momentum made from the gradient) where *have is 0, a later one where it
// is not — and leaves the weights and the momentum untouched when the
// flag is set.
func TestSGDFoundSkipsOnFlag(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(9, 10))
	w0, g, v0 := randn(r, 3000, 0.1), randn(r, 3000, 0.01), randn(r, 3000, 0.01)
	for _, found := range []float32{0, 1} {
		for _, first := range []bool{true, false} {
			l := Launch{3, 128}
			w1, v1, w2, v2 := slices.Clone(w0), slices.Clone(v0), slices.Clone(w0), slices.Clone(v0)
			lr, flag, have := []float32{0.05}, []float32{found}, []float32{1}
			if first {
				have[0] = 0
			}
			pin(t, w1, v1, w2, v2, g, lr, flag, have)
			hyper := []uint64{f32Slot(0.9), f32Slot(5e-4), i32Slot(0)}
			if err := LaunchCPU("sgd_lr", l, append([]uint64{ptrSlot(w1), ptrSlot(g), ptrSlot(v1), i64Slot(len(w1)), ptrSlot(lr)}, append(hyper, i32Slot(map[bool]int{true: 1}[first]))...)); err != nil {
				t.Fatal(err)
			}
			args := append([]uint64{ptrSlot(w2), ptrSlot(g), ptrSlot(v2), i64Slot(len(w2)), ptrSlot(lr)}, hyper...)
			if err := LaunchCPU("sgd_found", l, append(args, ptrSlot(have), ptrSlot(flag))); err != nil {
				t.Fatal(err)
			}
			if found == 0 && (!slices.Equal(w1, w2) || !slices.Equal(v1, v2)) {
				t.Errorf("flag 0, first %v: sgd_found differs from sgd_lr", first)
			}
			if found != 0 && (!slices.Equal(w2, w0) || !slices.Equal(v2, v0)) {
				t.Errorf("flag set, first %v: sgd_found changed the weights or the momentum", first)
			}
		}
	}
}

// amp_update_scale keeps the scale, the growth tracker and the skipped
// count as train.GradScaler.Update does, step for step, over finite and
// non-finite steps (growth and backoff factors that are not powers of
// two, so float32 arithmetic would drift), writes float32(1/Scale) as the
// next unscale factor, and marks the momentum made after the first finite
// step only.
func TestAMPUpdateScaleAsGradScaler(t *testing.T) {
	needCPU(t)
	host := &train.GradScaler{Scale: 1000, GrowthFactor: 1.7, BackoffFactor: 0.3, GrowthInterval: 3}
	sc := []float64{host.Scale, 0, 0, host.GrowthFactor, host.BackoffFactor, float64(host.GrowthInterval)}
	found, inv, have := []float32{0}, []float32{0}, []float32{0}
	pin(t, sc, found, inv, have)
	steps := []bool{false, false, true, true, true, true, false, true, true, true, true, true, true, true}
	for i, finite := range steps {
		found[0] = 1
		if finite {
			found[0] = 0
		}
		if err := LaunchCPU("amp_update_scale", Launch{1, 32}, []uint64{ptrSlot(sc), ptrSlot(found), ptrSlot(inv), ptrSlot(have)}); err != nil {
			t.Fatal(err)
		}
		host.Update(finite)
		if sc[0] != host.Scale || int(sc[1]) != host.Growth || int(sc[2]) != host.Skipped || inv[0] != float32(1/host.Scale) {
			t.Fatalf("step %d (finite %v): device scale %v, growth %v, skipped %v, inv %v; GradScaler %v, %d, %d, %v",
				i+1, finite, sc[0], sc[1], sc[2], inv[0], host.Scale, host.Growth, host.Skipped, float32(1/host.Scale))
		}
		if want := map[bool]float32{true: 1}[i >= 2]; have[0] != want { // steps 1 and 2 are skipped
			t.Fatalf("step %d: momentum flag %v, want %v", i+1, have[0], want)
		}
	}
	if host.Skipped != 3 || host.Scale == 1000 {
		t.Fatalf("the sequence did not exercise the scaler: %+v", host)
	}
}

// normalize_u8's modes against train.NormalizeHWC, bit for bit: both
// arithmetics, HWC and CHW bytes, each with and without the mirror; the
// mirror is the unmirrored output with each row reversed.
func TestNormalizeU8Modes(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(38, 6))
	const n, c, h, w = 3, 3, 5, 7
	px := make([]uint8, n*c*h*w)
	for i := range px {
		px[i] = uint8(r.IntN(256))
	}
	mean, std := []float32{0.485, 0.456, 0.406}, []float32{0.229, 0.224, 0.225}
	scale, shift := make([]float32, c), make([]float32, c)
	for i := range c {
		scale[i], shift[i] = 1/(255*std[i]), -mean[i]/std[i]
	}
	modes := 0
	for mode := NormMode(0); mode <= NormCHW|NormDiv|NormFlip; mode++ {
		modes++
		a, b := scale, shift
		if mode&NormDiv != 0 {
			a, b = mean, std
		}
		want := make([]float32, len(px))
		bb := train.ByteBatch{Pixels: px, N: n, H: h, W: w, C: c, Mean: mean, Std: std, CHW: mode&NormCHW != 0, Torch: mode&NormDiv != 0, Flip: mode&NormFlip != 0}
		if err := train.NormalizeHWC(want, bb); err != nil {
			t.Fatal(err)
		}
		var got []float32
		for _, l := range launches(t, PerRow, int64(n*c), int64(h*w)) {
			got = make([]float32, len(px))
			if err := NormalizeU8(l, px, got, a, b, n, c, h, w, mode); err != nil {
				t.Fatal(err)
			}
			if dd := compare(got, want); dd.ulps != 0 {
				t.Errorf("mode %d launch %+v: %d ulp from train.NormalizeHWC at %d", mode, l, dd.ulps, dd.at)
			}
		}
		if mode&NormFlip == 0 {
			continue
		}
		bb.Flip = false
		plain := make([]float32, len(px))
		if err := train.NormalizeHWC(plain, bb); err != nil {
			t.Fatal(err)
		}
		for row := 0; row < len(plain); row += w {
			for x := range w {
				if math.Float32bits(got[row+x]) != math.Float32bits(plain[row+w-1-x]) {
					t.Fatalf("mode %d: row %d column %d is not column %d mirrored", mode, row/w, x, w-1-x)
				}
			}
		}
	}
	if modes != 8 {
		t.Errorf("%d modes checked, want all 8", modes)
	}
}

// NormMode's bits and Tile are kernels.cu's #defines.
func TestDefinesAgree(t *testing.T) {
	for name, v := range map[string]int{"NORM_CHW": int(NormCHW), "NORM_DIV": int(NormDiv), "NORM_FLIP": int(NormFlip), "TILE": Tile,
		"BN_RELU": BNReLU, "BN_F16": BNF16, "BN_BF16": BNBF16, "BN_X16": BNX16, "BN_Y16": BNY16, "BN_RELU_OUT": BNReLUOut, "BN_NHWC": BNNHWC, "BN_LANES": BNLanes,
		"BN_ADD": BNAdd, "BN_COPY16": BNCopy16,
		"SUM_A16": SumA16, "SUM_B16": SumB16, "SUM_BF16": SumBF16, "SUM_NHWC": SumNHWC} {
		if want := fmt.Sprintf("#define %s %d\n", name, v); !strings.Contains(Source, want) {
			t.Errorf("kernels.cu lacks %q", want)
		}
	}
}
