package train_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/train"
)

// trainToy trains a toy ThinNet for two epochs of 48 samples (global batch
// 12) with the given set-up and returns its weights and buffers. It may
// run on a goroutine other than the test's.
func trainToy(open func() train.Backend, setup func(tr *train.Trainer) error) ([][]float32, error) {
	return trainToyNet(open, setup, func(n *train.Sequential) train.Layer { return n })
}

// opaque hides that a network is a Sequential (so it reports no gradients
// layer by layer).
type opaque struct{ train.Layer }

func trainToyNet(open func() train.Backend, setup func(tr *train.Trainer) error, wrap func(*train.Sequential) train.Layer) ([][]float32, error) {
	b := open()
	net, err := train.NewThinNet(b, toyNet, 5)
	if err != nil {
		return nil, err
	}
	defer net.Close()
	tr := train.NewTrainer(b, wrap(net), &train.SGD{Momentum: 0.9, WeightDecay: 1e-4}, train.Constant(0.05), 12, 3)
	defer tr.Close()
	if setup != nil {
		if err := setup(tr); err != nil {
			return nil, err
		}
	}
	data := toyData(48, 6)
	for range 2 {
		if _, err := tr.TrainEpoch(context.Background(), data, nil); err != nil {
			return nil, err
		}
	}
	return weights(net), nil
}

