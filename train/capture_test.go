package train

import (
	"errors"
	"testing"
)

// countingCapturer is a backend whose RunStep counts its calls.
type countingCapturer struct {
	*Reference
	keys []string
}

func (c *countingCapturer) RunStep(key string, step func() error) (StepRun, error) {
	c.keys = append(c.keys, key)
	return StepReplayed, step()
}
func (c *countingCapturer) ReleaseStep() {}

func TestRunStepOn(t *testing.T) {
	ran := 0
	step := func() error { ran++; return nil }
	ref := NewReference(BackendOptions{})
	if run, err := RunStepOn(ref, true, "k", step); err != nil || run != StepEager || ran != 1 {
		t.Fatalf("reference: %v %v, ran %d; want eager, once", run, err, ran)
	}
	c := &countingCapturer{Reference: ref}
	if run, err := RunStepOn(c, false, "k", step); err != nil || run != StepEager || ran != 2 || len(c.keys) != 0 {
		t.Fatalf("capture off: %v %v, ran %d, %d captures; want eager, no capture", run, err, ran, len(c.keys))
	}
	if run, err := RunStepOn(c, true, "k", step); err != nil || run != StepReplayed || ran != 3 || len(c.keys) != 1 {
		t.Fatalf("capture on: %v %v, ran %d, keys %v; want the capturer's run", run, err, ran, c.keys)
	}
	bad := errors.New("bad")
	if _, err := RunStepOn(c, true, "k", func() error { return bad }); !errors.Is(err, bad) {
		t.Fatalf("the step's error: %v", err)
	}
}
