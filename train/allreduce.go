package train

import (
	"fmt"
	"slices"

	"github.com/faster-training/faster/collective"
)

// Collectives on tensors: how a data-parallel step sums gradients that
// live in a backend's tensors (a bound device State), another optional
// interface in the pattern of device.go. A backend that sums them itself
// (NCCL on its stream, or its own copies through pinned host memory)
// implements AllReduceBackend; any other gets hostAllReduce, which reads
// the tensors into host memory, sums them with the collective.Comm and
// writes them back. The host path (Params' slices) never comes here.
//
// DP (AddReplica) gives each device of the process an AllReduceOp over a
// local group of its devices (collective.NewLocal), called on the
// device's own goroutine once its backward pass ends; DDP (Distribute)
// sums each bucket of gradient tensors over the ranks as the backward
// pass finishes it.

// AllReduceBackend is implemented by backends that sum their tensors over
// a group of ranks themselves.
type AllReduceBackend interface {
	// NewAllReduce returns an op summing this backend's tensors over
	// comm's ranks. comm stays the caller's; the op uses it (or what it
	// names: its rank and size) from the goroutine that calls AllReduce.
	// It may decline, with nil and no error, a group it has no faster way
	// to sum than through host memory (ranks in other processes): the
	// trainer's own host path then sums it, overlapped with the backward
	// pass (DDP's buckets go to the collective on a goroutine of their
	// own, where an op's AllReduce runs on the trainer's).
	NewAllReduce(comm collective.Comm) (AllReduceOp, error)
}

// AllReduceOp sums tensors over the ranks of a group.
type AllReduceOp interface {
	// AllReduce sums each of ts element-wise over the ranks, in place,
	// every rank getting the same bits: collective.Comm's rank-order sum,
	// ((x0 + x1) + x2) + …. Every rank calls it with tensors of the same
	// shapes in the same order. It may queue the work on the device and
	// return; later work on the same device sees the sums.
	AllReduce(ts []Tensor) error
	// Wait returns once every AllReduce queued so far has finished, with
	// the first error of any of them.
	Wait() error
	Close()
}

// NewAllReduce is b's AllReduceOp over comm, or the host adapter (also
// where b declines comm).
func NewAllReduce(b Backend, comm collective.Comm) (AllReduceOp, error) {
	op, err := backendAllReduce(b, comm)
	if err != nil || op != nil {
		return op, err
	}
	return &hostAllReduce{comm: comm}, nil
}

// backendAllReduce is b's own AllReduceOp over comm; nil where b has none
// or declines comm.
func backendAllReduce(b Backend, comm collective.Comm) (AllReduceOp, error) {
	ab, ok := b.(AllReduceBackend)
	if !ok {
		return nil, nil
	}
	op, err := ab.NewAllReduce(comm)
	if err != nil {
		return nil, fmt.Errorf("train: %s: all-reduce on the device: %w", b.Name(), err)
	}
	return op, nil
}

// hostAllReduce is AllReduceOp through host memory: the tensors are read
// into one buffer, summed with the Comm, and written back.
type hostAllReduce struct {
	comm collective.Comm
	flat []float32
}

var _ AllReduceOp = (*hostAllReduce)(nil)

func (h *hostAllReduce) AllReduce(ts []Tensor) error {
	n := 0
	for _, t := range ts {
		n += Numel(t.Shape())
	}
	h.flat = slices.Grow(h.flat[:0], n)[:n]
	if err := readTensors(h.flat, ts); err != nil {
		return err
	}
	if err := h.comm.AllReduceF32(h.flat); err != nil {
		return fmt.Errorf("train: all-reduce of %d gradient values over %d ranks: %w", n, h.comm.Size(), err)
	}
	return writeTensors(ts, h.flat)
}

func (h *hostAllReduce) Wait() error { return nil }
func (h *hostAllReduce) Close()      {}

// readTensors copies ts, one after the other, into flat.
func readTensors(flat []float32, ts []Tensor) error {
	off := 0
	for i, t := range ts {
		k := Numel(t.Shape())
		if err := t.Read(flat[off : off+k]); err != nil {
			return fmt.Errorf("train: reading gradient tensor %d of %d: %w", i, len(ts), err)
		}
		off += k
	}
	return nil
}

// writeTensors copies flat into ts, one after the other.
func writeTensors(ts []Tensor, flat []float32) error {
	off := 0
	for i, t := range ts {
		k := Numel(t.Shape())
		if err := t.Write(flat[off : off+k]); err != nil {
			return fmt.Errorf("train: writing gradient tensor %d of %d: %w", i, len(ts), err)
		}
		off += k
	}
	return nil
}

// ---- zero_grad() on a device state ----

// GradAccumulator is implemented by a State that keeps torch's
// zero_grad() without set_to_none (Trainer.ZeroGrad) on its device: the
// gradients are zeroed, the backward pass writes into scratch tensors of
// the state's, and those are added into the gradients, as the host path
// does with its slices (so the same bits). A State without it trains
// ZeroGrad on the host path.
type GradAccumulator interface {
	// ScratchGrad is the scratch tensor of param i (the shape of its
	// gradient), owned by the state.
	ScratchGrad(i int) (Tensor, error)
	// ZeroGrads sets every gradient to zero.
	ZeroGrads() error
	// AccumulateGrads adds each param's scratch into its gradient.
	AccumulateGrads() error
}
