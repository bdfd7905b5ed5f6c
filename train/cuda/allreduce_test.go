//go:build cgo

package cuda

import (
	"strings"
	"sync"
	"testing"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/train"
)

// The backend OpenBackend returns sums tensors over ranks itself
// (train.AllReduceBackend) and keeps every other optional interface; the
// twin offers no all-reduce (the trainer's host fallback sums its
// tensors). At world size 1 the op is NCCL's, which the twin's machine
// refuses by name; over two ranks it sums through host memory, every
// rank getting the rank-order sum.
func TestAllReduceOffered(t *testing.T) {
	var gpu train.Backend = &ncclBackend{}
	if _, ok := gpu.(train.AllReduceBackend); !ok {
		t.Error("the GPU's backend is no train.AllReduceBackend")
	}
	for name, ok := range map[string]bool{
		"StepCapturer": is[train.StepCapturer](gpu), "ParamStore": is[train.ParamStore](gpu),
		"LossBackend": is[train.LossBackend](gpu), "Syncer": is[train.Syncer](gpu),
	} {
		if !ok {
			t.Errorf("the GPU's backend lost %s", name)
		}
	}
	twin := twinBackend(t)
	if is[train.AllReduceBackend](twin) {
		t.Error("the twin offers an all-reduce: want the host fallback")
	}
	if _, err := (&ncclBackend{twin}).NewAllReduce(collective.NewLocal(1)[0]); err == nil || !strings.Contains(err.Error(), "NCCL") {
		t.Errorf("world size 1 on the twin's machine: %v; want NCCL refused by name", err)
	}
	comms := collective.NewLocal(2)
	in := [][]float32{{1, 2.5, -3}, {0.25, -2.5, 7}}
	out := make([][]float32, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		b := &ncclBackend{twinBackend(t)}
		x, err := b.NewTensor(3)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Release()
		if err := x.Write(in[r]); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			op, err := b.NewAllReduce(comms[r])
			if err == nil {
				defer op.Close()
				if err = op.AllReduce([]train.Tensor{x}); err == nil {
					err = op.Wait()
				}
			}
			out[r] = make([]float32, 3)
			if err == nil {
				err = x.Read(out[r])
			}
			errs[r] = err
		}()
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		for i := range 3 {
			if want := in[0][i] + in[1][i]; out[r][i] != want {
				t.Errorf("rank %d value %d: %v, want %v", r, i, out[r][i], want)
			}
		}
	}
}

func is[I any](b train.Backend) bool {
	_, ok := b.(I)
	return ok
}

// DDP at world size 1 with ZeroGrad on the twin (the host fallback sums
// its buckets): the single run's weights, bit for bit.
func TestTwinDDPOneRank(t *testing.T) { ddpOneRank(t, twinBackend(t), twinBackend(t), 0) }

// ddpOneRank trains on single as one device and on ddp as rank 0 of 1
// (Distribute, ZeroGrad), comparing the weights and momentum within tol.
func ddpOneRank(t *testing.T, single, ddp train.Backend, tol float64) {
	want := trainRun(t, single, 2, "", "")
	got := trainRunWith(t, ddp, 2, "", "", func(tr *train.Trainer) {
		tr.ZeroGrad = true
		if err := tr.Distribute(collective.NewLocal(1)[0], 1<<16); err != nil {
			t.Fatal(err)
		}
	})
	if !got.bound {
		t.Fatal("DDP trained on the host path")
	}
	near(t, "weights", got.weights, want.weights, tol)
	near(t, "momentum", got.velocity, want.velocity, tol)
}
