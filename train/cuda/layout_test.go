//go:build cgo

package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
)

// shapeRec is a machine that notes the convolutions' shapes it runs (in
// the order first seen, with how often each runs forward).
type shapeRec struct {
	machine
	count map[[12]int]int
	order []convShape
}

func (s *shapeRec) conv(c *convShape, dir convDir, a, b, out uint64) error {
	if dir == convFwd {
		k := sizes(c)
		if s.count[k] == 0 {
			cp := *c
			cp.state, cp.releaseState = nil, nil
			s.order = append(s.order, cp)
		}
		s.count[k]++
	}
	return s.machine.conv(c, dir, a, b, out)
}

// layoutNet is a network whose convolutions convLayouts times.
type layoutNet struct {
	name       string
	build      func(train.Backend) (train.Layer, error)
	n, c, h, w int
}

// convLayouts runs one training forward pass of each network on the
// backend open makes (precision p), noting its convolutions, then times
// each shape's three directions channels-first (NCHW, the backend's) and
// channels-last (NHWC) with cudnnFind…AlgorithmEx through the machine's
// dnn: a GPULAYOUT line per shape and per network (the step's
// convolution time in each layout, each shape weighted by how often it
// runs), and the totals.
func convLayouts(t *testing.T, open func(train.BackendOptions) *Backend, p train.Precision, nets []layoutNet) {
	for _, ln := range nets {
		b := open(train.BackendOptions{Precision: p})
		dn, ok := b.m.(interface{ dnnOf() *dnn })
		if !ok {
			t.Fatalf("machine %T has no cuDNN", b.m)
		}
		rec := &shapeRec{machine: b.m, count: map[[12]int]int{}}
		net, err := ln.build(b)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := net.(interface{ Close() }); ok {
			defer c.Close()
		}
		x, err := b.NewTensor(ln.n, ln.c, ln.h, ln.w)
		if err != nil {
			t.Fatal(err)
		}
		b.m = rec
		_, err = net.Forward(x, true)
		b.m = rec.machine
		if err != nil {
			t.Fatalf("%s: forward: %v", ln.name, err)
		}
		if len(rec.order) == 0 {
			t.Fatalf("%s: no convolution ran", ln.name)
		}
		var total [2]float64
		for _, c := range rec.order {
			k := rec.count[sizes(&c)]
			var ms [2]float64
			var line [2]string
			for f, format := range []int{cudnnTensorNCHW, cudnnTensorNHWC} {
				times, err := dn.dnnOf().findTimes(c, format)
				if err != nil {
					t.Fatalf("%s: %s in layout %d: %v", ln.name, &c, format, err)
				}
				var parts []string
				for d, tm := range times {
					if tm.Ms < 0 {
						t.Fatalf("%s: %s %s: no algorithm measured", ln.name, &c, convDir(d))
					}
					ms[f] += tm.Ms
					parts = append(parts, fmt.Sprintf("%.3f(a%d)", tm.Ms, tm.Algo))
				}
				line[f] = strings.Join(parts, " ")
				total[f] += float64(k) * ms[f]
			}
			t.Logf("GPULAYOUT|%s %s|%s ×%d|%s|%s", ln.name, p, &c, k, line[0], line[1])
		}
		t.Logf("GPULAYOUT|%s %s|step's convolutions|%.2f ms NCHW|%.2f ms NHWC (%.2f×)", ln.name, p, total[0], total[1], total[0]/total[1])
		x.Release()
	}
}

// Would channels_last pay? Each convolution shape of ThinNet (3×32×32,
// batch 512, fp16 as AMP) timed in
// NCHW (the backend's layout) and NHWC with cudnnFind…AlgorithmEx: a
// GPULAYOUT line per shape and the step's convolution time in each. A
// figure for choosing the layout, not a check (only the plumbing fails).
func TestGPUConvLayouts(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "ThinNet fp16's convolutions timed in NCHW and NHWC (cudnnFind…AlgorithmEx)")
	convLayouts(t, func(o train.BackendOptions) *Backend { return openGPUFor(t, o, false) }, train.Float16,
		[]layoutNet{{name: "thinnet", n: 512, c: 3, h: 32, w: 32, build: func(b train.Backend) (train.Layer, error) {
			return train.NewThinNet(b, train.ThinNetConfig{InChannels: 3}, 1)
		}}})
}

