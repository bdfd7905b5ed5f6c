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
// refuses by name; over ranks all in this process on one device (the
// twin's memory is one) it sums on the device (peerAllReduce), every rank
// getting the rank-order sum.
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
	// A group whose ranks live in other processes (DDP's): declined, so
	// the trainer's host path sums it, overlapped with the backward pass.
	if op, err := (&ncclBackend{twin}).NewAllReduce(processComm{collective.NewLocal(2)[0]}); op != nil || err != nil {
		t.Errorf("a group of other processes: %T %v; want it declined (nil, nil)", op, err)
	}
	if !collective.InProcess(collective.NewLocal(2)[0]) || collective.InProcess(processComm{collective.NewLocal(2)[0]}) {
		t.Error("collective.InProcess: want true for NewLocal's comms only")
	}
	sumOverRanks(t, func(int) *Backend { return twinBackend(t) }, true)
	// A rank on another device: every rank sums through host memory.
	sumOverRanks(t, func(r int) *Backend {
		if r == 1 {
			b := newBackend(otherTwin{newTwin()}, train.BackendOptions{})
			t.Cleanup(func() { b.Close() })
			return b
		}
		return twinBackend(t)
	}, false)
}

// processComm is a Comm that does not say its ranks are in this process
// (as Gloo's does not).
type processComm struct{ collective.Comm }

// otherTwin is a twin that says it is another device.
type otherTwin struct{ *twinMachine }

func (otherTwin) device() string { return "cuda-twin:1" }

// sumOverRanks all-reduces three ranks' tensors (two of them, so the sum
// covers two runs of memory) through the ops of backends open makes, on
// their own goroutines: every rank gets the rank-order sum, and the ops
// took the device path (all ranks here, on one device) when peer.
func sumOverRanks(t *testing.T, open func(rank int) *Backend, peer bool) {
	const n = 3
	comms := collective.NewLocal(n)
	in := [][]float32{{1, 2.5, -3, 1e-8}, {0.25, -2.5, 7, 1}, {1e8, 0.5, 3, -1}}
	out := make([][]float32, n)
	errs := make([]error, n)
	ops := make([]train.AllReduceOp, n)
	var wg sync.WaitGroup
	for r := range n {
		b := &ncclBackend{open(r)}
		x, err := b.NewTensor(3)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Release()
		y, err := b.NewTensor(1) // a second tensor: its own allocation
		if err != nil {
			t.Fatal(err)
		}
		defer y.Release()
		if err := x.Write(in[r][:3]); err != nil {
			t.Fatal(err)
		}
		if err := y.Write(in[r][3:]); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			op, err := b.NewAllReduce(comms[r])
			ops[r] = op
			for range 2 { // a second call reuses the marks
				if err == nil {
					err = op.AllReduce([]train.Tensor{x, y})
				}
				if err == nil {
					err = op.Wait()
				}
			}
			out[r] = make([]float32, 4)
			if err == nil {
				err = x.Read(out[r][:3])
			}
			if err == nil {
				err = y.Read(out[r][3:])
			}
			errs[r] = err
		}()
	}
	wg.Wait()
	for r := range n {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		if p, ok := ops[r].(*peerAllReduce); !ok || (p.g != nil) != peer {
			t.Errorf("rank %d's op %T took the device path: %v, want %v", r, ops[r], ok && p.g != nil, peer)
		}
		ops[r].Close()
		for i := range 4 {
			s1 := (in[0][i] + in[1][i]) + in[2][i]
			want := (s1 + s1) + s1 // the second call sums the sums, in rank order
			if out[r][i] != want {
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
