package train

import (
	"errors"
	"fmt"
)

// StepCapturer is implemented by backends that can record one training
// step's device work and replay the record for later steps of the same
// shapes (CUDA graphs: issue 37 §2), so a step costs one launch instead
// of one per kernel. The trainer hands the step as a function that queues
// its work (inputs and labels written into fixed tensors, forward,
// backward, the optimiser's step); the backend runs it eagerly, captures
// it, or runs it in replay mode, where the function's Go side runs again
// (so each step's inputs, labels and learning rate are staged) while its
// device calls are checked against the record instead of queued, and the
// record is launched at the end. A step whose calls differ from the
// record (another pointer, shape or argument) runs eagerly and is
// captured again next time: a record may outlive the memory it names,
// since no step replays it unless its calls name the same memory. The
// trainer keeps it from one TrainStream call to the next and releases it
// at Close.
//
// Inside a captured or replayed step nothing may be read back to the
// host (losses, finite flags: read them once per interval, outside the
// step) nor allocated; such a step fails with an error naming the call.
// Copies into the device inside the step are staged and land before the
// recorded work, so a step may copy into a buffer only before any of its
// work reads or writes it (inputs, labels, the learning rate).
//
// A trainer uses it only when the backend implements it and its options
// ask for it; every other backend, and the option off, keeps the eager
// path.
type StepCapturer interface {
	// RunStep runs step under key, which names its shapes (the batch's
	// and the model's): the first call of a key runs eagerly (the
	// warm-up: allocations, algorithm choices), the second captures,
	// later ones replay. A new key drops the record.
	RunStep(key string, step func() error) (StepRun, error)
	// ReleaseStep drops the record (the next step of any key is eager).
	ReleaseStep()
}

// StepRun is how StepCapturer.RunStep ran a step.
type StepRun int

const (
	StepEager    StepRun = iota // queued call by call, as without a capturer
	StepCaptured                // recorded, then the record launched once
	StepReplayed                // the record launched
)

func (r StepRun) String() string {
	switch r {
	case StepEager:
		return "eager"
	case StepCaptured:
		return "captured"
	case StepReplayed:
		return "replayed"
	}
	return "StepRun(?)"
}

// CaptureStats is how a StepCapturer ran the steps it was given.
type CaptureStats struct {
	Eager    int `json:"eager"`
	Captured int `json:"captured"`
	Replayed int `json:"replayed"`
	// Refusals counts the captures the device refused; Refused is why it
	// refused the last ("" if it never did). A refused step ran eagerly,
	// and the next step of its shapes warmed up again before one more
	// try; GaveUp: the backend stopped capturing after its last refusal,
	// so every later step ran eagerly.
	Refusals int    `json:"refusals,omitempty"`
	Refused  string `json:"refused,omitempty"`
	GaveUp   bool   `json:"gave_up,omitempty"`
}

// CaptureReporter is implemented by a StepCapturer that counts how it ran
// the steps: a run's summary reports it, so that steps the device refused
// to capture are not called graphed.
type CaptureReporter interface {
	CaptureStats() CaptureStats
}

// CaptureStatsOf is b's CaptureStats, if it reports them.
func CaptureStatsOf(b Backend) (CaptureStats, bool) {
	if r, ok := b.(CaptureReporter); ok {
		return r.CaptureStats(), true
	}
	return CaptureStats{}, false
}

// RunStepOn runs step through b's StepCapturer when capture is on and b
// implements one, else calls it (StepEager): the trainer's one line.
func RunStepOn(b Backend, capture bool, key string, step func() error) (StepRun, error) {
	if c, ok := b.(StepCapturer); ok && capture {
		return c.RunStep(key, step)
	}
	return StepEager, step()
}