func mustTrain(t *testing.T, open func() train.Backend, setup func(tr *train.Trainer) error) [][]float32 {
	t.Helper()
	w, err := trainToy(open, setup)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// closeWeights compares two models' tensors relative to each tensor's
// largest magnitude.
func closeWeights(t *testing.T, what string, got, want [][]float32, tol float64) {
	t.Helper()
	worst := 0.0
	for i := range want {
		scale := 1e-3
		for _, v := range want[i] {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		for j := range want[i] {
			worst = math.Max(worst, math.Abs(float64(got[i][j]-want[i][j]))/scale)
		}
	}
	if worst > tol {
		t.Errorf("%s: weights differ by %.3g (relative), tolerance %g", what, worst, tol)
	}
}

func openers(t *testing.T) map[string]func() train.Backend {
	m := map[string]func() train.Backend{}
	for _, name := range train.Backends() {
		m[name] = func() train.Backend {
			b, err := train.Open(name, train.BackendOptions{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}
	}
	return m
}

// Data parallelism over 2 and 3 devices (12 = 4+4+4; 3 devices of 12 split
// evenly, 5 of 12 unevenly: 3+3+2+2+2), with SyncBN, trains the same weights
// as one device on the same global batches. Without SyncBN the BatchNorm
// statistics are per device, and the weights differ: the check can fail.
func TestDataParallelMatchesSingle(t *testing.T) {
	for name, open := range openers(t) {
		t.Run(name, func(t *testing.T) {
			want := mustTrain(t, open, nil)
			for _, n := range []int{2, 3, 5} {
				for _, sync := range []bool{true, false} {
					got := mustTrain(t, open, func(tr *train.Trainer) error {
						comms := collective.NewLocal(n)
						if sync {
							train.SyncBatchNorm(tr.Net, comms[0].AllReduceF64)
						}
						for i := 1; i < n; i++ {
							b := open()
							net, err := train.NewThinNet(b, toyNet, uint64(100+i)) // other initial weights: replaced
							if err != nil {
								return err
							}
							t.Cleanup(net.Close)
							if sync {
								train.SyncBatchNorm(net, comms[i].AllReduceF64)
							}
							if err := tr.AddReplica(b, net); err != nil {
								return err
							}
						}
						return nil
					})
					if sync {
						closeWeights(t, fmt.Sprintf("%d devices, SyncBN", n), got, want, 2e-4)
					} else if d := maxRel(got, want); d < 1e-3 {
						t.Errorf("%d devices without SyncBN match single-device training (%.2g): the comparison cannot see a difference", n, d)
					}
				}
			}
		})
	}
}

func maxRel(got, want [][]float32) float64 {
	worst := 0.0
	for i := range want {
		for j := range want[i] {
			worst = math.Max(worst, math.Abs(float64(got[i][j]-want[i][j]))/math.Max(1e-3, math.Abs(float64(want[i][j]))))
		}
	}
	return worst
}

// Distributed data parallelism, ranks being goroutines on a local group:
// every rank ends with the single-device weights (buckets of 1 KiB, so
// several all-reduces overlap each backward pass).
func TestDistributedMatchesSingle(t *testing.T) {
	for name, open := range openers(t) {
		t.Run(name, func(t *testing.T) {
			want := mustTrain(t, open, nil)
			for _, c := range []struct {
				n    int
				wrap func(*train.Sequential) train.Layer
			}{{2, nil}, {3, nil}, {2, func(s *train.Sequential) train.Layer { return opaque{s} }}} {
				n := c.n
				if c.wrap == nil {
					c.wrap = func(s *train.Sequential) train.Layer { return s }
				}
				comms := collective.NewLocal(n)
				got := make([][][]float32, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				for r := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						got[r], errs[r] = trainToyNet(open, func(tr *train.Trainer) error {
							inner := tr.Net
							if o, ok := inner.(opaque); ok {
								inner = o.Layer
							}
							train.SyncBatchNorm(inner, comms[r].AllReduceF64)
							return tr.Distribute(comms[r], 1024)
						}, c.wrap)
						if errs[r] != nil {
							comms[r].Close() // the other ranks fail instead of waiting
						}
					}()
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}
				for r := range n {
					closeWeights(t, fmt.Sprintf("rank %d of %d", r, n), got[r], want, 2e-4)
				}
				for _, c := range comms {
					c.Close()
				}
			}
		})
	}
}

// Overlapped input, set_to_none and zero_grad, and AMP's loss scaling at
// a power of two are the same arithmetic: the weights are bit-identical.
func TestStepVariantsSameWeights(t *testing.T) {
	for name, open := range openers(t) {
		t.Run(name, func(t *testing.T) {
			want := mustTrain(t, open, func(tr *train.Trainer) error { tr.NoOverlap = true; return nil })
			for what, f := range map[string]func(*train.Trainer) error{
				"overlap":  nil,
				"zerograd": func(tr *train.Trainer) error { tr.ZeroGrad = true; return nil },
				"scaler":   func(tr *train.Trainer) error { tr.Scaler = train.NewGradScaler(); return nil },
			} {
				got := mustTrain(t, open, f)
				for i := range want {
					for j := range want[i] {
						if got[i][j] != want[i][j] {
							t.Fatalf("%s: tensor %d element %d is %g, want %g", what, i, j, got[i][j], want[i][j])
						}
					}
				}
			}
		})
	}
}

// The input feeder stops with the epoch: early stop, cancellation and
// data errors leave no goroutine behind and keep the position exact.
func TestFeederStops(t *testing.T) {
	b := train.NewReference(train.BackendOptions{Threads: 1})
	net, err := train.NewThinNet(b, toyNet, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	data := toyData(96, 2)
	before := runtime.NumGoroutine()
	for _, noOverlap := range []bool{false, true} {
		tr := train.NewTrainer(b, net, &train.SGD{}, train.Constant(0.01), 8, 1)
		tr.NoOverlap = noOverlap
		if _, err := tr.TrainEpoch(context.Background(), data, func(r train.StepResult) error {
			if r.Step == 3 {
				return train.ErrStop
			}
			return nil
		}); err != nil || tr.Step != 3 {
			t.Fatalf("stop after step 3: err %v, at step %d", err, tr.Step)
		}
		ctx, cancel := context.WithCancel(context.Background())
		_, err := tr.TrainEpoch(ctx, data, func(r train.StepResult) error {
			if r.Step == 5 {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) || tr.Step != 5 {
			t.Fatalf("cancel after step 5: err %v, at step %d", err, tr.Step)
		}
		boom := errors.New("boom")
		_, err = tr.TrainStream(context.Background(), &failingStream{data: data, after: 2, err: boom}, nil)
		if !errors.Is(err, boom) {
			t.Fatalf("stream error: got %v", err)
		}
		tr.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines left running (had %d)", n, before)
	}
}

// failingStream yields batches of data and then an error.
type failingStream struct {
	data  *train.Images
	after int
	err   error
}

func (s *failingStream) Shape() (c, h, w int) { return s.data.Shape() }
func (s *failingStream) Len() int             { return s.data.Len() }
func (s *failingStream) Steps() int           { return s.data.Len() / 8 }
func (s *failingStream) Epoch(ctx context.Context, e, skip int) iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		c, h, w := s.data.Shape()
		x, y := make([]float32, 8*c*h*w), make([]int, 8)
		for k := skip; ; k++ {
			if k == skip+s.after {
				yield(train.Batch{}, s.err)
				return
			}
			idx := []int{0, 1, 2, 3, 4, 5, 6, 7}
			for i := range idx {
				idx[i] += 8 * k
			}
			s.data.Fill(idx, x, y)
			if !yield(train.Batch{X: x, Y: y}, nil) {
				return
			}
		}
	}
}

// CommStats counts a rank's steps and their buckets; AllReduceGrads sums
// the current gradients over the ranks in the same buckets without a
// forward or backward pass, and leaves CommStats as it was.
func TestCommStatsAndAllReduceGrads(t *testing.T) {
	const n = 2
	comms := collective.NewLocal(n)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	stats := make([]train.CommStats, n)
	after := make([]train.CommStats, n)
	grads := make([][][]float32, n)
	params := 0
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			b := train.NewReference(train.BackendOptions{Threads: 1})
			defer b.Close()
			net, err := train.NewThinNet(b, toyNet, 5)
			if err != nil {
				errs[r] = err
				return
			}
			defer net.Close()
			tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.05), 12, 3)
			defer tr.Close()
			if errs[r] = tr.Distribute(comms[r], 1024); errs[r] != nil {
				return
			}
			if _, errs[r] = tr.TrainEpoch(context.Background(), toyData(48, 6), nil); errs[r] != nil {
				return
			}
			stats[r] = tr.CommStats()
			for _, p := range net.Params() {
				for j := range p.Grad {
					p.Grad[j] = float32(r + 1)
				}
				if r == 0 {
					params += len(p.Grad)
				}
			}
			if errs[r] = tr.AllReduceGrads(); errs[r] != nil {
				return
			}
			after[r] = tr.CommStats()
			for _, p := range net.Params() {
				grads[r] = append(grads[r], p.Grad)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r := range n {
		s := stats[r]
		sum := 0
		for _, b := range s.Buckets {
			sum += b
		}
		if s.Steps != 4 || len(s.Buckets) < 2 || sum != 4*params || s.AllReduce <= 0 || s.Exposed <= 0 {
			t.Errorf("rank %d: %+v; want 4 steps, buckets of %d bytes in all", r, s, 4*params)
		}
		if after[r].Steps != s.Steps || after[r].AllReduce != s.AllReduce {
			t.Errorf("rank %d: AllReduceGrads changed CommStats: %+v, then %+v", r, s, after[r])
		}
		for _, g := range grads[r] {
			for _, v := range g {
				if v != 3 {
					t.Fatalf("rank %d: a gradient is %g after AllReduceGrads, want 1+2", r, v)
				}
			}
		}
	}
}