// The same for ResNet-18 in bf16, at batch 128 (the row's is 256): the
// layouts' ratio in half the time. gpucheck.sh runs the layouts last, so that its
// time cuts them first.
func TestGPUConvLayoutsResNet18(t *testing.T) {
	gpuBackend(t) // skips without a GPU
	report(t, "ResNet-18 bf16's convolutions timed in NCHW and NHWC (cudnnFind…AlgorithmEx)")
	convLayouts(t, func(o train.BackendOptions) *Backend { return openGPUFor(t, o, false) }, train.BFloat16,
		[]layoutNet{{name: "resnet18", n: 128, c: 3, h: 224, w: 224, build: func(b train.Backend) (train.Layer, error) {
			return train.NewResNet18(b, train.ResNetConfig{}, 1)
		}}})
}

// A convolution's backward takes the 16-bit filter its forward used while
// the weights are a State's values unchanged since (under ChannelsLast a
// channels-last cast each way fewer: only the forward casts them), and
// casts again once they changed; the input gradient has the same bits
// either way.
func TestConvReusesForwardWeights(t *testing.T) {
	b := twinWith(t, train.BackendOptions{Precision: train.BFloat16, ChannelsLast: true})
	w := &train.Param{Name: "w", Value: make([]float32, 4*3*9), Grad: make([]float32, 4*3*9)}
	for i := range w.Value {
		w.Value[i] = float32(i%7) - 3
	}
	st, err := b.NewState([]*train.Param{w}, nil, &train.SGD{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	wt, dwt := st.Tensors(0)
	filled := func(shape ...int) train.Tensor {
		x, err := b.NewTensor(shape...)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float32, train.Numel(shape))
		for i := range v {
			v[i] = float32(i%11)/4 - 1
		}
		if err := x.Write(v); err != nil {
			t.Fatal(err)
		}
		return x
	}
	x, dy := filled(2, 3, 5, 5), filled(2, 4, 5, 5)
	op, err := b.NewConv(train.ConvSpec{In: 3, Out: 4, Kernel: 3, Pad: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	c := op.(train.DeviceConvOp)
	// backward runs the forward, then (after change when not nil) the
	// backward profiled: its channels-last casts and dx.
	backward := func(change func()) (int, []float32) {
		if _, err := c.ForwardDevice(x, wt, nil); err != nil {
			t.Fatal(err)
		}
		if change != nil {
			change()
		}
		if err := b.StartProfile(); err != nil {
			t.Fatal(err)
		}
		dx, err := c.BackwardDevice(dy, wt, dwt, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		p, err := b.StopProfile()
		if err != nil {
			t.Fatal(err)
		}
		casts := 0
		for _, r := range p.Rows {
			if r.Op == "kernel cast_nchw_nhwc_bf16" {
				casts += r.Calls
			}
		}
		v := make([]float32, 2*3*5*5)
		if err := dx.Read(v); err != nil {
			t.Fatal(err)
		}
		return casts, v
	}
	casts, reused := backward(nil)
	if casts != 1 {
		t.Errorf("a backward after its forward cast %d tensors channels-last, want 1 (dy; the filter is the forward's)", casts)
	}
	// The weights written (the same values) between them: changed, so
	// cast again.
	casts, recast := backward(func() {
		if err := wt.Write(w.Value); err != nil {
			t.Fatal(err)
		}
	})
	if casts != 2 {
		t.Errorf("a backward after the weights changed cast %d tensors channels-last, want 2 (dy and the filter)", casts)
	}
	for i := range reused {
		if reused[i] != recast[i] {
			t.Fatalf("dx[%d] = %v with the forward's filter, %v cast again", i, reused[i], recast[i])
		}
	}
}

// A residual block's 16-bit copy of its output (LowCopyOp) lives as long
// as the values it was written with: the same op's plain Forward, or a
// Write, drops it, so no convolution reads a stale copy.
func TestLowCopyDropped(t *testing.T) {
	b := twinWith(t, train.BackendOptions{Precision: train.BFloat16})
	relu, err := b.NewReLU()
	if err != nil {
		t.Fatal(err)
	}
	defer relu.Close()
	relu.(train.LowCopyOp).KeepLowCopy(true)
	x, err := b.NewTensor(1, 2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	y, err := relu.(train.AddReLUOp).ForwardSum(x, x)
	if err != nil {
		t.Fatal(err)
	}
	if y.(*tensor).lowCopy == nil {
		t.Fatal("ForwardSum with KeepLowCopy wrote no 16-bit copy")
	}
	if y, err = relu.Forward(x); err != nil {
		t.Fatal(err)
	}
	if y.(*tensor).lowCopy != nil {
		t.Error("a plain Forward kept ForwardSum's 16-bit copy")
	}
	if y, err = relu.(train.AddReLUOp).ForwardSum(x, x); err != nil {
		t.Fatal(err)
	}
	if err := y.Write(make([]float32, 8)); err != nil {
		t.Fatal(err)
	}
	if y.(*tensor).lowCopy != nil {
		t.Error("a Write kept the 16-bit copy")
	}
}
