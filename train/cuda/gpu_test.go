//go:build cgo

package cuda

// The device check, prepared and NOT YET RUN on a GPU: every kernel of
// kernels.cu compiled by NVRTC for the device's architecture, launched on
// the sizes of a ThinNet and a ResNet-18 step, and compared with its CPU
// build (package kernels, gcc). Without a driver these tests skip, unless
// FASTER_REQUIRE_GPU=1, which makes a missing driver a failure (the device
// machine sets it: gpucheck.sh). Each result is a line "GPUCHECK|…" that
// gpucheck.sh prints as a table.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
)

// needGPU opens device 0, or skips (fails under FASTER_REQUIRE_GPU=1).
func needGPU(t *testing.T) *Device {
	t.Helper()
	d, err := Open(Options{CacheDir: t.TempDir()})
	if err != nil {
		if v := os.Getenv("FASTER_REQUIRE_GPU"); v != "" && v != "0" {
			t.Fatalf("FASTER_REQUIRE_GPU=1 and no GPU: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// row prints one line of gpucheck.sh's table.
func row(t *testing.T, kernel, size string, ms float64, agreement string, ok bool) {
	t.Helper()
	verdict := "ok"
	if !ok {
		verdict = "FAIL"
		t.Errorf("%s %s: %s", kernel, size, agreement)
	}
	t.Logf("GPUCHECK|%s|%s|%.3f|%s|%s", kernel, size, ms, agreement, verdict)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// upload copies s into a new device buffer.
func upload[T any](t *testing.T, d *Device, s []T) Buffer {
	t.Helper()
	var z T
	b, err := d.Alloc(len(s) * sizeOf(z))
	must(t, err)
	t.Cleanup(func() { d.Free(b) })
	must(t, CopyIn(d, b, s))
	return b
}

func download[T any](t *testing.T, d *Device, b Buffer, n int) []T {
	t.Helper()
	s := make([]T, n)
	must(t, CopyOut(d, s, b))
	return s
}

func sizeOf(v any) int {
	switch v.(type) {
	case uint8:
		return 1
	case uint16:
		return 2
	case float64:
		return 8
	}
	return 4
}

// launch runs kernel name of m with args and returns its milliseconds
// (the launch waits for it).
func launch(t *testing.T, m *Module, name string, l kernels.Launch, args ...Arg) float64 {
	t.Helper()
	f, err := m.Function(name)
	must(t, err)
	start := time.Now()
	must(t, f.Launch(l, args...))
	return float64(time.Since(start).Microseconds()) / 1000
}

func plan(t *testing.T, d *Device, s kernels.Shape, items, size int64) kernels.Launch {
	t.Helper()
	l, err := d.Facts.Facts.Plan(s, items, size)
	must(t, err)
	return l
}

func maxULP(a, b []float32) (worst int64) {
	for i := range a {
		x, y := a[i], b[i]
		if x != x || y != y {
			if (x != x) != (y != y) {
				return math.MaxInt32
			}
			continue
		}
		d := ordered(x) - ordered(y)
		worst = max(worst, d, -d)
	}
	return worst
}

func ordered(f float32) int64 {
	u := int64(math.Float32bits(f))
	if u&0x80000000 != 0 {
		return -(u & 0x7fffffff)
	}
	return u
}

func randn(r *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64() * scale)
	}
	return s
}

// The facts and the compile: NVRTC for the device's architecture, then
// from the cache.
func TestGPUCompile(t *testing.T) {
	d := needGPU(t)
	t.Logf("probe: %s", Probe())
	t.Logf("device: %+v", d.Facts)
	start := time.Now()
	m, err := d.Kernels()
	must(t, err)
	cold := time.Since(start)
	start = time.Now()
	m2, err := d.Kernels()
	must(t, err)
	warm := time.Since(start)
	row(t, "nvrtc compile", d.Arch, float64(cold.Microseconds())/1000, fmt.Sprintf("cold %v, cached %v (hit %v)", cold.Round(time.Millisecond), warm.Round(time.Millisecond), m2.Outcome.Hit), !m.Outcome.Hit && m2.Outcome.Hit)
	for _, k := range kernels.Kernels {
		if _, err := m.Function(k.Name); err != nil {
			t.Errorf("kernel %s: %v", k.Name, err)
		}
	}
}

// Each optional library called once (handles made and destroyed, an NCCL
// unique id); the rows go to gpucheck.sh's output.
func TestGPULibraries(t *testing.T) {
	d := needGPU(t)
	for _, r := range d.Exercise() {
		t.Logf("GPULIB|%s", r)
	}
}

// Sizes of one step: ThinNet at batch 512 on 3×32×32, ResNet-18 at batch
// 256 on 3×224×224 (11,689,512 parameters).
var steps = []struct {
	name           string
	n, h, w        int // input
	params         int
	classes        int
	bnN, bnC, bnHW int // the largest BN of the step
}{
	{"thinnet", 512, 32, 32, 330_000, 10, 512, 32, 30 * 30},
	{"resnet18", 256, 224, 224, 11_689_512, 1000, 256, 64, 56 * 56},
}

func TestGPUKernels(t *testing.T) {
	d := needGPU(t)
	m, err := d.Kernels()
	must(t, err)
	r := rand.New(rand.NewPCG(37, 10))
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			gpuCasts(t, d, m, r, s.name, s.params)
			gpuNormalize(t, d, m, r, s.name, s.n, s.h, s.w)
			gpuSGD(t, d, m, r, s.name, s.params)
			gpuAMP(t, d, m, r, s.name, s.params)
			gpuCE(t, d, m, r, s.name, s.n, s.classes)
			gpuBN(t, d, m, r, s.name, s.bnN, s.bnC, s.bnHW)
			gpuLayers(t, d, m, r, s.name, s.bnN, s.bnC, s.bnHW)
			gpuChannelsLast(t, d, m, r, s.name, s.bnN, s.bnC, s.bnHW)
		})
	}
}

