package traintest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/faster-training/faster/train"
)

// RunFused trains a small ThinNet (widths 16 and 32, so oneDNN's blocked
// layouts and Winograd convolutions run) three SGD steps with momentum and
// weight decay twice on backends from open, from the same weights and
// batches, once as each variant builds it and once as base does, and
// compares the logits, every gradient, the updated weights and the running
// statistics within tol (relative to the largest magnitude). Backends
// check their fused paths with it against the unfused ones: ThinNet's
// ReLUs fused into its convolutions against separate ReLU layers
// (tol 0: the same arithmetic), Winograd convolutions against direct ones.
func RunFused(t *testing.T, open func(train.BackendOptions) (train.Backend, error), base, variant train.BackendOptions, baseCfg, variantCfg train.ThinNetConfig, tol float64) {
	type result struct {
		logits, grads, params, buffers [][]float32
	}
	train1 := func(o train.BackendOptions, cfg train.ThinNetConfig) result {
		b := must(open(o))
		defer b.Close()
		net := must(train.NewThinNet(b, cfg, 5))
		defer net.Close()
		const batch, side = 6, 14
		rng := rand.New(rand.NewPCG(11, 12))
		x := make([]float32, batch*cfg.InChannels*side*side)
		labels := make([]int, batch)
		xt := must(b.NewTensor(batch, cfg.InChannels, side, side))
		defer xt.Release()
		ce := train.NewCrossEntropy(b)
		defer ce.Close()
		opt := &train.SGD{Momentum: 0.9, WeightDecay: 1e-3}
		var r result
		for range 3 {
			randomise(x, rng, -1.5, 1.5)
			for i := range labels {
				labels[i] = rng.IntN(10)
			}
			if err := xt.Write(x); err != nil {
				t.Fatal(err)
			}
			logits := must(net.Forward(xt, true))
			r.logits = append(r.logits, read(t, logits))
			_, dl, err := ce.Forward(logits, labels, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := net.Backward(dl, false); err != nil {
				t.Fatal(err)
			}
			for _, p := range net.Params() {
				r.grads = append(r.grads, append([]float32(nil), p.Grad...))
			}
			opt.Step(net.Params(), 0.05)
		}
		for _, p := range net.Params() {
			r.params = append(r.params, append([]float32(nil), p.Value...))
		}
		for _, p := range net.Buffers() {
			r.buffers = append(r.buffers, append([]float32(nil), p.Value...))
		}
		return r
	}
	want, got := train1(base, baseCfg), train1(variant, variantCfg)
	for _, c := range []struct {
		what      string
		got, want [][]float32
	}{{"logits", got.logits, want.logits}, {"gradient", got.grads, want.grads},
		{"updated parameter", got.params, want.params}, {"running statistic", got.buffers, want.buffers}} {
		if len(c.got) != len(c.want) {
			t.Fatalf("%s: %d tensors, want %d", c.what, len(c.got), len(c.want))
		}
		for i := range c.got {
			closeTo(t, fmt.Sprintf("%s %d", c.what, i), c.got[i], c.want[i], tol)
		}
	}
}

// SmallThinNet is the ThinNet RunFused trains: 1 input channel, widths 16
// and 32 with one extra block each, 10 classes.
func SmallThinNet() train.ThinNetConfig {
	return train.ThinNetConfig{InChannels: 1, Classes: 10, Filters: []int{16, 32}, Blocks: []int{1, 1}}
}
