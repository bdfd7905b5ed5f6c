package progress

import (
	"bytes"
	"testing"
)

// TestLossLine checks the training line's smoothing (the first step's loss
// as given, then 0.9 of the old and 0.1 of the new), its count, and that
// it draws nothing on a writer that is not a terminal.
func TestLossLine(t *testing.T) {
	var out bytes.Buffer
	l := NewLossLine(&out, "epoch 1/2", 100)
	l.Step(2, 10)
	if l.Loss() != 2 {
		t.Errorf("first loss %g, want 2", l.Loss())
	}
	first, next := 2.0, 1.0
	l.Step(next, 10)
	if want := 0.9*first + 0.1*next; l.Loss() != want {
		t.Errorf("smoothed loss %g, want %g", l.Loss(), want)
	}
	if n := l.bar.Items(); n != 20 {
		t.Errorf("%d images counted, want 20", n)
	}
	l.Done()
	l.Done()
	if out.Len() != 0 {
		t.Errorf("drew %q on a buffer", out.String())
	}
}
