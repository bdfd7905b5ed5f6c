package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/faster-training/faster/train"
)

type ceCase struct {
	n, k int
	eps  float32
}

var ceCases = []ceCase{
	{512, 10, 0},   // ThinNet's batch
	{512, 10, 0.1}, // with label smoothing
	{64, 1000, 0.1},
	{37, 7, 0.2}, // fewer classes than a warp, top-5 of 7
	{3, 300, 0},
}

// ceKernel runs ce_loss then ce_sums with launches planned for f: the
// gradient of the mean loss, and the batch's mean loss, top-1 and top-5.
func ceKernel(t *testing.T, f Facts, x []float32, y []int32, n, k int, eps float32) (g []float32, loss float64, c1, c5 int) {
	t.Helper()
	g, rows := make([]float32, n*k), make([]float32, 3*n)
	if err := CELoss(plan(t, f, PerRow, int64(n), int64(k)), x, y, g, rows, n, k, eps, 1/float32(n)); err != nil {
		t.Fatal(err)
	}
	var sums [3]float64
	if err := CESums(plan(t, f, Single, 0, int64(n)), rows, n, &sums); err != nil {
		t.Fatal(err)
	}
	return g, sums[0] / float64(n), int(sums[1]), int(sums[2])
}

func ceData(r *rand.Rand, c ceCase) ([]float32, []int32) {
	x := randn(r, c.n*c.k, 3)
	y := make([]int32, c.n)
	for i := range y {
		y[i] = int32(r.IntN(c.k))
		if i%3 == 0 { // a third of the rows right, so top-1 is no constant
			x[i*c.k+int(y[i])] += 4
		}
	}
	return x, y
}

// Against torch's F.cross_entropy(label_smoothing=ε) and its autograd
// gradient, in float32 on the CPU, and topk's counts.
func TestCELossAgainstTorch(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 6))
	in := map[string]any{}
	var outs []string
	script := ""
	for i, c := range ceCases {
		x, y := ceData(r, c)
		in[fmt.Sprint("x", i)], in[fmt.Sprint("y", i)] = x, y
		outs = append(outs, fmt.Sprint("loss", i), fmt.Sprint("g", i), fmt.Sprint("c", i))
		script += fmt.Sprintf(`
n, k, i = %d, %d, %d
x = load(f"x{i}", np.float32).view(n, k).requires_grad_()
y = load(f"y{i}", np.int32).long()
loss = torch.nn.functional.cross_entropy(x, y, label_smoothing=%v)
loss.backward()
save(f"loss{i}", loss.double().reshape(1))
save(f"g{i}", x.grad)
top = x.detach().topk(min(5, k), 1).indices
save(f"c{i}", torch.stack([(top[:, 0] == y).sum(), (top == y[:, None]).any(1).sum()]).double())
`, c.n, c.k, i, c.eps)
	}
	res := torch(t, script, in, outs...)
	for i, c := range ceCases {
		x, y := in[fmt.Sprint("x", i)].([]float32), in[fmt.Sprint("y", i)].([]int32)
		g, loss, c1, c5 := ceKernel(t, H200, x, y, c.n, c.k, c.eps)
		tl, tc := f64s(res[fmt.Sprint("loss", i)])[0], f64s(res[fmt.Sprint("c", i)])
		d := compare(g, f32s(res[fmt.Sprint("g", i)]))
		rel := math.Abs(loss-tl) / math.Abs(tl)
		t.Logf("%+v: loss %.7g, torch %.7g (rel %.2g); gradient max %.3g abs (%.2g·1/n); top-1 %d/%v top-5 %d/%v",
			c, loss, tl, rel, d.abs, d.abs*float64(c.n), c1, tc[0], c5, tc[1])
		if rel > 1e-6 {
			t.Errorf("%+v: loss %v, torch %v", c, loss, tl)
		}
		if d.abs*float64(c.n) > 2e-6 { // entries are at most 1/n; torch is the less exact one at k = 1000
			t.Errorf("%+v: gradient %.3g from torch's", c, d.abs)
		}
		if float64(c1) != tc[0] || float64(c5) != tc[1] {
			t.Errorf("%+v: top-1 %d top-5 %d, torch %v", c, c1, c5, tc)
		}
	}
}

