//go:build !cgo

package cuda

import (
	"errors"
	"testing"

	"github.com/faster-training/faster/train"
)

// Without cgo the backend is registered and says why it cannot open.
func TestBackendWithoutCgo(t *testing.T) {
	if _, err := train.Open("cuda", train.BackendOptions{}); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Open(cuda): %v, want ErrNoCgo", err)
	}
	if _, err := OpenTwin(train.BackendOptions{}); !errors.Is(err, ErrNoCgo) {
		t.Errorf("OpenTwin: %v, want ErrNoCgo", err)
	}
	if _, err := train.Open("cuda", train.BackendOptions{Device: "cpu"}); !errors.Is(err, train.ErrDevice) {
		t.Errorf("Open(cuda, cpu): %v, want ErrDevice", err)
	}
}
