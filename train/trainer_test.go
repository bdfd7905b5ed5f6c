package train_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/faster-training/faster/train"
	_ "github.com/faster-training/faster/train/onednn" // the fast backend when cgo is on
)

// toyData is a 3-class problem a small ThinNet learns in a few steps:
// class k has a bright horizontal band in the k-th third of the image.
func toyData(n int, seed uint64) *train.Images {
	rng := rand.New(rand.NewPCG(seed, 1))
	const h, w = 12, 12
	d := &train.Images{C: 1, H: h, W: w, Mean: 0.3, Std: 0.3, Pixels: make([]byte, n*h*w), Labels: make([]int, n)}
	for i := range n {
		k := rng.IntN(3)
		d.Labels[i] = k
		for y := range h {
			for x := range w {
				v := rng.IntN(80)
				if y/4 == k {
					v += 150
				}
				d.Pixels[(i*h+y)*w+x] = byte(v)
			}
		}
	}
	return d
}

var toyNet = train.ThinNetConfig{InChannels: 1, Classes: 3, Filters: []int{4, 8}, Blocks: []int{1, 1}}

func backends(t *testing.T) []train.Backend {
	var bs []train.Backend
	for _, name := range train.Backends() {
		b, err := train.Open(name, train.BackendOptions{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		bs = append(bs, b)
	}
	return bs
}

func TestTrainingLearns(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.Name(), func(t *testing.T) {
			net, err := train.NewThinNet(b, toyNet, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer net.Close()
			tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, WeightDecay: 1e-4}, train.WarmupStep{Base: 0.05, WarmupEpochs: 0.5}, 16, 1)
			defer tr.Close()
			data := toyData(96, 2)
			var first, last []float64
			for range 3 {
				if _, err := tr.TrainEpoch(context.Background(), data, func(r train.StepResult) error {
					if len(first) < 3 {
						first = append(first, r.Loss)
					}
					last = append(last, r.Loss)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			last = last[len(last)-3:]
			mean := func(v []float64) float64 {
				s := 0.0
				for _, x := range v {
					s += x
				}
				return s / float64(len(v))
			}
			if mean(last) > 0.7*mean(first) {
				t.Errorf("loss did not fall: first steps %.3f, last steps %.3f", first, last)
			}
			m, err := train.Evaluate(context.Background(), b, net, toyData(50, 3), 16)
			if err != nil {
				t.Fatal(err)
			}
			if m.Samples != 50 || m.Top1 < 0.6 || m.Top5 != 1 {
				t.Errorf("eval %+v: want 50 samples, top-1 ≥ 0.6 (chance 0.33), top-5 = 1", m)
			}
		})
	}
}

func weights(net train.Layer) [][]float32 {
	var w [][]float32
	for _, p := range append(net.Params(), net.Buffers()...) {
		w = append(w, slices.Clone(p.Value))
	}
	return w
}

// A run stopped mid-epoch, checkpointed, and resumed in a fresh process
// (fresh model and optimiser) ends at the same weights as one that ran
// straight through.
func TestCheckpointResume(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.Name(), func(t *testing.T) {
			data := toyData(64, 4)
			newTrainer := func(seed uint64) (*train.Trainer, func()) {
				net, err := train.NewThinNet(b, toyNet, seed)
				if err != nil {
					t.Fatal(err)
				}
				tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, WeightDecay: 1e-3}, train.WarmupStep{Base: 0.02, WarmupEpochs: 1, StepEpochs: 1, Gamma: 0.5}, 16, 9)
				return tr, func() { tr.Close(); net.Close() }
			}
			ctx := context.Background()
			straight, done := newTrainer(1)
			defer done()
			for range 2 {
				if _, err := straight.TrainEpoch(ctx, data, nil); err != nil {
					t.Fatal(err)
				}
			}

			path := filepath.Join(t.TempDir(), "ckpt")
			first, done1 := newTrainer(1)
			defer done1()
			if _, err := first.TrainEpoch(ctx, data, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := first.TrainEpoch(ctx, data, func(r train.StepResult) error {
				if r.Step == 2 {
					return train.ErrStop // "killed" after step 2 of epoch 2
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := first.SaveCheckpoint(path); err != nil {
				t.Fatal(err)
			}
			resumed, done2 := newTrainer(77) // different initial weights: all must come from the file
			defer done2()
			if err := resumed.LoadCheckpoint(path); err != nil {
				t.Fatal(err)
			}
			if resumed.Epoch != 1 || resumed.Step != 2 {
				t.Fatalf("resumed at epoch %d step %d, want 1, 2", resumed.Epoch, resumed.Step)
			}
			if _, err := resumed.TrainEpoch(ctx, data, nil); err != nil {
				t.Fatal(err)
			}
			want, got := weights(straight.Net), weights(resumed.Net)
			for i := range want {
				if !slices.Equal(got[i], want[i]) {
					t.Fatalf("tensor %d differs after resume", i)
				}
			}

			// Corruption and mismatch are reported, not loaded.
			raw, _ := os.ReadFile(path)
			raw[len(raw)/2] ^= 1
			os.WriteFile(path, raw, 0o644)
			if err := resumed.LoadCheckpoint(path); !errors.Is(err, train.ErrCheckpoint) {
				t.Errorf("corrupt checkpoint: got %v, want ErrCheckpoint", err)
			}
		})
	}
}

func TestSchedule(t *testing.T) {
	s := train.WarmupStep{Base: 0.1, WarmupEpochs: 5, StepEpochs: 30, Gamma: 0.1}
	for _, c := range []struct{ epoch, want float64 }{{0.5, 0.01}, {5, 0.1}, {29.9, 0.1}, {30, 0.01}, {61, 0.001}} {
		if got := s.LR(c.epoch); got < c.want*0.999 || got > c.want*1.001 {
			t.Errorf("LR(%g) = %g, want %g", c.epoch, got, c.want)
		}
	}
}
