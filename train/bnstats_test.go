package train_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/train"
)

// bnstats.json holds what torch.optim.swa_utils.update_bn computes for a
// small ThinNet; testdata/gen_bnstats.py writes it with torch 1.13.
//
//go:embed testdata/bnstats.json
var bnstatsJSON []byte

type bnstatsRef struct {
	Params  [][]float32 `json:"params"`
	Buffers [][]float32 `json:"buffers"`
	Batches []struct {
		N int       `json:"n"`
		X []float32 `json:"x"`
	} `json:"batches"`
	Running [][]float32 `json:"running"`
	Momenta []float32   `json:"momenta"`
	TestX   []float32   `json:"test_x"`
	Logits  []float32   `json:"logits"`
}

// bnNet is gen_bnstats.py's model.
var bnNet = train.ThinNetConfig{InChannels: 3, Classes: 3, Filters: []int{4, 5}, Blocks: []int{0, 0}}

// sliceStream yields fixed batches of 3×12×12 images (labels 0), one epoch
// like another.
type sliceStream struct {
	c, h, w int
	xs      [][]float32
}

func (s *sliceStream) Shape() (c, h, w int) { return s.c, s.h, s.w }
func (s *sliceStream) Len() int {
	n := 0
	for _, x := range s.xs {
		n += len(x) / (s.c * s.h * s.w)
	}
	return n
}
func (s *sliceStream) Steps() int { return len(s.xs) }
func (s *sliceStream) Epoch(ctx context.Context, e, skip int) iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		for _, x := range s.xs[skip:] {
			if !yield(train.Batch{X: x, Y: make([]int, len(x)/(s.c*s.h*s.w))}, nil) {
				return
			}
		}
	}
}

