//go:build cgo

package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/faster-training/faster/train"
)

// TestTwinTrainerCapture: train.Trainer with CaptureStep on the twin
// (the run's first step eager, the second captured, every later one
// replayed, across epochs) ends with the bits of the same run without it
// — weights, momentum, EMA and every read loss — over three epochs, fp32
// and fp16 with a GradScaler whose first scale (10⁶) overflows fp16 for
// the first steps (skipped on the device's flag, the momentum's first
// step among them, the scale backing off on the device) and then holds,
// the loss read every second step; without an EMA the GradScaler stays on
// the device from one loss read to the next, its scale growing every
// second step. One capture serves the run: each epoch's state gets the
// previous one's memory back (Backend.spare), and the scale lives in
// device memory, so no launch changes with it.
func TestTwinTrainerCapture(t *testing.T) {
	trainerCapture(t, func(o train.BackendOptions) *Backend { return twinWith(t, o) }, 0)
}

// trainerCapture runs the plan on backends open makes; tol is 0 (bits)
// where the machine is deterministic.
func trainerCapture(t *testing.T, open func(train.BackendOptions) *Backend, tol float64) {
	for _, c := range []struct {
		p   train.Precision
		ema bool
	}{{train.Float32, true}, {train.Float16, true}, {train.Float16, false}} {
		p := c.p
		t.Run(fmt.Sprintf("%s/ema=%v", p, c.ema), func(t *testing.T) {
			o := train.BackendOptions{Precision: p}
			setup := func(capture bool) func(*train.Trainer) {
				return func(tr *train.Trainer) {
					tr.CaptureStep, tr.LossEvery = capture, 2
					if p == train.Float16 {
						tr.Scaler = train.NewGradScaler()
						tr.Scaler.Scale = 1e6
					}
					if !c.ema {
						tr.EMA = nil
						tr.Scaler.GrowthInterval = 2
					}
				}
			}
			eagerB, graphB := open(o), open(o)
			want := trainRunWith(t, eagerB, 3, "", "", setup(false))
			got := trainRunWith(t, graphB, 3, "", "", setup(true))
			if !got.bound {
				t.Fatal("the parameters were never bound to a device state")
			}
			if p == train.Float16 && (want.skipped == 0 || got.skipped != want.skipped) {
				t.Fatalf("skipped %d steps, without capture %d (want the same, more than 0)", got.skipped, want.skipped)
			}
			if len(got.losses) != len(want.losses) {
				t.Fatalf("%d steps, without capture %d", len(got.losses), len(want.losses))
			}
			for i := range want.losses {
				if d := math.Abs(got.losses[i] - want.losses[i]); !(d <= tol*math.Abs(want.losses[i])) {
					t.Fatalf("step %d loss %v, without capture %v", i+1, got.losses[i], want.losses[i])
				}
			}
			near(t, "weights", got.weights, want.weights, tol)
			near(t, "momentum", got.velocity, want.velocity, tol)
			near(t, "EMA", got.ema, want.ema, tol)
			// One warm-up and one capture for the run: the next epochs'
			// states get the same memory back, and the scale's changes
			// change no launch.
			if e, cap, r := graphB.StepRuns(); e != 1 || cap != 1 || r != 3*64/16-2 {
				t.Errorf("runs: %d eager, %d captured, %d replayed; want 1, 1, %d", e, cap, r, 3*64/16-2)
			}
			if e0, c0, r0 := eagerB.StepRuns(); e0+c0+r0 != 0 {
				t.Errorf("without CaptureStep the backend ran %d steps through RunStep", e0+c0+r0)
			}
			t.Logf("%s: %d skipped", p, got.skipped)
		})
	}
}
