package cuda_test

import (
	"testing"

	"github.com/faster-training/faster/train/cuda/kernels"
	"github.com/faster-training/faster/train/cuda/kernels/kerneltest"
)

func TestMain(m *testing.M) { kerneltest.Main(m) }

// TestTwinInBehindSchedule runs the package's other tests again with the
// twin's kernels in the Behind schedule (kernels.Schedule): one thread of
// each block a stretch between SYNCs behind the others, the blocks and the
// others in reverse order. The twin's journeys (paired ops, capture, DDP,
// resume) compare bits or the reference backend's figures, so a race in a
// kernel as the backend launches it fails there.
func TestTwinInBehindSchedule(t *testing.T) {
	kerneltest.Rerun(t, "^TestTwinInBehindSchedule$", kernels.Behind)
}