// ScalerState is implemented by a State that keeps the GradScaler on its
// device, as torch keeps the scale, the growth tracker and found_inf as
// tensors and updates them with _amp_update_scale_: a step's unscale, the
// skip of a step whose gradients are not finite and the scale's update
// all run there, so a step with a GradScaler reads nothing back (a
// captured step cannot; an eager one saves a synchronisation a step).
// Its backend's LossOp implements ScaledLossOp, which reads the scale
// there too.
//
// The trainer uses it where every device's state and loss op do: it
// copies its GradScaler onto each device when it binds the states
// (PushScaler) and reads the first device's back (PullScaler) at the
// steps that read the loss, before a checkpoint and when it unbinds — and
// after every step when an EMA must know whether the step was taken.
// Replicas and ranks sum their gradients before the unscale, so their
// flags, and their scalers, agree.
type ScalerState interface {
	// PushScaler copies s (its scale, growth tracker, skipped count and
	// factors) onto the device.
	PushScaler(s *GradScaler) error
	// PullScaler reads the device's scale, growth tracker and skipped
	// count into s (a synchronisation).
	PullScaler(s *GradScaler) error
	// UnscaleScaled multiplies every gradient by the inverse of the
	// device's scale (float32(1/Scale), as Unscale) and sets the device's
	// flag when one is not finite; nothing is read back.
	UnscaleScaled() error
	// SGDStepScaled is SGDStep, skipped on the device when the flag of
	// the last UnscaleScaled is set (the momentum then stays as it was,
	// or absent), followed by the scale's update from the flag
	// (GradScaler.Update's arithmetic).
	SGDStepScaled(opt *SGD, lr float64) error
}

// ScaledLossOp is implemented by a LossOp whose gradient can be scaled by
// the device's scale of a ScalerState of the same backend: Forward with
// gradScale that scale's share (ScaleShare).
type ScaledLossOp interface {
	ForwardScaled(logits Tensor, labels []int, s ScalerState, share ScaleShare) (Tensor, error)
}

// ScaleShare is a device's share of the loss scale: Forward's gradScale
// is ((Scale / Ranks) · Rows) / Local, in float64 as the trainer computes
// it on the host — Ranks the processes (the gradients are summed over
// them), Rows the device's rows of its rank's Local batch.
type ScaleShare struct{ Ranks, Rows, Local int }

// Of is the share's gradScale for scale.
func (s ScaleShare) Of(scale float64) float64 {
	return scale / float64(s.Ranks) * float64(s.Rows) / float64(s.Local)
}

// capturable reports why the trainer cannot run its steps through a
// StepCapturer (nil: it can). Capture takes one device of one process
// and a device state (ParamStore) whose step needs no host read.
func (t *Trainer) capturable() error {
	name := t.Backend.Name()
	switch {
	case !implementsCapture(t.Backend):
		return fmt.Errorf("train: CaptureStep: backend %s does not implement StepCapturer", name)
	case len(t.devs) > 1:
		return fmt.Errorf("train: CaptureStep with %d devices: one device only (data-parallel replicas run eagerly)", len(t.devs))
	case t.dist != nil:
		return errors.New("train: CaptureStep with Distribute: one process only")
	case !t.native:
		return fmt.Errorf("train: CaptureStep: backend %s trains this configuration on the host path (a device state is needed: ZeroGrad, SyncBN or a host-only option)", name)
	}
	if t.Scaler != nil && t.scaled() == nil {
		return fmt.Errorf("train: CaptureStep with a GradScaler: backend %s's state keeps no GradScaler on the device (ScalerState)", name)
	}
	return nil
}

func implementsCapture(b Backend) bool {
	_, ok := b.(StepCapturer)
	return ok
}

// ImplementsCapture reports whether b can run a training step as a
// captured graph (StepCapturer): what a configuration asking for it is
// checked against.
func ImplementsCapture(b Backend) bool { return implementsCapture(b) }