func gpuCasts(t *testing.T, d *Device, m *Module, r *rand.Rand, step string, n int) {
	x := randn(r, n, 100)
	for i := 0; i < n; i += 97 { // random bit patterns: NaNs, infs, subnormals
		x[i] = math.Float32frombits(r.Uint32())
	}
	l := plan(t, d, kernels.Elementwise, int64(n), 0)
	size := fmt.Sprintf("%s %d", step, n)
	in := upload(t, d, x)
	for _, c := range []struct {
		to, back string
		cpu      func(kernels.Launch, []float32, []uint16) error
		cpuBack  func(kernels.Launch, []uint16, []float32) error
	}{
		{"cast_f32_f16", "cast_f16_f32", kernels.CastF32F16, kernels.CastF16F32},
		{"cast_f32_bf16", "cast_bf16_f32", kernels.CastF32BF16, kernels.CastBF16F32},
	} {
		h, err := d.Alloc(2 * n)
		must(t, err)
		f, err := d.Alloc(4 * n)
		must(t, err)
		ms := launch(t, m, c.to, l, Ptr(in), Ptr(h), I64(int64(n)))
		ms2 := launch(t, m, c.back, l, Ptr(h), Ptr(f), I64(int64(n)))
		gh, gf := download[uint16](t, d, h, n), download[float32](t, d, f, n)
		wh, wf := make([]uint16, n), make([]float32, n)
		must(t, c.cpu(l, x, wh))
		must(t, c.cpuBack(l, wh, wf))
		row(t, c.to, size, ms, fmt.Sprintf("%d of %d bits differ", countDiff(gh, wh), n), slices.Equal(gh, wh))
		row(t, c.back, size, ms2, fmt.Sprintf("%d ulp", maxULP(gf, wf)), maxULP(gf, wf) == 0)
		d.Free(h)
		d.Free(f)
	}
}

// gpuChannelsLast runs the channels_last casts (float NCHW to 16-bit NHWC
// and back, 32×32 tiles through shared memory) on the GPU and on the CPU
// build (twin), bit for bit.
func gpuChannelsLast(t *testing.T, d *Device, m *Module, r *rand.Rand, step string, n, c, hw int) {
	total := n * c * hw
	x := randn(r, total, 100)
	l := plan(t, d, kernels.PerRow, int64(kernels.CastTiles(n, c, hw)), kernels.TileValues)
	size := fmt.Sprintf("%s %dx%dx%d", step, n, c, hw)
	N, C, HW := ts(I32(int32(n))), ts(I32(int32(c))), ts(I32(int32(hw)))
	for _, p := range []string{"f16", "bf16"} {
		ms, _, ok, out := twin(t, d, m, "cast_nchw_nhwc_"+p, l, tf(x), th(make([]uint16, total)), N, C, HW)
		row(t, "cast_nchw_nhwc_"+p, size, ms, fmt.Sprintf("bits equal %v", ok), ok)
		ms, u, ok, _ := twin(t, d, m, "cast_nhwc_nchw_"+p, l, th(out[1].h), tf(make([]float32, total)), N, C, HW)
		row(t, "cast_nhwc_nchw_"+p, size, ms, fmt.Sprintf("%d ulp", u), u == 0 && ok)
	}
}

