package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/faster-training/faster/train"
)

type bnCase struct{ n, c, h, w int }

var bnCases = []bnCase{
	{64, 32, 30, 30}, // ThinNet's first BN at an eighth of its batch
	{16, 128, 4, 4},  // its last
	{3, 5, 1, 1},     // a plane of one
}

func bnData(r *rand.Rand, k bnCase) BN {
	b := BN{N: k.n, C: k.c, HW: k.h * k.w, Eps: 1e-5, Momentum: 0.1,
		X: randn(r, k.n*k.c*k.h*k.w, 1), Y: make([]float32, k.n*k.c*k.h*k.w),
		Gamma: randn(r, k.c, 1), Beta: randn(r, k.c, 1),
		BatchMean: make([]float32, k.c), BatchVar: make([]float32, k.c),
		RunningMean: randn(r, k.c, 0.1), RunningVar: randn(r, k.c, 0.1)}
	for i, v := range b.RunningVar {
		b.RunningVar[i] = 1 + v
	}
	for i := range b.X { // a channel mean away from 0, as after a conv
		b.X[i] += 0.3
	}
	return b
}

// relu_bn_train against the reference backend's ReLU and BatchNorm ops
// (batch statistics, output) and train.BatchNorm2D (running statistics):
// the same double arithmetic, summed in another order.
func TestReLUBNAgainstReference(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 8))
	ref := train.NewReference(train.BackendOptions{})
	defer ref.Close()
	for _, k := range bnCases {
		in := bnData(r, k)
		got := in
		got.RunningMean, got.RunningVar = slices.Clone(in.RunningMean), slices.Clone(in.RunningVar)
		got.ReLU = true
		if err := BNTrain(small, got); err != nil {
			t.Fatal(err)
		}

		x, err := ref.NewTensor(k.n, k.c, k.h, k.w)
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Write(in.X); err != nil {
			t.Fatal(err)
		}
		relu, _ := ref.NewReLU()
		rx, err := relu.Forward(x)
		if err != nil {
			t.Fatal(err)
		}
		bn, err := train.NewBatchNorm2D(ref, "bn", k.c)
		if err != nil {
			t.Fatal(err)
		}
		copy(bn.Gamma.Value, in.Gamma)
		copy(bn.Beta.Value, in.Beta)
		copy(bn.RunningMean.Value, in.RunningMean)
		copy(bn.RunningVar.Value, in.RunningVar)
		yt, err := bn.Forward(rx, true)
		if err != nil {
			t.Fatal(err)
		}
		y := make([]float32, len(in.X))
		if err := yt.Read(y); err != nil {
			t.Fatal(err)
		}
		op, _ := ref.NewBatchNorm(train.BatchNormSpec{C: k.c})
		bm, bv := make([]float32, k.c), make([]float32, k.c)
		if _, err := op.Forward(rx, in.Gamma, in.Beta, bm, bv, true); err != nil {
			t.Fatal(err)
		}
		dy, dm, dv := compare(got.Y, y), compare(got.BatchMean, bm), compare(got.BatchVar, bv)
		drm, drv := compare(got.RunningMean, bn.RunningMean.Value), compare(got.RunningVar, bn.RunningVar.Value)
		t.Logf("%+v: ulp from the reference: y %d, batch mean %d var %d, running mean %d var %d",
			k, dy.ulps, dm.ulps, dv.ulps, drm.ulps, drv.ulps)
		if dy.ulps > 1 || dm.ulps > 1 || dv.ulps > 1 || drm.ulps > 1 || drv.ulps > 1 {
			t.Errorf("%+v: more than 1 ulp from the reference", k)
		}
		op.Close()
		relu.Close()
		bn.Close()
		x.Release()
	}
}

// Against torch: F.relu then F.batch_norm(training=True, momentum=0.1) in
// float32, updating the running statistics.
func TestReLUBNAgainstTorch(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 9))
	in := map[string]any{}
	var outs []string
	script := ""
	var runs []BN
	for i, k := range bnCases {
		b := bnData(r, k)
		for n, v := range map[string][]float32{"x": b.X, "g": b.Gamma, "b": b.Beta, "rm": b.RunningMean, "rv": b.RunningVar} {
			in[fmt.Sprint(n, i)] = slices.Clone(v)
		}
		b.ReLU = true
		if err := BNTrain(H200, b); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, b)
		outs = append(outs, fmt.Sprint("y", i), fmt.Sprint("rm", i), fmt.Sprint("rv", i))
		script += fmt.Sprintf(`
i = %d
x = load(f"x{i}", np.float32).view(%d, %d, %d, %d)
rm, rv = load(f"rm{i}", np.float32), load(f"rv{i}", np.float32)
y = torch.nn.functional.batch_norm(torch.relu(x), rm, rv, load(f"g{i}", np.float32), load(f"b{i}", np.float32), training=True, momentum=0.1, eps=1e-5)
save(f"y{i}", y); save(f"rm{i}", rm); save(f"rv{i}", rv)
`, i, k.n, k.c, k.h, k.w)
	}
	res := torch(t, script, in, outs...)
	for i, k := range bnCases {
		dy := compare(runs[i].Y, f32s(res[fmt.Sprint("y", i)]))
		drm := compare(runs[i].RunningMean, f32s(res[fmt.Sprint("rm", i)]))
		drv := compare(runs[i].RunningVar, f32s(res[fmt.Sprint("rv", i)]))
		t.Logf("%+v: from torch: y %.3g abs (%d ulp), running mean %d ulp, var %d ulp", k, dy.abs, dy.ulps, drm.ulps, drv.ulps)
		if dy.abs > 5e-6 || drm.ulps > 4 || drv.ulps > 4 {
			t.Errorf("%+v: y %.3g, running %d/%d ulp from torch", k, dy.abs, drm.ulps, drv.ulps)
		}
	}
}
