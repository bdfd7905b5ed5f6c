//go:build !cgo

package cuda

import "github.com/faster-training/faster/train"

func init() { train.Register("cuda", OpenBackend) }

// OpenBackend fails with ErrNoCgo: this build cannot load the CUDA
// libraries.
func OpenBackend(o train.BackendOptions) (train.Backend, error) {
	if _, err := checkOptions(o); err != nil {
		return nil, err
	}
	return nil, ErrNoCgo
}

// OpenTwin fails with ErrNoCgo: the twin runs kernels.cu's CPU build,
// which needs cgo.
func OpenTwin(o train.BackendOptions) (train.Backend, error) {
	if _, err := checkOptions(o); err != nil {
		return nil, err
	}
	return nil, ErrNoCgo
}

// OpenTwinRefusing fails with ErrNoCgo, as OpenTwin.
func OpenTwinRefusing(o train.BackendOptions, call string) (train.Backend, error) {
	if _, err := checkOptions(o); err != nil {
		return nil, err
	}
	return nil, ErrNoCgo
}