func loadBNStats(t *testing.T) bnstatsRef {
	t.Helper()
	var r bnstatsRef
	if err := json.Unmarshal(bnstatsJSON, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// setTensors copies vals into ps, checking the sizes.
func setTensors(t *testing.T, ps []*train.Param, vals [][]float32) {
	t.Helper()
	if len(ps) != len(vals) {
		t.Fatalf("%d tensors, PyTorch %d", len(ps), len(vals))
	}
	for i, p := range ps {
		if len(p.Value) != len(vals[i]) {
			t.Fatalf("%s: %d values, PyTorch %d", p.Name, len(p.Value), len(vals[i]))
		}
		copy(p.Value, vals[i])
	}
}

// After RecalibrateBN over the same batches, every BatchNorm's running
// mean and variance are PyTorch's after update_bn (stale statistics
// reset, cumulative average with each batch weighed once, unbiased
// variances), the momentum is restored, and the model evaluates to
// PyTorch's logits.
func TestRecalibrateBNMatchesTorch(t *testing.T) {
	ref := loadBNStats(t)
	for _, b := range backends(t) {
		t.Run(b.Name(), func(t *testing.T) {
			net, err := train.NewThinNet(b, bnNet, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer net.Close()
			setTensors(t, net.Params(), ref.Params)
			setTensors(t, net.Buffers(), ref.Buffers)
			s := &sliceStream{c: 3, h: 12, w: 12}
			for _, bt := range ref.Batches {
				s.xs = append(s.xs, bt.X)
			}
			rep, err := train.RecalibrateBN(context.Background(), b, net, s, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Layers != 2 || rep.Batches != 3 || rep.Images != 10 {
				t.Errorf("report %+v: want 2 layers, 3 batches, 10 images", rep)
			}
			for i, p := range net.Buffers() {
				near(t, p.Name, p.Value, ref.Running[i], 2e-5)
			}
			for _, l := range net.Layers {
				if bn, ok := l.(*train.BatchNorm2D); ok && bn.Momentum != ref.Momenta[0] {
					t.Errorf("momentum %g after recalibration, want %g restored", bn.Momentum, ref.Momenta[0])
				}
			}
			x, err := b.NewTensor(3, 3, 12, 12)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Release()
			if err := x.Write(ref.TestX); err != nil {
				t.Fatal(err)
			}
			y, err := net.Forward(x, false)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, 9)
			if err := y.Read(got); err != nil {
				t.Fatal(err)
			}
			near(t, "logits", got, ref.Logits, 1e-4)

			// A limit of 2 batches uses the first two only: the same as a
			// stream of those two.
			two := &sliceStream{c: 3, h: 12, w: 12, xs: s.xs[:2]}
			if _, err := train.RecalibrateBN(context.Background(), b, net, two, 0, 0); err != nil {
				t.Fatal(err)
			}
			want := weights(net)
			rep, err = train.RecalibrateBN(context.Background(), b, net, s, 0, 2)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Batches != 2 {
				t.Errorf("batches=2 passed %d batches", rep.Batches)
			}
			closeWeights(t, "first 2 of 3 batches", weights(net), want, 0)
			if _, err := train.RecalibrateBN(context.Background(), b, net, &sliceStream{c: 3, h: 12, w: 12}, 0, 0); err == nil {
				t.Error("an empty stream recalibrated without an error")
			}
		})
	}
}

// Every BatchNorm of a residual network (inside its blocks and
// shortcuts) is recalibrated: the result does not depend on the stale
// statistics it started from.
func TestRecalibrateBNResidual(t *testing.T) {
	b := backends(t)[0]
	net, err := train.NewResNet18(b, train.ResNetConfig{InChannels: 3, Classes: 3, SmallInput: true, Widths: []int{2, 3, 4, 5}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	ref := loadBNStats(t)
	s := &sliceStream{c: 3, h: 12, w: 12}
	for _, bt := range ref.Batches {
		s.xs = append(s.xs, bt.X)
	}
	run := func(stale float32) [][]float32 {
		for _, p := range net.Buffers() {
			for i := range p.Value {
				p.Value[i] = stale
			}
		}
		rep, err := train.RecalibrateBN(context.Background(), b, net, s, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Layers != 20 { // stem, 8 blocks × 2, 3 projection shortcuts
			t.Errorf("%d BatchNorm layers recalibrated, ResNet-18 has 20", rep.Layers)
		}
		return weights(net)
	}
	a, c := run(7), run(-3)
	closeWeights(t, "from other stale statistics", a, c, 0)
	for _, p := range net.Buffers() {
		if slices.Contains(p.Value, -3) {
			t.Errorf("%s kept a stale value: %v", p.Name, p.Value)
		}
	}
}

// With an EMA, Trainer.RecalibrateBN recalibrates the averaged weights —
// what Evaluate evaluates — and leaves the trained ones alone.
func TestTrainerRecalibrateBNEMA(t *testing.T) {
	b := backends(t)[0]
	net, err := train.NewThinNet(b, toyNet, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.05), 12, 3)
	defer tr.Close()
	tr.EMA = &train.EMA{Decay: 0.9}
	data := toyData(48, 6)
	if _, err := tr.TrainEpoch(context.Background(), data, nil); err != nil {
		t.Fatal(err)
	}
	s := imagesStream(data, 8)
	trained := weights(net)
	// The expectation: a network holding the average, recalibrated.
	avg, err := train.NewThinNet(b, toyNet, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer avg.Close()
	setTensors(t, append(avg.Params(), avg.Buffers()...), tr.EMA.Values)
	if _, err := train.RecalibrateBN(context.Background(), b, avg, s, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.RecalibrateBN(context.Background(), s, 0, 0); err != nil {
		t.Fatal(err)
	}
	closeWeights(t, "trained weights", weights(net), trained, 0)
	closeWeights(t, "averaged weights", tr.EMA.Values, weights(avg), 1e-6)
}

// imagesStream is d in batches of n, in order.
func imagesStream(d *train.Images, n int) *sliceStream {
	c, h, w := d.Shape()
	s := &sliceStream{c: c, h: h, w: w}
	for lo := 0; lo+n <= d.Len(); lo += n {
		x, y, idx := make([]float32, n*c*h*w), make([]int, n), make([]int, n)
		for i := range idx {
			idx[i] = lo + i
		}
		d.Fill(idx, x, y)
		s.xs = append(s.xs, x)
	}
	return s
}

// In distributed training every rank ends with the same statistics: those
// of update_bn over all the ranks' batches (here rank 0's 2 batches, then
// rank 1's 4: a cumulative average weighs each batch once).
func TestTrainerRecalibrateBNDistributed(t *testing.T) {
	open := openers(t)["reference"]
	data := toyData(48, 6)
	all := imagesStream(data, 8) // 6 batches
	shards := []*sliceStream{{c: 1, h: 12, w: 12, xs: all.xs[:2]}, {c: 1, h: 12, w: 12, xs: all.xs[2:]}}
	b := open()
	one, err := train.NewThinNet(b, toyNet, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if _, err := train.RecalibrateBN(context.Background(), b, one, all, 0, 0); err != nil {
		t.Fatal(err)
	}
	want := weights(one)
	comms := collective.NewLocal(2)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	got := make([][][]float32, 2)
	reps := make([]train.BNRecalibration, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				b := open()
				net, err := train.NewThinNet(b, toyNet, uint64(5+r)) // rank 1's weights: replaced by rank 0's
				if err != nil {
					return err
				}
				defer net.Close()
				tr := train.NewTrainer(b, net, &train.SGD{}, train.Constant(0.05), 12, 3)
				defer tr.Close()
				train.SyncBatchNorm(net, comms[r].AllReduceF64) // set aside during the pass
				if err := tr.Distribute(comms[r], 0); err != nil {
					return err
				}
				if reps[r], err = tr.RecalibrateBN(context.Background(), shards[r], 0, 0); err != nil {
					return err
				}
				got[r] = weights(net)
				if n := train.SyncBatchNorm(net, nil); n != 2*len(toyNet.Filters) {
					return fmt.Errorf("%d BatchNorms", n)
				}
				return nil
			}()
			if errs[r] != nil {
				comms[r].Close()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		closeWeights(t, fmt.Sprintf("rank %d", r), got[r], want, 1e-6)
		if reps[r].Batches != 6 || reps[r].Images != 48 {
			t.Errorf("rank %d report %+v: want the 6 batches and 48 images of both ranks", r, reps[r])
		}
	}
}
