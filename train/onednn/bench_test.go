//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/onednn"
)

// BenchmarkThinNetStep times full training steps (forward, loss, backward,
// SGD) of the seed's ThinNet on 28×28 images, in images/s.
func BenchmarkThinNetStep(b *testing.B) {
	for _, batch := range []int{64, 512} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchThinNet(b, train.BackendOptions{}, batch) })
	}
}

// BenchmarkThinNetModes times ThinNet training steps at batch 64 in
// float32, in bf16 and fp16 (emulated by rounding where the CPU lacks bf16
// instructions) and with autotuning (the tuning runs in the warm-up step),
// in images/s.
func BenchmarkThinNetModes(b *testing.B) {
	for _, m := range []struct {
		name string
		opts train.BackendOptions
	}{
		{"fp32", train.BackendOptions{}},
		{"bf16", train.BackendOptions{Precision: train.BFloat16}},
		{"fp16", train.BackendOptions{Precision: train.Float16}},
		{"autotune", train.BackendOptions{Autotune: true}},
	} {
		b.Run(m.name, func(b *testing.B) { benchThinNet(b, m.opts, 64) })
	}
}

// benchThinNet times one-batch epochs of ThinNet on a backend with opts,
// after a warm-up step (primitives, buffers, tuning) it reports apart and
// whose autotuning choices it logs.
func benchThinNet(b *testing.B, opts train.BackendOptions, batch int) {
	be, err := onednn.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	net, err := train.NewThinNet(be, train.ThinNetConfig{}, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer net.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	d := &train.Images{C: 1, H: 28, W: 28, Mean: 0.3, Std: 0.3, Pixels: make([]byte, batch*784), Labels: make([]int, batch)}
	for i := range d.Pixels {
		d.Pixels[i] = byte(rng.IntN(256))
	}
	for i := range d.Labels {
		d.Labels[i] = rng.IntN(10)
	}
	tr := train.NewTrainer(be, net, &train.SGD{Momentum: 0.9}, train.Constant(0.001), batch, 1)
	defer tr.Close()
	start := time.Now()
	if _, err := tr.TrainEpoch(context.Background(), d, nil); err != nil {
		b.Fatal(err)
	}
	warm := time.Since(start)
	for _, c := range be.TuneChoices() {
		b.Logf("%s: %s", c.Op, c.Chosen)
		for _, k := range c.Candidates {
			if k.Err != "" {
				b.Logf("    %-40s %s", k.Name, k.Err)
			} else {
				b.Logf("    %-40s %.2f ms", k.Name, 1e3*k.Seconds)
			}
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, err := tr.TrainEpoch(context.Background(), d, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "images/s")
	b.ReportMetric(warm.Seconds(), "warmup-s")
}
