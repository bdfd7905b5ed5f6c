//go:build !cgo

package cuda

import "github.com/faster-training/faster/train"

// NCCLID is ncclUniqueId (see nccl_cgo.go); without cgo there is no NCCL.
type NCCLID [128]byte

// NewNCCLID fails with ErrNoCgo.
func NewNCCLID() (NCCLID, error) { return NCCLID{}, ErrNoCgo }

// NCCLComm is the NCCL communicator; without cgo none opens.
type NCCLComm struct{}

// NCCL fails with ErrNoCgo.
func (b *Backend) NCCL(nranks, rank int, id NCCLID) (*NCCLComm, error) { return nil, ErrNoCgo }

// AllReduceSum fails with ErrNoCgo.
func (c *NCCLComm) AllReduceSum(train.Tensor) error { return ErrNoCgo }

// Close does nothing.
func (c *NCCLComm) Close() error { return nil }
