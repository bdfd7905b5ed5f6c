package kernels

import (
	"os"
	"testing"

	cudakernels "github.com/faster-training/faster/train/cuda/kernels"
	"github.com/faster-training/faster/train/cuda/kernels/kerneltest"
)

// TestMain runs the resize kernels' CPU build in reverse order when
// kerneltest.Env names a schedule other than forward (they have no phases,
// so every other schedule comes to the order of blocks and threads).
func TestMain(m *testing.M) {
	SetReverse(kerneltest.FromEnv() != cudakernels.Forward)
	os.Exit(m.Run())
}

// TestInReverse runs the package's other tests again with the blocks and
// threads in reverse order: they compare the resize's bytes with augment's,
// so a kernel whose output depends on the order fails there.
func TestInReverse(t *testing.T) {
	kerneltest.Rerun(t, "^TestInReverse$", cudakernels.Reverse)
}
