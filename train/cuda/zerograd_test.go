//go:build cgo

package cuda

import (
	"testing"

	"github.com/faster-training/faster/train"
)

// Trainer.ZeroGrad on the twin runs on its device state (the state is a
// train.GradAccumulator: a memset, the backward pass into scratch
// gradients, one add) where it fell back to the host path before, and
// ends with the bits of the run that lets the backward pass overwrite the
// gradients (0 + g is g), with and without CaptureStep.
func TestTwinZeroGrad(t *testing.T) {
	plain := trainRunWith(t, twinBackend(t), 2, "", "", nil)
	for _, capture := range []bool{false, true} {
		b := twinBackend(t)
		got := trainRunWith(t, b, 2, "", "", func(tr *train.Trainer) { tr.ZeroGrad, tr.CaptureStep = true, capture })
		if !got.bound {
			t.Fatalf("capture %v: ZeroGrad trained on the host path", capture)
		}
		near(t, "weights", got.weights, plain.weights, 0)
		near(t, "momentum", got.velocity, plain.velocity, 0)
		if _, _, r := b.StepRuns(); capture && r == 0 {
			t.Errorf("capture: no step replayed")
		}
	}
}
