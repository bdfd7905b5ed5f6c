package collective

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// each runs f for every member of comms, each on its own goroutine, and
// returns their errors by rank.
func each(comms []Comm, f func(c Comm) error) []error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for i, c := range comms {
		wg.Go(func() { errs[i] = f(c) })
	}
	wg.Wait()
	return errs
}

func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

func TestLocalAllReduce(t *testing.T) {
	checkGoroutines(t)
	for _, n := range []int{1, 2, 3, 5} {
		for _, size := range []int{0, 1, 7, 1000, 1 << 16} {
			comms := NewLocal(n)
			rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
			x32 := make([][]float32, n)
			x64 := make([][]float64, n)
			want32 := make([]float32, size)
			want64 := make([]float64, size)
			for r := range n {
				x32[r] = make([]float32, size)
				x64[r] = make([]float64, size)
				for i := range size {
					x32[r][i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8))))
					x64[r][i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(16)))
				}
			}
			// The reference: a sequential sum in rank order.
			for i := range size {
				s32, s64 := x32[0][i], x64[0][i]
				for r := 1; r < n; r++ {
					s32 += x32[r][i]
					s64 += x64[r][i]
				}
				want32[i], want64[i] = s32, s64
			}
			noErrors(t, each(comms, func(c Comm) error {
				if err := c.AllReduceF32(x32[c.Rank()]); err != nil {
					return err
				}
				return c.AllReduceF64(x64[c.Rank()])
			}))
			for r := range n {
				for i := range size {
					if math.Float32bits(x32[r][i]) != math.Float32bits(want32[i]) || math.Float64bits(x64[r][i]) != math.Float64bits(want64[i]) {
						t.Fatalf("n=%d size=%d rank %d [%d]: got %v, %v; want %v, %v", n, size, r, i, x32[r][i], x64[r][i], want32[i], want64[i])
					}
				}
			}
			noErrors(t, each(comms, func(c Comm) error { return c.Close() }))
		}
	}
}

func TestLocalBroadcastBarrier(t *testing.T) {
	checkGoroutines(t)
	comms := NewLocal(4)
	var arrived sync.WaitGroup
	arrived.Add(4)
	noErrors(t, each(comms, func(c Comm) error {
		for root := range c.Size() {
			x := []float32{float32(c.Rank()), -1, float32(10 * c.Rank())}
			if err := c.Broadcast(x, root); err != nil {
				return err
			}
			if x[0] != float32(root) || x[1] != -1 || x[2] != float32(10*root) {
				t.Errorf("rank %d root %d: got %v", c.Rank(), root, x)
			}
		}
		arrived.Done()
		if err := c.Barrier(); err != nil {
			return err
		}
		// Every rank has called Done before any returns from Barrier.
		arrived.Wait()
		return c.Close()
	}))
}

func TestLocalMismatch(t *testing.T) {
	checkGoroutines(t)
	comms := NewLocal(2)
	errs := each(comms, func(c Comm) error {
		return c.AllReduceF32(make([]float32, 3+c.Rank()))
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "rank 1 has all-reduce of 4 float32") && !strings.Contains(err.Error(), "rank 0 has all-reduce of 3 float32") {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	errs = each(comms, func(c Comm) error {
		if c.Rank() == 0 {
			return c.Barrier()
		}
		return c.AllReduceF64(make([]float64, 1))
	})
	for r, err := range errs {
		if err == nil {
			t.Errorf("rank %d: no error for barrier against all-reduce", r)
		}
	}
	// A mismatch leaves the group usable.
	noErrors(t, each(comms, func(c Comm) error { return c.Barrier() }))
	if err := comms[0].Broadcast(nil, 2); err == nil {
		t.Error("Broadcast from root 2 of 2 succeeded")
	}
}

func TestLocalCloseFailsPeers(t *testing.T) {
	checkGoroutines(t)
	comms := NewLocal(3)
	errc := make(chan error, 2)
	for _, c := range comms[:2] {
		go func() { errc <- c.AllReduceF32(make([]float32, 10)) }() // rank 2 never joins
	}
	time.Sleep(20 * time.Millisecond)
	comms[2].Close()
	for range 2 {
		select {
		case err := <-errc:
			if !errors.Is(err, ErrPeer) || !strings.Contains(err.Error(), "rank 2 closed") {
				t.Fatalf("pending all-reduce: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("pending all-reduce still blocked after a peer closed")
		}
	}
	if err := comms[0].Barrier(); !errors.Is(err, ErrPeer) {
		t.Fatalf("later barrier: %v", err)
	}
	if _, err := comms[1].Fork("x"); !errors.Is(err, ErrPeer) {
		t.Fatalf("later fork: %v", err)
	}
	if err := comms[2].Barrier(); !errors.Is(err, ErrClosed) {
		t.Fatalf("barrier on the closed member: %v", err)
	}
	if err := comms[2].Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestLocalCloseMidLoop closes one member while the others loop; all must
// stop with ErrPeer, none hang.
func TestLocalCloseMidLoop(t *testing.T) {
	checkGoroutines(t)
	comms := NewLocal(4)
	errs := each(comms, func(c Comm) error {
		x := make([]float32, 257)
		for i := 0; ; i++ {
			if c.Rank() == 3 && i == 50 {
				return c.Close()
			}
			if err := c.AllReduceF32(x); err != nil {
				if !errors.Is(err, ErrPeer) {
					t.Errorf("rank %d: %v", c.Rank(), err)
				}
				return nil
			}
		}
	})
	noErrors(t, errs)
}

func TestLocalFork(t *testing.T) {
	checkGoroutines(t)
	comms := NewLocal(3)
	noErrors(t, each(comms, func(c Comm) error {
		f, err := c.Fork("grads")
		if err != nil {
			return err
		}
		if f.Rank() != c.Rank() || f.Size() != c.Size() {
			t.Errorf("fork rank %d of %d, parent %d of %d", f.Rank(), f.Size(), c.Rank(), c.Size())
		}
		var wg sync.WaitGroup
		var ferr error
		wg.Go(func() {
			for i := range 100 {
				x := []float64{float64(i), 1}
				if ferr = f.AllReduceF64(x); ferr != nil {
					return
				}
				if x[0] != float64(3*i) || x[1] != 3 {
					t.Errorf("fork all-reduce %d: %v", i, x)
				}
			}
		})
		for i := range 100 {
			x := []float32{float32(i)}
			if err := c.AllReduceF32(x); err != nil {
				return err
			}
			if x[0] != float32(3*i) {
				t.Errorf("parent all-reduce %d: %v", i, x)
			}
		}
		wg.Wait()
		if ferr != nil {
			return ferr
		}
		// Forking the same name again gives a new group.
		g, err := c.Fork("grads")
		if err != nil {
			return err
		}
		if g == f {
			t.Error("second fork of a name returned the first")
		}
		if err := g.Barrier(); err != nil {
			return err
		}
		f.Close()
		g.Close()
		// Closing the forks leaves the parent alone.
		if err := c.Barrier(); err != nil {
			return err
		}
		return c.Close()
	}))
}

func BenchmarkLocalAllReduce(b *testing.B) {
	for _, n := range []int{2, 4} {
		b.Run(strconv.Itoa(n)+"ranks-1MiB", func(b *testing.B) {
			comms := NewLocal(n)
			b.SetBytes(1 << 20)
			b.ResetTimer()
			each(comms, func(c Comm) error {
				x := make([]float32, 1<<18)
				for range b.N {
					if err := c.AllReduceF32(x); err != nil {
						b.Error(err)
						return err
					}
				}
				return nil
			})
		})
	}
}
