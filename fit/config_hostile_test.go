package fit

import (
	"math"
	"strings"
	"testing"
)

// A float flag beyond float32's range names that bound, not "finite"
// (1e308 is a finite number: before, "--warmup 1e+308: must be a finite
// number"); NaN and Inf are named as what they are.
func TestOptimBoundsSaySo(t *testing.T) {
	for _, tc := range []struct {
		v         float64
		want, not string
	}{
		{1e308, "at most 3.4e+38 (float32's largest)", "finite"},
		{-1e308, "must not be negative", "finite"},
		{math.Inf(1), "must be finite", ""},
		{math.NaN(), "not a number", "finite"},
	} {
		c := DefaultConfig()
		c.Data.Path, c.Optim.Warmup = "x", tc.v
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "optim.warmup: ") || !strings.Contains(err.Error(), tc.want) ||
			(tc.not != "" && strings.Contains(err.Error(), tc.not)) {
			t.Errorf("--warmup %g: %v; want %q", tc.v, err, tc.want)
		}
	}
}

// --same-data resumes a checkpoint: without one it is a problem naming
// both fields (the CLI names their flags).
func TestSameDataNeedsCheckpoint(t *testing.T) {
	c := DefaultConfig()
	c.Data.Path, c.Checkpoint.SameData = "x", true
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "checkpoint.same_data: goes with a checkpoint path") {
		t.Fatalf("--same-data without --checkpoint: %v", err)
	}
	c.Checkpoint.Path = "ckpt"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
