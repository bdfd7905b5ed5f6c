package main

import (
	"strings"
	"testing"
)

// Issue 31: hostile flags and files of `faster train`.

// A --label-offset beyond any stored label is a usage error naming it
// (before: 32 GB of class names or a panic).
func TestTrainLabelOffsetBounded(t *testing.T) {
	for _, off := range []string{"4000000000", "-9223372036854775808"} {
		code, _, errs := runCLI(t, "train", "--data", t.TempDir(), "--label-offset", off)
		if code != 2 || !strings.Contains(errs, "--label-offset "+off) {
			t.Errorf("--label-offset %s: exit %d, want 2 naming it\n%s", off, code, errs)
		}
	}
}