// Against train.CrossEntropy on the reference backend (float64 inside),
// including ties and NaNs, whose ranks it defines.
func TestCELossAgainstReference(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 7))
	b := train.NewReference(train.BackendOptions{})
	defer b.Close()
	for _, c := range ceCases {
		x, y := ceData(r, c)
		nans := c.n >= 5 && c.k >= 7
		if nans { // ties with the label, a NaN elsewhere, a NaN label logit
			x[1*c.k+int(y[1])], x[1*c.k+(int(y[1])+1)%c.k] = 1, 1
			x[2*c.k+(int(y[2])+2)%c.k] = float32(math.NaN())
			x[4*c.k+int(y[4])] = float32(math.NaN())
		}
		xt, err := b.NewTensor(c.n, c.k)
		if err != nil {
			t.Fatal(err)
		}
		if err := xt.Write(x); err != nil {
			t.Fatal(err)
		}
		labels := make([]int, c.n)
		for i, v := range y {
			labels[i] = int(v)
		}
		ce := train.NewCrossEntropy(b)
		ce.LabelSmoothing = float64(c.eps)
		want, dx, err := ce.Forward(xt, labels, true)
		if err != nil {
			t.Fatal(err)
		}
		wg := make([]float32, c.n*c.k)
		if err := dx.Read(wg); err != nil {
			t.Fatal(err)
		}
		g, loss, c1, c5 := ceKernel(t, small, x, y, c.n, c.k, c.eps)
		if c1 != want.Correct1 || c5 != want.Correct5 {
			t.Errorf("%+v: top-1 %d top-5 %d, reference %d %d", c, c1, c5, want.Correct1, want.Correct5)
		}
		if nans {
			if !math.IsNaN(loss) || !math.IsNaN(want.Loss) {
				t.Errorf("%+v: NaN rows: loss %v, reference %v", c, loss, want.Loss)
			}
			// Rows without a NaN compare as below.
			for _, row := range []int{2, 4} {
				for j := range c.k {
					g[row*c.k+j], wg[row*c.k+j] = 0, 0
				}
			}
		} else if rel := math.Abs(loss-want.Loss) / want.Loss; rel > 1e-6 {
			t.Errorf("%+v: loss %v, reference %v", c, loss, want.Loss)
		}
		d := compare(g, wg)
		t.Logf("%+v: gradient max %.3g abs (%.2g·1/n) from the reference; top-1 %d top-5 %d equal", c, d.abs, d.abs*float64(c.n), c1, c5)
		if d.abs*float64(c.n) > 1e-6 {
			t.Errorf("%+v: gradient %.3g from the reference's", c, d.abs)
		}
		ce.Close()
		xt.Release()
	}
}

// ce_loss with the scale in device memory (dscale) writes the gradient
// the launch argument gives, float32 of the host's float64 arithmetic
// (the scale over 2 ranks, times this device's rows of its rank's batch,
// over the batch, over the rows), for a scale that is no
// power of two over a batch that is none (so a float32 division would
// round otherwise).
func TestCELossDeviceScale(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(5, 17))
	c := ceCases[3] // 37 rows: dividing by n rounds
	x, y := ceData(r, c)
	scale := []float64{7777.7}
	l := Launch{4, 64}
	run := func(gscale float32, dscale []float64) []float32 {
		g, rows := make([]float32, c.n*c.k), make([]float32, 3*c.n)
		pin(t, x, y, g, rows)
		var d uint64
		if dscale != nil {
			pin(t, dscale)
			d = ptrSlot(dscale)
		}
		share := []uint64{i32Slot(2), i32Slot(c.n), i32Slot(3 * c.n)} // 2 ranks; this device's n rows of a local batch of 3n
		if err := LaunchCPU("ce_loss", l, append([]uint64{ptrSlot(x), ptrSlot(y), ptrSlot(g), ptrSlot(rows), i32Slot(c.n), i32Slot(c.k), f32Slot(c.eps), f32Slot(gscale), d}, share...)); err != nil {
			t.Fatal(err)
		}
		return g
	}
	host := scale[0] / 2 // the trainer's gradScale for 2 ranks, then this device's share
	host = host * float64(c.n) / float64(3*c.n)
	want := run(float32(host/float64(c.n)), nil)
	got := run(123, scale) // the launch's gscale is ignored
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("element %d: %g with the device's scale, %g with the launch's", i, got[i], want[i])
		}
	}
	if float32(host/float64(c.n)) == float32(scale[0])/float32(2*3*c.n) {
		t.Fatalf("scale %v: float32 and float64 division agree; the test shows nothing", scale[0])
	}
}
