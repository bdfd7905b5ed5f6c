//go:build cgo

package cuda

/*
#include <stdlib.h>
#include <string.h>
#include "dl.h"
#include "calls.h"
#include "gpu.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/faster-training/faster/train"
)

// NCCLID is ncclUniqueId: 128 bytes that rank 0 makes (NewNCCLID) and
// every rank passes to Backend.NCCL; ncclCommInitRank takes it by value.
type NCCLID [128]byte

// NewNCCLID is ncclGetUniqueId.
func NewNCCLID() (NCCLID, error) {
	var id NCCLID
	if err := needNCCL(); err != nil {
		return id, err
	}
	if r := C.call_ncclGetUniqueId(unsafe.Pointer(&id[0])); r != ncclSuccess {
		return id, ncclError("ncclGetUniqueId", r)
	}
	return id, nil
}

func needNCCL() error {
	if !loaded(NCCL) {
		return fmt.Errorf("cuda: NCCL not loaded: %w", &LoadError{Attempts: load()})
	}
	return nil
}

// ncclError names r, with NCCL's last error's text where it has one
// (which step failed: ncclGetErrorString says "internal error" alone).
func ncclError(call string, r C.int) error {
	name := C.GoString(C.call_ncclGetErrorString(r))
	if last := C.GoString(C.call_ncclGetLastError()); last != "" && last != name {
		name += ": " + last
	}
	return &Error{Call: call, Code: int(r), Name: name}
}

// NCCLComm is a NCCL communicator on a backend's stream: the all-reduce
// the data-parallel code calls on gradients that stay on the device.
// PREPARED, NOT YET RUN on a GPU (world size 1 first: GPU.md).
type NCCLComm struct {
	host   dnnHost
	stream unsafe.Pointer
	comm   unsafe.Pointer
	b      *Backend
}

// ncclMachine is a machine that can host a communicator: the GPU's (and
// the stand-ins' in tests).
type ncclMachine interface {
	dnnHost
	ncclStream() unsafe.Pointer
}

// NCCL joins rank of nranks with id (ncclCommInitRank, the id by value)
// on the backend's device and stream. The twin has none: an error.
func (b *Backend) NCCL(nranks, rank int, id NCCLID) (*NCCLComm, error) {
	m, ok := b.m.(ncclMachine)
	if !ok {
		return nil, fmt.Errorf("cuda: NCCL needs the GPU machine, not %s", b.m.device())
	}
	if err := needNCCL(); err != nil {
		return nil, err
	}
	if nranks < 1 || rank < 0 || rank >= nranks {
		return nil, fmt.Errorf("cuda: NCCL rank %d of %d", rank, nranks)
	}
	c := &NCCLComm{host: m, stream: m.ncclStream(), b: b}
	cid := (*C.struct_faster_nccl_id)(C.malloc(C.size_t(len(id))))
	defer C.free(unsafe.Pointer(cid))
	C.memcpy(unsafe.Pointer(cid), unsafe.Pointer(&id[0]), C.size_t(len(id)))
	err := m.do(func() error {
		if r := C.faster_nccl_init(&c.comm, C.int(nranks), cid, C.int(rank)); r != ncclSuccess {
			return fmt.Errorf("rank %d of %d: %w", rank, nranks, ncclError("ncclCommInitRank", r))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AllReduceSum sums t across the ranks in place, queued on the stream.
func (c *NCCLComm) AllReduceSum(t train.Tensor) error {
	x, err := asT(t)
	if err != nil {
		return err
	}
	if c.comm == nil {
		return fmt.Errorf("cuda: NCCL communicator closed")
	}
	return c.host.do(func() error {
		if r := C.faster_nccl_sum_f32(c.comm, C.ulonglong(x.p), C.size_t(x.n), c.stream); r != ncclSuccess {
			return fmt.Errorf("%d floats: %w", x.n, ncclError("ncclAllReduce", r))
		}
		return nil
	})
}

// Close is ncclCommDestroy (after the queued work).
func (c *NCCLComm) Close() error {
	if c.comm == nil {
		return nil
	}
	err := c.host.sync()
	c.host.do(func() error {
		if r := C.faster_nccl_destroy(c.comm); r != ncclSuccess && err == nil {
			err = ncclError("ncclCommDestroy", r)
		}
		return nil
	})
	c.comm = nil
	return err
}

func (m *gpuMachine) ncclStream() unsafe.Pointer { return m.stream }
