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
