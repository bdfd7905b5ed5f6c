package cuda

import (
	"fmt"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/train"
)

// ncclBackend is the backend on the GPU machine, as OpenBackend returns
// it: Backend with train.AllReduceBackend. At world size 1 its op sums
// through an NCCL communicator on the backend's stream (Backend.NCCL: a
// sum over one rank, which exercises NCCL's plumbing and leaves the
// values as they are); over several ranks of this process
// (collective.InProcess) it sums on the device when they all live on one
// device (peerAllReduce: DP replicas), else through host memory with the
// caller's collective.Comm; ranks in other processes (DDP's) it declines,
// so the trainer's host path sums them on its buckets' goroutine,
// overlapped with the backward pass (NCCL refuses two ranks on one GPU,
// and the unique id's exchange over several GPUs waits for a machine
// that has them). The twin (OpenTwin)
// is a plain *Backend without it: it has no NCCL, and the trainer's host
// fallback sums its tensors.
type ncclBackend struct{ *Backend }

var _ train.AllReduceBackend = (*ncclBackend)(nil)

// NewAllReduce implements train.AllReduceBackend: it declines a group
// whose ranks live in other processes (DDP's): through host memory the
// trainer's own path sums it as well, and overlaps it with the backward
// pass.
func (b *ncclBackend) NewAllReduce(comm collective.Comm) (train.AllReduceOp, error) {
	if comm.Size() != 1 {
		if !collective.InProcess(comm) {
			return nil, nil
		}
		return newPeerAllReduce(b.Backend, comm), nil
	}
	id, err := NewNCCLID()
	if err != nil {
		return nil, fmt.Errorf("cuda: all-reduce: %w", err)
	}
	c, err := b.NCCL(1, 0, id)
	if err != nil {
		return nil, fmt.Errorf("cuda: all-reduce at world size 1: %w", err)
	}
	return &ncclAllReduce{b: b.Backend, c: c}, nil
}

// ncclAllReduce is ncclAllReduce in place on each tensor, queued on the
// backend's stream.
type ncclAllReduce struct {
	b *Backend
	c *NCCLComm
}

func (o *ncclAllReduce) AllReduce(ts []train.Tensor) error {
	for i, t := range ts {
		if err := o.c.AllReduceSum(t); err != nil {
			return fmt.Errorf("cuda: all-reduce of gradient tensor %d of %d: %w", i, len(ts), err)
		}
	}
	return nil
}

// Wait waits for the stream (the sums are queued on it).
func (o *ncclAllReduce) Wait() error { return o.b.Sync() }

func (o *ncclAllReduce) Close() {
	if o.c != nil {
		o.c.Close()
		o.c = nil
	}
}

// hostAllReduce sums the tensors through host memory with comm: read,
// collective.Comm's rank-order sum, write (train's host fallback's
// arithmetic, so the same bits).
type hostAllReduce struct {
	comm collective.Comm
	flat []float32
}

func (h *hostAllReduce) AllReduce(ts []train.Tensor) error {
	n := 0
	for _, t := range ts {
		n += train.Numel(t.Shape())
	}
	h.flat = grow(h.flat, n)
	off := 0
	for i, t := range ts {
		k := train.Numel(t.Shape())
		if err := t.Read(h.flat[off : off+k]); err != nil {
			return fmt.Errorf("cuda: reading gradient tensor %d of %d: %w", i, len(ts), err)
		}
		off += k
	}
	if err := h.comm.AllReduceF32(h.flat); err != nil {
		return fmt.Errorf("cuda: all-reduce of %d gradient values over %d ranks: %w", n, h.comm.Size(), err)
	}
	off = 0
	for i, t := range ts {
		k := train.Numel(t.Shape())
		if err := t.Write(h.flat[off : off+k]); err != nil {
			return fmt.Errorf("cuda: writing gradient tensor %d of %d: %w", i, len(ts), err)
		}
		off += k
	}
	return nil
}

func (h *hostAllReduce) Wait() error { return nil }
func (h *hostAllReduce) Close()      {}
