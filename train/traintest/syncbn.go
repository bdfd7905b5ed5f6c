package traintest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/faster-training/faster/train"
)

// RunSyncBatchNorm checks synchronised BatchNorm (BatchNorm2D.Sync over the
// backend's SyncBatchNormOp): replicas holding uneven parts of one batch
// (1, 2 and 3 samples) must produce what one BatchNorm2D produces on the
// whole batch — outputs, batch statistics, running statistics, input
// gradients — and their local γ and β gradients must add up to the whole
// batch's. It runs at a plain (4) and a blocked (16) channel count.
func RunSyncBatchNorm(t *testing.T, open func(train.BackendOptions) (train.Backend, error)) {
	for _, c := range []int{4, 16} {
		t.Run(fmt.Sprintf("C%d", c), func(t *testing.T) { runSyncBN(t, open, c) })
	}
}

func runSyncBN(t *testing.T, open func(train.BackendOptions) (train.Backend, error), c int) {
	parts := []int{1, 2, 3} // samples per replica
	n, h, w := 6, 5, 3
	plane := c * h * w
	rng := rand.New(rand.NewPCG(11, uint64(c)))
	x := make([]float32, n*plane)
	dy := make([]float32, n*plane)
	randomise(x, rng, -2, 3)
	randomise(dy, rng, -1, 1)
	gamma, beta := make([]float32, c), make([]float32, c)
	randomise(gamma, rng, 0.5, 1.5)
	randomise(beta, rng, -0.5, 0.5)
	// Each BatchNorm is fed by a 1×1 convolution with identity weights: it
	// passes x through unchanged, in the layout the backend prefers for
	// convolution outputs (blocked, for oneDNN), which is what BatchNorm
	// sees inside a network.
	type bnNet struct {
		*train.Sequential
		*train.BatchNorm2D
	}
	newBN := func(b train.Backend) bnNet {
		// (its own rng: replicas build theirs concurrently; the weights are
		// overwritten anyway)
		id := must(train.NewConv2D(b, "id", train.ConvSpec{In: c, Out: c, Kernel: 1}, rand.New(rand.NewPCG(1, 1))))
		clear(id.W.Value)
		for i := range c {
			id.W.Value[i*c+i] = 1
		}
		l := must(train.NewBatchNorm2D(b, "bn", c))
		copy(l.Gamma.Value, gamma)
		copy(l.Beta.Value, beta)
		return bnNet{&train.Sequential{Layers: []train.Layer{id, l}}, l}
	}

	// The whole batch on one replica, twice (two steps move the running
	// statistics twice).
	b0 := must(open(train.BackendOptions{Threads: 1}))
	defer b0.Close()
	whole := newBN(b0)
	defer whole.Sequential.Close()
	var wantY, wantDX []float32
	for range 2 {
		xt := tensor(t, b0, []int{n, c, h, w}, x)
		wantY = read(t, must(whole.Sequential.Forward(xt, true)))
		dyt := tensor(t, b0, []int{n, c, h, w}, dy)
		wantDX = read(t, must(whole.Sequential.Backward(dyt, true)))
		xt.Release()
		dyt.Release()
	}

	red := newSummer(len(parts))
	type result struct {
		y, dx, dgamma, dbeta, rmean, rvar []float32
		err                               error
	}
	res := make([]result, len(parts))
	var wg sync.WaitGroup
	lo := 0
	for r, k := range parts {
		from := lo
		lo += k
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[r].err = func() error {
				b, err := open(train.BackendOptions{Threads: 1})
				if err != nil {
					return err
				}
				defer b.Close()
				l := newBN(b)
				defer l.Sequential.Close()
				l.Sync = func(v []float64) error { return red.sum(r, v) }
				for range 2 {
					xt, err := b.NewTensor(k, c, h, w)
					if err != nil {
						return err
					}
					defer xt.Release()
					if err := xt.Write(x[from*plane : (from+k)*plane]); err != nil {
						return err
					}
					yt, err := l.Sequential.Forward(xt, true)
					if err != nil {
						return err
					}
					res[r].y = make([]float32, k*plane)
					if err := yt.Read(res[r].y); err != nil {
						return err
					}
					dyt, err := b.NewTensor(k, c, h, w)
					if err != nil {
						return err
					}
					defer dyt.Release()
					if err := dyt.Write(dy[from*plane : (from+k)*plane]); err != nil {
						return err
					}
					dxt, err := l.Sequential.Backward(dyt, true)
					if err != nil {
						return err
					}
					res[r].dx = make([]float32, k*plane)
					if err := dxt.Read(res[r].dx); err != nil {
						return err
					}
				}
				res[r].dgamma = append([]float32(nil), l.Gamma.Grad...)
				res[r].dbeta = append([]float32(nil), l.Beta.Grad...)
				res[r].rmean = append([]float32(nil), l.RunningMean.Value...)
				res[r].rvar = append([]float32(nil), l.RunningVar.Value...)
				return nil
			}()
			if res[r].err != nil {
				red.fail()
			}
		}()
	}
	wg.Wait()
	var gotY, gotDX []float32
	dgamma, dbeta := make([]float32, c), make([]float32, c)
	for r, o := range res {
		if o.err != nil {
			t.Fatalf("replica %d: %v", r, o.err)
		}
		gotY = append(gotY, o.y...)
		gotDX = append(gotDX, o.dx...)
		for i := range c {
			dgamma[i] += o.dgamma[i]
			dbeta[i] += o.dbeta[i]
		}
		closeTo(t, fmt.Sprintf("replica %d running mean", r), o.rmean, whole.RunningMean.Value, 1e-5)
		closeTo(t, fmt.Sprintf("replica %d running variance", r), o.rvar, whole.RunningVar.Value, 1e-5)
	}
	closeTo(t, "output", gotY, wantY, 1e-5)
	closeTo(t, "input gradient", gotDX, wantDX, 1e-4)
	closeTo(t, "Σ γ gradient", dgamma, whole.Gamma.Grad, 1e-4)
	closeTo(t, "Σ β gradient", dbeta, whole.Beta.Grad, 1e-4)

	// Unsynchronised replicas would see other statistics: the check above
	// can fail.
	b1 := must(open(train.BackendOptions{Threads: 1}))
	defer b1.Close()
	alone := newBN(b1)
	defer alone.Sequential.Close()
	xt := tensor(t, b1, []int{parts[0], c, h, w}, x[:parts[0]*plane])
	defer xt.Release()
	y := read(t, must(alone.Sequential.Forward(xt, true)))
	if d := maxAbs(diff(y, wantY[:len(y)])); d < 1e-2 {
		t.Fatalf("one replica's own statistics give the global output (max diff %g): the test would not see a missing sync", d)
	}
}

func diff(a, b []float32) []float32 {
	d := make([]float32, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d
}

// summer is an in-process all-reduce for the test: each of n replicas
// calls sum with its vector; all return with the rank-ordered sum.
type summer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int
	parts   [][]float64
	arrived int
	gen     int
	out     []float64
	failed  bool
}

func newSummer(n int) *summer {
	s := &summer{n: n, parts: make([][]float64, n)}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *summer) sum(rank int, v []float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return fmt.Errorf("a replica failed")
	}
	gen := s.gen
	s.parts[rank] = append([]float64(nil), v...)
	s.arrived++
	if s.arrived == s.n {
		s.out = make([]float64, len(v))
		for _, p := range s.parts {
			for i := range s.out {
				s.out[i] += p[i]
			}
		}
		s.arrived = 0
		s.gen++
		s.cond.Broadcast()
	}
	for gen == s.gen && !s.failed {
		s.cond.Wait()
	}
	if s.failed {
		return fmt.Errorf("a replica failed")
	}
	copy(v, s.out)
	return nil
}

func (s *summer) fail() {
	s.mu.Lock()
	s.failed = true
	s.cond.Broadcast()
	s.mu.Unlock()
}