// capturedStep runs one step's device work (input staged into slot 0
// from the held batch s, forward, backward, the GradScaler's unscale,
// the optimiser's step and the scale's update) through the backend's
// StepCapturer, then, outside the captured region, reads the loss's sums
// and the GradScaler (when read, or every step with an EMA). It returns
// the loss as forwardBackward does and whether a step was skipped (see
// StepResult.Skipped).
func (t *Trainer) capturedStep(s int, read bool, lr float64) (Result, bool, error) {
	if err := t.capturable(); err != nil {
		return Result{}, false, err
	}
	rows := t.held[s].rows != nil
	if rows {
		// Rows in device memory come from a ring of buffers: read them
		// into slot 0 before the captured region, whose record names no
		// address that changes from step to step.
		err := t.stageDevice(0, t.held[s].batch(), t.LocalBatch())
		t.held[s].rows = nil
		if err != nil {
			return Result{}, false, err
		}
	}
	step := func() error {
		if !rows {
			if err := t.stageDevice(0, t.held[s].batch(), t.LocalBatch()); err != nil {
				return err
			}
		}
		if _, err := t.forwardBackward(0, false); err != nil {
			return err
		}
		if t.scaled() != nil {
			return t.scaledStep(lr)
		}
		return t.state.SGDStep(t.Opt, lr)
	}
	run, err := RunStepOn(t.Backend, true, fmt.Sprint("step ", t.inShape), step)
	if err != nil {
		return Result{}, false, fmt.Errorf("train: %s step: %w", run, err)
	}
	var r Result
	if read {
		sums, err := t.devs[0].loss.Sums()
		if err != nil {
			return Result{}, false, fmt.Errorf("train: reading the loss: %w", err)
		}
		r = Result{Loss: sums.Loss, Correct1: sums.Top1, Correct5: sums.Top5, Samples: sums.Samples}
		if r.Samples > 0 {
			r.Loss /= float64(r.Samples)
		}
	}
	skipped, err := t.readScaler(read)
	return r, skipped, err
}

// heldBatch is a batch the feeder copied into host memory of the
// trainer's (a captured step stages it into the device inside the step:
// the feeder's goroutine must not call the backend while a step runs).
//
// Rows in device memory are not copied: the held batch keeps them (their
// producer's memory stays out of its ring until Done), and the step reads
// them into the input slot before its captured region.
//
// The batch is held in the backend's host memory when it has some
// (HostMemoryBackend: pinned, so the step's copy reads it in place), else
// in Go memory; x and pix are views of whichever holds it.
type heldBatch struct {
	x     []float32
	y     []int
	pix   []byte
	b     ByteBatch
	rows  *DeviceRows
	mem   HostMemory // nil: Go memory (goX, goPix)
	goX   []float32
	goPix []byte
}

// hold copies b into h. It runs once no copy reads h any more: run
// waits for the step's copies (heldBatch.wait) before handing h back to
// the feeder, and prepare for every held batch before the feeder starts.
func (h *heldBatch) hold(b Batch) {
	h.rows.release() // a step always takes its rows; this is the error path's
	h.y = append(h.y[:0], b.Y...)
	h.b, h.rows = b.Bytes, b.Rows
	h.x, h.pix = nil, nil
	if b.Rows != nil {
		return
	}
	if b.Bytes.Pixels != nil {
		if h.pix = h.bytes(len(b.Bytes.Pixels)); h.pix != nil {
			copy(h.pix, b.Bytes.Pixels)
		} else {
			h.goPix = append(h.goPix[:0], b.Bytes.Pixels...)
			h.pix = h.goPix
		}
		h.b.Pixels = h.pix
		return
	}
	if h.x = h.floats(len(b.X)); h.x != nil {
		copy(h.x, b.X)
	} else {
		h.goX = append(h.goX[:0], b.X...)
		h.x = h.goX
	}
}

func (h *heldBatch) batch() Batch {
	b := Batch{Y: h.y, Bytes: h.b, Rows: h.rows}
	if h.b.Pixels == nil && h.rows == nil {
		b.X = h.x
	}
	return b
}

// releaseRows gives back rows the held batch still keeps (a run that
// ended before its step).
func (h *heldBatch) releaseRows() {
	h.rows.release()
	h.rows = nil
}