func countDiff(a, b []uint16) (n int) {
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func gpuNormalize(t *testing.T, d *Device, m *Module, r *rand.Rand, step string, n, h, w int) {
	const c = 3
	px := make([]uint8, n*h*w*c)
	for i := range px {
		px[i] = uint8(r.IntN(256))
	}
	scale := []float32{1 / (255 * 0.229), 1 / (255 * 0.224), 1 / (255 * 0.225)}
	shift := []float32{-0.485 / 0.229, -0.456 / 0.224, -0.406 / 0.225}
	l := plan(t, d, kernels.PerRow, int64(n*c), int64(h*w))
	in, sc, sh := upload(t, d, px), upload(t, d, scale), upload(t, d, shift)
	out, err := d.Alloc(4 * len(px))
	must(t, err)
	defer d.Free(out)
	ms := launch(t, m, "normalize_u8", l, Ptr(in), Ptr(out), Ptr(sc), Ptr(sh), I32(int32(n)), I32(c), I32(int32(h)), I32(int32(w)), I32(0))
	got := download[float32](t, d, out, len(px))
	want := make([]float32, len(px))
	must(t, kernels.NormalizeU8(l, px, want, scale, shift, n, c, h, w, 0))
	u := maxULP(got, want)
	row(t, "normalize_u8", fmt.Sprintf("%s %dx%dx%dx3", step, n, h, w), ms, fmt.Sprintf("%d ulp", u), u == 0)
	// torchvision's arithmetic (the loader's table): mean and std, divisions.
	mean, std := []float32{0.485, 0.456, 0.406}, []float32{0.229, 0.224, 0.225}
	mn, sd := upload(t, d, mean), upload(t, d, std)
	ms = launch(t, m, "normalize_u8", l, Ptr(in), Ptr(out), Ptr(mn), Ptr(sd), I32(int32(n)), I32(c), I32(int32(h)), I32(int32(w)), I32(int32(kernels.NormDiv|kernels.NormFlip)))
	got = download[float32](t, d, out, len(px))
	must(t, kernels.NormalizeU8(l, px, want, mean, std, n, c, h, w, kernels.NormDiv|kernels.NormFlip))
	u = maxULP(got, want)
	row(t, "normalize_u8 (torch, flip)", fmt.Sprintf("%s %dx%dx%dx3", step, n, h, w), ms, fmt.Sprintf("%d ulp", u), u == 0)
}

func gpuSGD(t *testing.T, d *Device, m *Module, r *rand.Rand, step string, n int) {
	l := plan(t, d, kernels.Elementwise, int64(n), 0)
	w0 := randn(r, n, 0.1)
	for _, nesterov := range []bool{false, true} {
		w, v := slices.Clone(w0), make([]float32, n)
		bw, bv := upload(t, d, w), upload(t, d, v)
		var ms float64
		for s := range 3 {
			g := randn(r, n, 0.01)
			bg := upload(t, d, g)
			a := kernels.SGDArgs{LR: 0.1, Momentum: 0.9, WeightDecay: 5e-4, Nesterov: nesterov, First: s == 0}
			ms = launch(t, m, "sgd", l, Ptr(bw), Ptr(bg), Ptr(bv), I64(int64(n)), F32(a.LR), F32(a.Momentum), F32(a.WeightDecay), I32(b32(a.Nesterov)), I32(b32(a.First)))
			must(t, kernels.SGD(l, w, g, v, a))
			d.Free(bg)
		}
		gw, gv := download[float32](t, d, bw, n), download[float32](t, d, bv, n)
		u := max(maxULP(gw, w), maxULP(gv, v))
		row(t, fmt.Sprintf("sgd nesterov=%v", nesterov), fmt.Sprintf("%s %d, 3 steps", step, n), ms, fmt.Sprintf("%d ulp", u), u == 0)
	}
}

func b32(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func gpuAMP(t *testing.T, d *Device, m *Module, r *rand.Rand, step string, n int) {
	l := plan(t, d, kernels.Elementwise, int64(n), 0)
	for _, bad := range []bool{false, true} {
		g := randn(r, n, 1000)
		if bad {
			g[n/2] = float32(math.Inf(1))
		}
		inv := float32(1.0 / 65536)
		bg, bf, bi := upload(t, d, g), upload(t, d, []float32{0}), upload(t, d, []float32{inv})
		ms := launch(t, m, "amp_unscale", l, Ptr(bg), I64(int64(n)), Ptr(bf), Ptr(bi))
		var found float32
		must(t, kernels.AMPUnscale(l, g, &found, inv))
		gg, gf := download[float32](t, d, bg, n), download[float32](t, d, bf, 1)
		u := maxULP(gg, g)
		row(t, fmt.Sprintf("amp_unscale inf=%v", bad), fmt.Sprintf("%s %d", step, n), ms,
			fmt.Sprintf("%d ulp, found_inf %v (CPU %v)", u, gf[0], found), u == 0 && gf[0] == found)
	}
	// The captured step's optimiser: sgd_lr, sgd_found (the flag and the
	// momentum's existence read from the device), then amp_update_scale
	// on the GradScaler's doubles (a factor that is no power of two).
	w, g, v := randn(r, n, 0.1), randn(r, n, 0.01), randn(r, n, 0.01)
	size := fmt.Sprintf("%s %d", step, n)
	lr := []float32{0.05}
	hyper := []twinArg{ts(F32(0.9)), ts(F32(5e-4)), ts(I32(1))}
	ms, u, ok, _ := twin(t, d, m, "sgd_lr", l, append([]twinArg{tf(w), tf(g), tf(v), ts(I64(int64(n))), tf(lr)}, append(hyper, ts(I32(0)))...)...)
	row(t, "sgd_lr nesterov", size, ms, fmt.Sprintf("%d ulp", u), u == 0 && ok)
	for _, c := range []struct{ have, found float32 }{{0, 0}, {1, 0}, {1, 1}} {
		ms, u, ok, _ = twin(t, d, m, "sgd_found", l, append([]twinArg{tf(w), tf(g), tf(v), ts(I64(int64(n))), tf(lr)},
			append(hyper, tf([]float32{c.have}), tf([]float32{c.found}))...)...)
		row(t, fmt.Sprintf("sgd_found have=%v found=%v", c.have, c.found), size, ms, fmt.Sprintf("%d ulp", u), u == 0 && ok)
	}
	ls := plan(t, d, kernels.Single, 0, 1)
	for _, found := range []float32{0, 1} {
		sc := []float64{65536 * 1.7, 1, 3, 1.7, 0.3, 2} // a finite step grows it (interval 2)
		ms, u, ok, out := twin(t, d, m, "amp_update_scale", ls, td(sc), tf([]float32{found}), tf([]float32{0}), tf([]float32{0}))
		row(t, fmt.Sprintf("amp_update_scale found=%v", found), "GradScaler", ms,
			fmt.Sprintf("scale %v, inv %v, %d ulp", out[0].d[0], out[2].f[0], u), u == 0 && ok)
	}
}

func gpuCE(t *testing.T, d *Device, m *Module, r *rand.Rand, step string, n, k int) {
	x := randn(r, n*k, 3)
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(r.IntN(k))
	}
	const eps = 0.1
	gs := float32(1) / float32(n)
	lr, ls := plan(t, d, kernels.PerRow, int64(n), int64(k)), plan(t, d, kernels.Single, 0, int64(n))
	bx, by := upload(t, d, x), upload(t, d, y)
	bg, err := d.Alloc(4 * n * k)
	must(t, err)
	defer d.Free(bg)
	brow, err := d.Alloc(4 * 3 * n)
	must(t, err)
	defer d.Free(brow)
	bsum := upload(t, d, []float64{0, 0, 0})
	ms := launch(t, m, "ce_loss", lr, Ptr(bx), Ptr(by), Ptr(bg), Ptr(brow), I32(int32(n)), I32(int32(k)), F32(eps), F32(gs), Arg{} /* no device scale */, I32(1), I32(1), I32(1))
	// The scale in device memory (a GradScaler on the device) gives the
	// gradient the launch's float32 of the host's arithmetic gives, bit
	// for bit.
	dscale := 30000.3
	bds := upload(t, d, []float64{dscale})
	bg2, err := d.Alloc(4 * n * k)
	must(t, err)
	defer d.Free(bg2)
	host := train.ScaleShare{Ranks: 2, Rows: n, Local: 3 * n}.Of(dscale) // two ranks; this device's n rows of 3n
	share := []Arg{I32(2), I32(int32(n)), I32(int32(3 * n))}
	launch(t, m, "ce_loss", lr, append([]Arg{Ptr(bx), Ptr(by), Ptr(bg2), Ptr(brow), I32(int32(n)), I32(int32(k)), F32(eps), F32(float32(host / float64(n))), {}}, share...)...)
	byArg := download[float32](t, d, bg2, n*k)
	msd := launch(t, m, "ce_loss", lr, append([]Arg{Ptr(bx), Ptr(by), Ptr(bg2), Ptr(brow), I32(int32(n)), I32(int32(k)), F32(eps), F32(0), Ptr(bds)}, share...)...)
	byDev := download[float32](t, d, bg2, n*k)
	d.Free(bds)
	row(t, "ce_loss dscale", fmt.Sprintf("%s %dx%d", step, n, k), msd, fmt.Sprintf("%d ulp from the launch's scale", maxULP(byDev, byArg)), maxULP(byDev, byArg) == 0)
	// (rowstat, which ce_sums reads below, does not depend on the scale.)
	ms += launch(t, m, "ce_sums", ls, Ptr(brow), I32(int32(n)), Ptr(bsum))
	g, rows := make([]float32, n*k), make([]float32, 3*n)
	must(t, kernels.CELoss(lr, x, y, g, rows, n, k, eps, gs))
	var sums [3]float64
	must(t, kernels.CESums(ls, rows, n, &sums))
	gg, gsums := download[float32](t, d, bg, n*k), download[float64](t, d, bsum, 3)
	var gabs float64
	for i := range g {
		gabs = max(gabs, math.Abs(float64(g[i])-float64(gg[i])))
	}
	rel := math.Abs(gsums[0]-sums[0]) / math.Abs(sums[0])
	ok := rel <= 1e-5 && gabs*float64(n) <= 1e-5 && gsums[1] == sums[1] && gsums[2] == sums[2]
	row(t, "ce_loss+ce_sums", fmt.Sprintf("%s %dx%d eps %v", step, n, k, eps), ms,
		fmt.Sprintf("loss rel %.2g, grad %.2g·1/n, top1 %v/%v top5 %v/%v", rel, gabs*float64(n), gsums[1], sums[1], gsums[2], sums[2]), ok)
}

func gpuBN(t *testing.T, d *Device, m *Module, r *rand.Rand, step string, n, c, hw int) {
	b := kernels.BN{N: n, C: c, HW: hw, Eps: 1e-5, Momentum: 0.1, ReLU: true,
		X: randn(r, n*c*hw, 1), Y: make([]float32, n*c*hw), Gamma: randn(r, c, 1), Beta: randn(r, c, 1),
		BatchMean: make([]float32, c), BatchVar: make([]float32, c), RunningMean: make([]float32, c), RunningVar: make([]float32, c)}
	for i := range b.RunningVar {
		b.RunningVar[i] = 1
	}
	ch, got := bnTrainTwin(t, d, m, b)
	// The chain's CPU side is the typed sequence the kernel tests check
	// against the reference and torch.
	must(t, kernels.BNTrain(d.Facts.Facts, b))
	ok := ch.ok
	for _, p := range [][2][]float32{{got.Y, b.Y}, {got.BatchMean, b.BatchMean}, {got.BatchVar, b.BatchVar},
		{got.RunningMean, b.RunningMean}, {got.RunningVar, b.RunningVar}} {
		ok = ok && maxULP(p[0], p[1]) == 0
	}
	row(t, "relu_bn_train (3 kernels)", fmt.Sprintf("%s %dx%dx%d", step, n, c, hw), ch.ms, fmt.Sprintf("%d ulp", ch.ulp), ch.ulp <= 1 && ok)
}

// bnTrainTwin runs BatchNorm's training forward over in (over ReLU(x)
// when in.ReLU, x and y 16-bit when in.X16 and in.Y16 are set, ReLU(y)
// when in.ReLUOut), kernel by kernel as the backend launches it
// (bn_plane_sum, bn_stats, bn_apply), on the GPU and the CPU build
// (twinChain), and returns the chain and the CPU build's results in in's
// shape (Stat the forward's statistics). Channels-last (in.NHWC) the
// sums and the output are bn_nhwc_sum's and bn_nhwc_apply's.
func bnTrainTwin(t *testing.T, d *Device, m *Module, in kernels.BN) (*twinChain, kernels.BN) {
	n, c, hw := in.N, in.C, in.HW
	sums, rows, k := bnRows(t, d, n, c, hw, in.Flags())
	chans := plan(t, d, kernels.PerRow, int64(c), int64(n))
	N, C, HW, fl := ts(I32(int32(n))), ts(I32(int32(c))), ts(I32(int32(hw))), ts(I32(in.Flags()))
	ch, out := newTwinChain(), in
	x := either(in.X, in.X16)
	part := ch.run(t, d, m, k.Sum, sums, x, td(make([]float64, 2*n*c)), N, C, HW, fl)[1].d
	res := ch.run(t, d, m, "bn_stats", chans, x, td(part), td(make([]float64, kernels.StatLen(c, in.NHWC))), tf(make([]float32, c)), tf(make([]float32, c)),
		tf(slices.Clone(in.RunningMean)), tf(slices.Clone(in.RunningVar)), N, C, HW, ts(F32(in.Eps)), ts(F32(in.Momentum)), fl)
	out.BatchMean, out.BatchVar, out.RunningMean, out.RunningVar, out.Stat = res[3].f, res[4].f, res[5].f, res[6].f, res[2].d
	y := tf(make([]float32, n*c*hw))
	if in.Y16 != nil {
		y = th(make([]uint16, n*c*hw))
	}
	s, y16 := null, null // the block's sum (BN_ADD) and its 16-bit copy (BN_COPY16)
	if in.S != nil {
		s = tf(in.S)
	}
	if in.Copy16 != nil {
		y16 = th(make([]uint16, len(in.Copy16)))
	}
	outs := ch.run(t, d, m, k.Apply, rows, x, y, tf(in.Gamma), tf(in.Beta), td(res[2].d), s, y16, N, C, HW, fl)
	out.Y, out.Y16, out.Copy16 = outs[1].f, outs[1].h, outs[6].h
	return ch, out
}

// bnRows are the launches and kernels of BatchNorm's sums and
// element-wise passes for flags fl, as the backend plans them
// (kernels.BNLaunches).
func bnRows(t *testing.T, d *Device, n, c, hw int, fl int32) (sums, rows kernels.Launch, k kernels.BNKernels) {
	k = kernels.BNLaunches(fl, n, c, hw)
	return plan(t, d, kernels.PerRow, int64(k.Sums), int64(k.SumSize)), plan(t, d, kernels.PerRow, int64(k.Rows), int64(k.RowSize)), k
}

// nhwcOf is v (n×c×hw) laid out channels-last.
func nhwcOf(v []uint16, n, c, hw int) []uint16 {
	out := make([]uint16, len(v))
	for b := range n {
		for ch := range c {
			for p := range hw {
				out[(b*hw+p)*c+ch] = v[(b*c+ch)*hw+p]
			}
		}
	}
	return out
}

// either is a twin buffer of h when it is not nil, else of f.
func either(f []float32, h []uint16) twinArg {
	if h != nil {
		return th(h)
	}
	return tf(f)
}

// bnBwdTwin is bnTrainTwin for the backward (bn_bwd_sum, bn_bwd_stats,
// bn_bwd_apply; channels-last bn_nhwc_bwd_sum and bn_nhwc_bwd_apply);
// g.Beta is read only with g.ReLUOut, g.Stat then and channels-last.
func bnBwdTwin(t *testing.T, d *Device, m *Module, g kernels.BNGrad) *twinChain {
	n, c, hw := g.N, g.C, g.HW
	sums, rows, k := bnRows(t, d, n, c, hw, g.Flags())
	chans := plan(t, d, kernels.PerRow, int64(c), int64(n))
	N, C, HW, fl, eps := ts(I32(int32(n))), ts(I32(int32(c))), ts(I32(int32(hw))), ts(I32(g.Flags())), ts(F32(g.Eps))
	beta, fstat := tnull(), tnull()
	if g.ReLUOut {
		beta = tf(g.Beta)
	}
	if g.ReLUOut || g.NHWC {
		fstat = td(g.Stat)
	}
	dy, x := either(g.DY, g.DY16), either(g.X, g.X16)
	dx := tf(make([]float32, n*c*hw))
	if g.X16 != nil {
		dx = th(make([]uint16, n*c*hw))
	}
	ch := newTwinChain()
	if g.NHWC {
		part := ch.run(t, d, m, k.BwdSum, sums, dy, x, tf(g.Gamma), beta, fstat, tf(g.BatchMean),
			td(make([]float64, 2*n*c)), N, C, HW, fl)[6].d
		res := ch.run(t, d, m, "bn_bwd_stats", chans, td(part), td(make([]float64, 2*c)), tf(make([]float32, c)), tf(make([]float32, c)), N, C, HW)
		ch.run(t, d, m, k.BwdApply, rows, dy, x, tf(g.Gamma), beta, fstat, tf(g.BatchMean), td(res[1].d), dx, N, C, HW, fl)
		return ch
	}
	part := ch.run(t, d, m, "bn_bwd_sum", sums, dy, x, tf(g.Gamma), beta, fstat, tf(g.BatchMean), tf(g.BatchVar),
		td(make([]float64, 2*n*c)), N, C, HW, eps, fl)[7].d
	res := ch.run(t, d, m, "bn_bwd_stats", chans, td(part), td(make([]float64, 2*c)), tf(make([]float32, c)), tf(make([]float32, c)), N, C, HW)
	ch.run(t, d, m, "bn_bwd_apply", rows, dy, x, tf(g.Gamma), beta, fstat, tf(g.BatchMean), tf(g.BatchVar), td(res[1].d),
		dx, N, C, HW, eps, fl)
	return ch
}

// twinArg is one argument of twin: a float32 or int32 buffer (uploaded to
// the device; its host copy pinned for the CPU build), a null pointer, or
// a scalar slot.
type twinArg struct {
	f   []float32
	i   []int32
	d   []float64
	h   []uint16
	buf bool
	a   Arg
}

func tf(s []float32) twinArg { return twinArg{f: s, buf: true} }
func ti(s []int32) twinArg   { return twinArg{i: s, buf: true} }
func td(s []float64) twinArg { return twinArg{d: s, buf: true} }
func th(s []uint16) twinArg  { return twinArg{h: s, buf: true} }
func tnull() twinArg         { return twinArg{a: Arg{0}} }
func ts(a Arg) twinArg       { return twinArg{a: a} }

// null is a NULL pointer argument.
var null = ts(Arg{})

// twinBuf is one buffer argument of twin: a pinned copy for the CPU
// build (its address the slot) and the same values uploaded.
func twinBuf[T any](t *testing.T, d *Device, pin *runtime.Pinner, s []T) ([]T, uint64, Buffer) {
	c := slices.Clone(s)
	pin.Pin(&c[0])
	return c, uint64(uintptr(unsafe.Pointer(&c[0]))), upload(t, d, s)
}

// twin runs kernel name with args on the GPU (m) and on the CPU build by
// name (kernels.LaunchCPU, the slots the backend's CPU twin passes), both
// with launch l, and compares every buffer afterwards: the largest ulp
// difference of the float buffers, and whether the int32, double and
// 16-bit buffers agree bit for bit. It returns the GPU's milliseconds and
// the CPU build's buffers.
func twin(t *testing.T, d *Device, m *Module, name string, l kernels.Launch, args ...twinArg) (ms float64, ulp int64, intsEqual bool, cpu []twinArg) {
	t.Helper()
	var pin runtime.Pinner
	defer pin.Unpin()
	gargs, slots := make([]Arg, len(args)), make([]uint64, len(args))
	bufs := make([]Buffer, len(args))
	cpu = make([]twinArg, len(args))
	for k, a := range args {
		switch {
		case a.f != nil:
			cpu[k].f, slots[k], bufs[k] = twinBuf(t, d, &pin, a.f)
		case a.i != nil:
			cpu[k].i, slots[k], bufs[k] = twinBuf(t, d, &pin, a.i)
		case a.d != nil:
			cpu[k].d, slots[k], bufs[k] = twinBuf(t, d, &pin, a.d)
		case a.h != nil:
			cpu[k].h, slots[k], bufs[k] = twinBuf(t, d, &pin, a.h)
		default:
			cpu[k] = a
			gargs[k], slots[k] = a.a, a.a.v
			continue
		}
		cpu[k].buf, gargs[k] = true, Ptr(bufs[k])
	}
	ms = launch(t, m, name, l, gargs...)
	must(t, kernels.LaunchCPU(name, l, slots))
	intsEqual = true
	for k, a := range cpu {
		switch {
		case a.f != nil:
			ulp = max(ulp, maxULP(download[float32](t, d, bufs[k], len(a.f)), a.f))
		case a.i != nil:
			intsEqual = intsEqual && slices.Equal(download[int32](t, d, bufs[k], len(a.i)), a.i)
		case a.d != nil: // doubles compared bit for bit
			intsEqual = intsEqual && slices.Equal(download[float64](t, d, bufs[k], len(a.d)), a.d)
		case a.h != nil:
			intsEqual = intsEqual && slices.Equal(download[uint16](t, d, bufs[k], len(a.h)), a.h)
		}
	}
	return ms, ulp, intsEqual, cpu
}

// twinChain runs kernels one after another through twin, each given the
// CPU build's outputs of the ones before, and keeps their GPU time, the
// largest ulp difference and whether every int, double and 16-bit buffer
// agreed.
type twinChain struct {
	ms  float64
	ulp int64
	ok  bool
}

func newTwinChain() *twinChain { return &twinChain{ok: true} }

func (c *twinChain) run(t *testing.T, d *Device, m *Module, name string, l kernels.Launch, args ...twinArg) []twinArg {
	t.Helper()
	ms, u, ok, res := twin(t, d, m, name, l, args...)
	c.ms, c.ulp, c.ok = c.ms+ms, max(c.ulp, u), c.ok && ok
	return res
}

// gpuSpecials puts NaN, ±Inf and ±0 at about one element in every 50.
func gpuSpecials(r *rand.Rand, s []float32) []float32 {
	vals := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1))}
	for i := range s {
		if r.IntN(50) == 0 {
			s[i] = vals[r.IntN(len(vals))]
		}
	}
	return s
}

