package train

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
// captured again next time.
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

// RunStepOn runs step through b's StepCapturer when capture is on and b
// implements one, else calls it (StepEager): the trainer's one line.
func RunStepOn(b Backend, capture bool, key string, step func() error) (StepRun, error) {
	if c, ok := b.(StepCapturer); ok && capture {
		return c.RunStep(key, step)
	}
	return StepEager, step()
}
