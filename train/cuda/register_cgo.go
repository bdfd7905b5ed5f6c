//go:build cgo

package cuda

import "github.com/faster-training/faster/train"

func init() { train.Register("cuda", OpenBackend) }

// OpenBackend opens the cuda backend on the GPU o.Device names ("",
// "cuda", "cuda:N"; anything else is train.ErrDevice). Without a driver
// it fails with the *LoadError naming every library tried. The backend
// sums tensors over ranks itself (train.AllReduceBackend: NCCL at world
// size 1).
func OpenBackend(o train.BackendOptions) (train.Backend, error) {
	n, err := checkOptions(o)
	if err != nil {
		return nil, err
	}
	m, err := openGPU(n, o)
	if err != nil {
		return nil, err
	}
	return &ncclBackend{newBackend(m, o)}, nil
}

// OpenTwin opens the backend over the CPU twin: the same backend, with
// host memory, kernels.cu's CPU build and convolutions and products by
// loops (Name "cuda", Device "cuda-twin"). It is not registered: tests
// and planning call it.
func OpenTwin(o train.BackendOptions) (train.Backend, error) {
	if _, err := checkOptions(o); err != nil {
		return nil, err
	}
	return newBackend(newTwin(), o), nil
}

// OpenTwinRefusing is OpenTwin with a twin that refuses call (a kernel
// as "kernel name", "gemm MxNxK", or "end" for the capture's end) while
// it captures a step, as a GPU refuses work it cannot hold in a graph:
// for tests of a run whose capture the device refuses (its steps run
// eagerly, and the run's summary says why).
func OpenTwinRefusing(o train.BackendOptions, call string) (train.Backend, error) {
	if _, err := checkOptions(o); err != nil {
		return nil, err
	}
	m := newTwin()
	m.refuse = call
	return newBackend(m, o), nil
}