// gpuLayers runs the layer kernels on the step's largest BN tensor
// (n×c×hw) on the GPU and on the CPU build, launched alike: element-wise
// kernels and the pools bit-exact (the same float32 and double arithmetic:
// --fmad=false, IEEE division and sqrt); the per-channel reductions
// (bias_grad, and BatchNorm's planes' and channels' sums) add in the same
// order in double and are allowed 1 ulp (expected 0; their doubles are
// compared bit for bit).
func gpuLayers(t *testing.T, d *Device, m *Module, r *rand.Rand, step string, n, c, hw int) {
	size := n * c * hw
	shape := fmt.Sprintf("%s %dx%dx%d", step, n, c, hw)
	le := plan(t, d, kernels.Elementwise, int64(size), 0)
	lc := plan(t, d, kernels.PerChannel, int64(c), int64(n*hw))
	N, C, HW, S := I32(int32(n)), I32(int32(c)), I32(int32(hw)), I64(int64(size))
	x, dy := gpuSpecials(r, randn(r, size, 1)), gpuSpecials(r, randn(r, size, 1))
	exact := func(name string, ms float64, u int64, ints bool) {
		row(t, name, shape, ms, fmt.Sprintf("%d ulp", u), u == 0 && ints)
	}

	ms, u, ok, out := twin(t, d, m, "relu_fwd", le, tf(x), tf(make([]float32, size)), ts(S))
	exact("relu_fwd", ms, u, ok)
	y := out[1].f
	ms, u, ok, _ = twin(t, d, m, "relu_bwd", le, tf(dy), tf(y), tf(make([]float32, size)), ts(S))
	exact("relu_bwd", ms, u, ok)
	ms, u, ok, _ = twin(t, d, m, "add", le, tf(x), tf(dy), tf(make([]float32, size)), ts(S))
	exact("add", ms, u, ok)
	ms, u, ok, _ = twin(t, d, m, "add_relu", le, tf(x), tf(dy), tf(make([]float32, size)), ts(S))
	exact("add_relu", ms, u, ok)
	ms, u, ok, _ = twin(t, d, m, "add_relu_bwd", le, tf(x), tf(dy), tf(y), tf(make([]float32, size)), ts(S))
	exact("add_relu_bwd", ms, u, ok)
	// The same with a block's first convolution's 16-bit input gradient
	// as cuDNN wrote it: channels-first beside a float32 one, and two
	// channels-last.
	sx16 := make([]uint16, size)
	must(t, kernels.CastF32BF16(le, x, sx16))
	lf := ts(I32(kernels.SumGrad{A16: sx16, Format: kernels.BFloat16}.Flags()))
	ms, u, ok, _ = twin(t, d, m, "add_relu_bwd_low", le, th(sx16), tf(dy), tf(y), tf(make([]float32, size)), ts(S), lf)
	exact("add_relu_bwd_low bf16+f32", ms, u, ok)
	sdy16 := make([]uint16, size)
	must(t, kernels.CastF32BF16(le, dy, sdy16))
	lt := plan(t, d, kernels.PerRow, int64(kernels.CastTiles(n, c, hw)), kernels.TileValues)
	tfl := ts(I32(kernels.SumGrad{A16: sx16, B16: sdy16, Format: kernels.BFloat16, NHWC: true}.Flags()))
	ms, u, ok, _ = twin(t, d, m, "add_relu_bwd_tiles", lt, th(nhwcOf(sx16, n, c, hw)), th(nhwcOf(sdy16, n, c, hw)), tf(y),
		tf(make([]float32, size)), ts(N), ts(C), ts(HW), tfl)
	exact("add_relu_bwd_tiles bf16 channels-last", ms, u, ok)
	bfl := ts(I32(kernels.BFloat16.SumFlag()))
	ms, u, ok, _ = twin(t, d, m, "add_relu_low", le, tf(x), tf(dy), tf(make([]float32, size)), th(make([]uint16, size)), ts(S), bfl)
	exact("add_relu_low bf16", ms, u, ok)
	ms, u, ok, _ = twin(t, d, m, "add_relu_tiles", lt, tf(x), tf(dy), tf(make([]float32, size)), th(make([]uint16, size)),
		ts(N), ts(C), ts(HW), bfl)
	exact("add_relu_tiles bf16 channels-last", ms, u, ok)
	bias := randn(r, c, 1)
	ms, u, ok, _ = twin(t, d, m, "bias_act", le, tf(x), tf(bias), ts(S), ts(C), ts(HW), ts(I32(1)))
	exact("bias_act relu", ms, u, ok)
	ms, u, ok, _ = twin(t, d, m, "bias_act", le, tf(x), tnull(), ts(S), ts(C), ts(HW), ts(I32(0)))
	exact("bias_act no bias", ms, u, ok)

	clean := randn(r, size, 1) // reductions: finite data, so the ulps mean something
	ms, u, ok, _ = twin(t, d, m, "bias_grad", lc, tf(clean), tf(make([]float32, c)), ts(N), ts(C), ts(HW))
	row(t, "bias_grad", shape, ms, fmt.Sprintf("%d ulp", u), u <= 1 && ok)
	gamma, beta := randn(r, c, 1), randn(r, c, 1)
	rv := make([]float32, c)
	for i := range rv {
		rv[i] = 1 + 0.1*float32(r.Float64())
	}
	bnIn := kernels.BN{X: clean, Gamma: gamma, Beta: beta, RunningMean: make([]float32, c), RunningVar: rv,
		N: n, C: c, HW: hw, Eps: 1e-5, Momentum: 0.1}
	bnCh, bnOut := bnTrainTwin(t, d, m, bnIn)
	row(t, "bn_train (3 kernels)", shape, bnCh.ms, fmt.Sprintf("%d ulp", bnCh.ulp), bnCh.ulp <= 1 && bnCh.ok)
	bm, bv := bnOut.BatchMean, bnOut.BatchVar
	lr := plan(t, d, kernels.PerRow, int64(n*c), int64(hw))
	for _, relu := range []int32{0, 1} {
		ms, u, ok, _ = twin(t, d, m, "bn_eval", lr, tf(x), tf(make([]float32, size)), tf(gamma), tf(beta), tf(bm), tf(rv), null, null,
			ts(N), ts(C), ts(HW), ts(F32(1e-5)), ts(I32(relu)))
		exact(fmt.Sprintf("bn_eval relu=%d", relu), ms, u, ok)
	}
	for _, reluIn := range []bool{false, true} {
		ch := bnBwdTwin(t, d, m, kernels.BNGrad{DY: dy, X: clean, Gamma: gamma, BatchMean: bm, BatchVar: bv,
			N: n, C: c, HW: hw, Eps: 1e-5, ReLUIn: reluIn})
		row(t, fmt.Sprintf("bn_bwd relu_in=%v (3 kernels)", reluIn), shape, ch.ms, fmt.Sprintf("%d ulp", ch.ulp), ch.ulp <= 1 && ch.ok)
	}
	// The pairs' BatchNorm (train.Sequential's pair): x, y and their
	// gradients in bf16 as the convolutions around it leave and take
	// them, ReLU(y) for the ReLU layer after it.
	x16, y16 := make([]uint16, size), make([]uint16, size)
	must(t, kernels.CastF32BF16(plan(t, d, kernels.Elementwise, int64(size), 0), clean, x16))
	pairIn := bnIn
	pairIn.X, pairIn.X16, pairIn.Y16, pairIn.Format, pairIn.ReLUOut = nil, x16, y16, kernels.BFloat16, true
	pairCh, pairOut := bnTrainTwin(t, d, m, pairIn)
	row(t, "bn_train bf16 x, y, relu out (3 kernels)", shape, pairCh.ms, fmt.Sprintf("%d ulp", pairCh.ulp), pairCh.ulp <= 1 && pairCh.ok)
	dy16 := make([]uint16, size)
	must(t, kernels.CastF32BF16(plan(t, d, kernels.Elementwise, int64(size), 0), dy, dy16))
	pairG := kernels.BNGrad{DY16: dy16, X16: x16, DX16: make([]uint16, size), Gamma: gamma, Beta: beta, Stat: pairOut.Stat,
		BatchMean: pairOut.BatchMean, BatchVar: pairOut.BatchVar, Format: kernels.BFloat16, N: n, C: c, HW: hw, Eps: 1e-5, ReLUOut: true}
	pairB := bnBwdTwin(t, d, m, pairG)
	row(t, "bn_bwd bf16 x, dy, relu out (3 kernels)", shape, pairB.ms, fmt.Sprintf("%d ulp", pairB.ulp), pairB.ulp <= 1 && pairB.ok)
	// The same channels-last (BN_NHWC: between two channels-last
	// convolutions), the values laid out so; and its evaluation.
	lastIn := pairIn
	lastIn.X16, lastIn.Y16, lastIn.NHWC = nhwcOf(x16, n, c, hw), make([]uint16, size), true
	lastCh, lastOut := bnTrainTwin(t, d, m, lastIn)
	row(t, "bn_train bf16 channels-last relu out (3 kernels)", shape, lastCh.ms, fmt.Sprintf("%d ulp", lastCh.ulp), lastCh.ulp <= 1 && lastCh.ok)
	lastG := pairG
	lastG.DY16, lastG.X16, lastG.DX16, lastG.NHWC = nhwcOf(dy16, n, c, hw), lastIn.X16, make([]uint16, size), true
	lastG.Stat, lastG.BatchMean, lastG.BatchVar = lastOut.Stat, lastOut.BatchMean, lastOut.BatchVar
	lastB := bnBwdTwin(t, d, m, lastG)
	row(t, "bn_bwd bf16 channels-last relu out (3 kernels)", shape, lastB.ms, fmt.Sprintf("%d ulp", lastB.ulp), lastB.ulp <= 1 && lastB.ok)
	_, lrl, lk := bnRows(t, d, n, c, hw, lastIn.Flags())
	ms, u, ok, _ = twin(t, d, m, lk.Eval, lrl, th(lastIn.X16), th(make([]uint16, size)), tf(gamma), tf(beta), tf(bm), tf(rv), null, null,
		ts(N), ts(C), ts(HW), ts(F32(1e-5)), ts(I32(lastIn.Flags())))
	exact("bn_nhwc_eval bf16 relu out", ms, u, ok)
	// Channels-last in, float32 channels-first out (the bn_tiles kernels:
	// a channels-last convolution's BatchNorm before an add or a pool).
	toIn := lastIn
	toIn.Y16, toIn.OutNCHW = nil, true
	toCh, toOut := bnTrainTwin(t, d, m, toIn)
	row(t, "bn_train bf16 channels-last to float32 (3 kernels)", shape, toCh.ms, fmt.Sprintf("%d ulp", toCh.ulp), toCh.ulp <= 1 && toCh.ok)
	toG := lastG
	toG.DY, toG.DY16, toG.OutNCHW = dy, nil, true
	toG.Stat, toG.BatchMean, toG.BatchVar = toOut.Stat, toOut.BatchMean, toOut.BatchVar
	toB := bnBwdTwin(t, d, m, toG)
	row(t, "bn_bwd bf16 float32 to channels-last (3 kernels)", shape, toB.ms, fmt.Sprintf("%d ulp", toB.ulp), toB.ulp <= 1 && toB.ok)
	_, ltl, tk := bnRows(t, d, n, c, hw, toIn.Flags())
	ms, u, ok, _ = twin(t, d, m, tk.Eval, ltl, th(toIn.X16), tf(make([]float32, size)), tf(gamma), tf(beta), tf(bm), tf(rv), null, null,
		ts(N), ts(C), ts(HW), ts(F32(1e-5)), ts(I32(toIn.Flags())))
	exact("bn_tiles_eval bf16 relu out", ms, u, ok)
	// A residual block's sum and ReLU folded into its main path's last
	// BatchNorm (BN_ADD), with the next block's 16-bit operand beside
	// (BN_COPY16): channels-first from bf16 x, and channels-last x into
	// float32 channels-first y with the copy channels-last.
	sum := randn(r, size, 1)
	for _, in := range []kernels.BN{pairIn, toIn} {
		in.Y16, in.ReLUOut, in.S, in.Copy16 = nil, false, sum, make([]uint16, size)
		sCh, _ := bnTrainTwin(t, d, m, in)
		row(t, fmt.Sprintf("bn_train bf16 + sum, relu, copy channels-last=%v (3 kernels)", in.NHWC), shape, sCh.ms,
			fmt.Sprintf("%d ulp", sCh.ulp), sCh.ulp <= 1 && sCh.ok)
		_, sl, sk := bnRows(t, d, n, c, hw, in.Flags())
		ms, u, ok, _ = twin(t, d, m, sk.Eval, sl, th(in.X16), tf(make([]float32, size)), tf(gamma), tf(beta), tf(bm), tf(rv), tf(sum),
			th(make([]uint16, size)), ts(N), ts(C), ts(HW), ts(F32(1e-5)), ts(I32(in.Flags())))
		exact(fmt.Sprintf("%s bf16 + sum, relu, copy", sk.Eval), ms, u, ok)
	}

	// Pools on n·c planes of side √hw: ThinNet's 2×2/2, ResNet's 3×3/2 pad 1.
	side := int(math.Sqrt(float64(hw)))
	k, st, pad := 2, 2, 0
	if side > 40 {
		k, st, pad = 3, 2, 1
	}
	px := slices.Clone(x[:n*c*side*side])
	for i := range px {
		px[i] = float32(math.Round(float64(px[i])*2)) / 2 // ties
	}
	o := (side+2*pad-k)/st + 1
	dims := func(extra ...Arg) []twinArg {
		a := []twinArg{ts(N), ts(C), ts(I32(int32(side))), ts(I32(int32(side))), ts(I32(int32(o))), ts(I32(int32(o))),
			ts(I32(int32(k))), ts(I32(int32(k))), ts(I32(int32(st))), ts(I32(int32(st))), ts(I32(int32(pad))), ts(I32(int32(pad)))}
		for _, e := range extra {
			a = append(a, ts(e))
		}
		return a
	}
	pshape := fmt.Sprintf("%s %dx%dx%dx%d %dx%d/%d pad %d", step, n, c, side, side, k, k, st, pad)
	lo := plan(t, d, kernels.PerRow, int64(n*c), int64(o*o))
	li := plan(t, d, kernels.PerRow, int64(n*c), int64(side*side))
	ms, u, ok, out = twin(t, d, m, "maxpool_fwd", lo, append([]twinArg{tf(px), tf(make([]float32, n*c*o*o)), ti(make([]int32, n*c*o*o))}, dims()...)...)
	row(t, "maxpool_fwd", pshape, ms, fmt.Sprintf("%d ulp, arg equal %v", u, ok), u == 0 && ok)
	arg := out[2].i
	pdy := randn(r, n*c*o*o, 1)
	ms, u, ok, _ = twin(t, d, m, "maxpool_bwd", li, append([]twinArg{tf(pdy), ti(arg), tf(make([]float32, len(px)))}, dims()...)...)
	row(t, "maxpool_bwd", pshape, ms, fmt.Sprintf("%d ulp", u), u == 0 && ok)
	for _, ex := range []int32{0, 1} {
		ms, u, ok, _ = twin(t, d, m, "avgpool_fwd", lo, append([]twinArg{tf(px), tf(make([]float32, n*c*o*o))}, dims(I32(ex))...)...)
		exact(fmt.Sprintf("avgpool_fwd exclude_pad=%d", ex), ms, u, ok)
		ms, u, ok, _ = twin(t, d, m, "avgpool_bwd", li, append([]twinArg{tf(pdy), tf(make([]float32, len(px)))}, dims(I32(ex))...)...)
		exact(fmt.Sprintf("avgpool_bwd exclude_pad=%d", ex), ms, u, ok)
	}

	// Weights: an EMA step, swap, copy, fill.
	avg := randn(r, size, 1)
	ms, u, ok, _ = twin(t, d, m, "ema_update", le, tf(avg), tf(x), ts(S), ts(F32(0.999)), ts(I32(0)))
	exact("ema_update", ms, u, ok)
	ms, u, ok, _ = twin(t, d, m, "swap_f32", le, tf(avg), tf(x), ts(S))
	exact("swap_f32", ms, u, ok)
	ms, u, ok, _ = twin(t, d, m, "copy_f32", le, tf(x), tf(make([]float32, size)), ts(S))
	exact("copy_f32", ms, u, ok)
	ms, u, ok, _ = twin(t, d, m, "fill_f32", le, tf(make([]float32, size)), ts(S), ts(F32(-1.5)))
	exact("fill_f32", ms, u, ok)
}
