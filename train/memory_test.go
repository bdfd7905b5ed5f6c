package train_test

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
)

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// The estimate is what a training step really keeps: the reference
// backend's live heap after a forward and backward pass (its tensors are
// Go memory) is within 25% of it, for ThinNet and a small network of ResNet's
// parts (a residual block with a projection shortcut, pools).
func TestEstimateMemoryMatchesReference(t *testing.T) {
	for _, c := range []struct {
		name      string
		n, ch, hw int
		build     func(train.Backend) (*train.Sequential, error)
	}{
		{"thinnet", 32, 1, 28, func(b train.Backend) (*train.Sequential, error) {
			return train.NewThinNet(b, train.ThinNetConfig{Filters: []int{4, 8}, Blocks: []int{1, 1}}, 1)
		}},
		{"residual", 4, 3, 32, smallResNet},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := train.NewReference(train.BackendOptions{Threads: 1})
			defer b.Close()
			before := liveHeap()
			net, err := c.build(b)
			if err != nil {
				t.Fatal(err)
			}
			defer net.Close()
			est, err := train.EstimateMemory(net, c.n, c.ch, c.hw, c.hw)
			if err != nil {
				t.Fatal(err)
			}
			x, err := b.NewTensor(c.n, c.ch, c.hw, c.hw)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Release()
			src := make([]float32, c.n*c.ch*c.hw*c.hw)
			for i := range src {
				src[i] = float32(i%7) - 3
			}
			if err := x.Write(src); err != nil {
				t.Fatal(err)
			}
			y, err := net.Forward(x, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := net.Backward(y, true); err != nil { // any gradient of the output's shape
				t.Fatal(err)
			}
			// Momentum buffers are the optimiser's: count them as the estimate does.
			held := liveHeap() - before - int64(len(src))*4*2 // the input tensor and its copy in src
			for _, p := range net.Params() {
				held += int64(len(p.Value)) * 4
			}
			ratio := float64(est.Total()) / float64(held)
			t.Logf("estimate %d bytes (activations %d, params %d), reference holds %d: ratio %.2f", est.Total(), est.Activations, est.Params, held, ratio)
			if ratio < 0.75 || ratio > 1.25 {
				t.Errorf("estimate %d bytes, the reference backend holds %d (ratio %.2f)", est.Total(), held, ratio)
			}
		})
	}
}

// A shape the network cannot take, or one whose size overflows, is an
// error, not a number.
func TestEstimateMemoryRefuses(t *testing.T) {
	b := train.NewReference(train.BackendOptions{})
	defer b.Close()
	net, err := train.NewThinNet(b, train.ThinNetConfig{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	if _, err := train.EstimateMemory(net, 8, 1, 4, 4); err == nil || !strings.Contains(err.Error(), "window does not fit") {
		t.Errorf("4×4 input through nine 3×3 convolutions: %v", err)
	}
	if _, err := train.EstimateMemory(net, 1<<40, 1, 1<<20, 1<<20); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Errorf("huge batch: %v", err)
	}
	m, err := train.EstimateMemory(net, 8, 1, 4096, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if m.Activations < 8*32*4090*4090*4 {
		t.Errorf("8×4096² through ThinNet: %d bytes of activations, less than its first convolution's output", m.Activations)
	}
}

// smallResNet is ResNet-18's kinds of layers at a size a test can train.
func smallResNet(b train.Backend) (*train.Sequential, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	var layers []train.Layer
	var errs []error
	add := func(l train.Layer, err error) train.Layer {
		errs = append(errs, err)
		return l
	}
	conv := func(in, out, k, stride, pad int) train.Layer {
		return add(train.NewConv2D(b, "c", train.ConvSpec{In: in, Out: out, Kernel: k, Stride: stride, Pad: pad}, rng))
	}
	bn := func(c int) train.Layer { return add(train.NewBatchNorm2D(b, "bn", c)) }
	relu := func() train.Layer { return add(train.NewReLU(b)) }
	main := &train.Sequential{Layers: []train.Layer{conv(4, 8, 3, 2, 1), bn(8), relu(), conv(8, 8, 3, 1, 1), bn(8)}}
	short := &train.Sequential{Layers: []train.Layer{conv(4, 8, 1, 2, 0), bn(8)}}
	layers = append(layers, conv(3, 4, 3, 1, 1), bn(4), relu(), add(train.NewMaxPool2D(b, 3, 2, 1)),
		add(train.NewResidual(b, main, short)), add(train.NewAdaptiveAvgPool2D(b, 1, 1)), add(train.NewLinear(b, "fc", 8, 10, rng)))
	net := &train.Sequential{Layers: layers}
	if err := errors.Join(errs...); err != nil {
		net.Close()
		return nil, err
	}
	return net, nil
}

// totalAlloc is the bytes this process has allocated so far.
func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// A model built on train.Shapes holds no values and has the memory
// estimate of the same model on a real backend, so a model too large is
// refused before any of it is allocated (before: `faster train --filters
// 20000` allocated 14.4 GB of weights, then its memory check refused it).
func TestShapesEstimate(t *testing.T) {
	ref := train.NewReference(train.BackendOptions{})
	defer ref.Close()
	build := map[string]func(b train.Backend) (*train.Sequential, error){
		"thinnet": func(b train.Backend) (*train.Sequential, error) { return train.NewThinNet(b, toyNet, 1) },
		"resnet18": func(b train.Backend) (*train.Sequential, error) {
			return train.NewResNet18(b, train.ResNetConfig{InChannels: 1, Classes: 4, SmallInput: true, Widths: []int{4, 8, 8, 16}}, 1)
		},
	}
	for name, mk := range build {
		real, err := mk(ref)
		if err != nil {
			t.Fatal(err)
		}
		defer real.Close()
		shape, err := mk(train.Shapes())
		if err != nil {
			t.Fatal(err)
		}
		defer shape.Close()
		for _, p := range append(shape.Params(), shape.Buffers()...) {
			if p.Value != nil || p.Grad != nil || train.Numel(p.Shape) == 0 {
				t.Fatalf("%s: %s holds %d values, shape %v", name, p.Name, len(p.Value), p.Shape)
			}
		}
		want, err := train.EstimateMemory(real, 8, 1, 28, 28)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := train.EstimateMemory(shape, 8, 1, 28, 28); err != nil || got != want {
			t.Errorf("%s: on Shapes %+v, %v; on the reference backend %+v", name, got, err, want)
		}
		if _, err := shape.Forward(nil, true); !errors.Is(err, train.ErrShapesOnly) {
			t.Errorf("%s: Forward on Shapes: %v", name, err)
		}
	}
	// 20000 filters: 14.4 GB of weights on a real backend, nothing here.
	before := totalAlloc()
	cfg := toyNet
	cfg.Filters, cfg.Blocks = []int{20000}, []int{2}
	big, err := train.NewThinNet(train.Shapes(), cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := train.EstimateMemory(big, 8, 1, 28, 28)
	if err != nil || m.Params < 14e9 {
		t.Errorf("20000 filters: %+v, %v", m, err)
	}
	if n := totalAlloc() - before; n > 1<<20 {
		t.Errorf("building 20000 filters on Shapes allocated %d bytes", n)
	}
}
