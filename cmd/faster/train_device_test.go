package main

import (
	"strings"
	"testing"
)

// --device on this machine, which has no GPU: a bad name is a usage
// error naming it; cuda without the cuda backend in the build (exit 2)
// or without a driver (exit 1, once the backend is registered) says so
// naming the device and the backend; a CPU backend asked to run on cuda
// is a usage error naming both. bench train checks the name before any
// cell runs.
func TestTrainDeviceFlag(t *testing.T) {
	dir := writeTrainIDX(t, 16)
	base := []string{"train", "--data", dir, "--batch", "8", "--epochs", "1", "--filters", "4,4,4", "--threads", "1"}
	for _, c := range []struct {
		args  []string
		codes string // acceptable exit statuses
		want  []string
	}{
		{[]string{"--device", "gpu"}, "2", []string{`--device "gpu": want cpu, cuda or cuda:N`}},
		{[]string{"--device", "cuda:x"}, "2", []string{`--device "cuda:x"`}},
		{[]string{"--device", "cuda"}, "12", []string{"cuda:0", `backend "cuda"`}},
		{[]string{"--device", "cuda:1", "--backend", "reference"}, "2", []string{`--device cuda:1: backend "reference" runs on the cpu, not "cuda:1"`}},
	} {
		code, _, out := runCLI(t, append(base, c.args...)...)
		errs, _, _ := strings.Cut(out, "\n") // the error's one line (a usage error's hint follows)
		if !strings.ContainsRune(c.codes, rune('0'+code)) {
			t.Errorf("%v: exit %d, want one of %s (%s)", c.args, code, c.codes, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: %q does not say %q", c.args, errs, w)
			}
		}
	}
	if code, _, errs := runCLI(t, append(base, "--device", "cpu", "--backend", "reference", "--json")...); code != 0 {
		t.Errorf("--device cpu: exit %d (%s)", code, errs)
	}
	if code, _, errs := runCLI(t, "bench", "train", "--data", dir, "--device", "tpu"); code != 2 || !strings.Contains(errs, `--device "tpu"`) {
		t.Errorf("bench train --device tpu: exit %d (%s)", code, errs)
	}
}
