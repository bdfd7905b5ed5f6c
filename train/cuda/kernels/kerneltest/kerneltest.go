// Package kerneltest runs a package's tests with the CPU build of the
// kernels in a chosen schedule (kernels.Schedule), so a kernel whose output
// depends on the order of its blocks and threads, a race a GPU could show,
// fails the tests that compare its bits.
package kerneltest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/faster-training/faster/train/cuda/kernels"
)

// Env names the schedule (kernels.Schedule's String) a test process runs
// the CPU build in: Main reads it, Rerun sets it for the runs it starts.
const Env = "FASTER_KERNEL_SCHEDULE"

// Main is a TestMain: it sets the schedule Env names, then runs m.
func Main(m *testing.M) {
	kernels.SetSchedule(FromEnv())
	os.Exit(m.Run())
}

// FromEnv is the schedule Env names, Forward when it is unset; a name no
// schedule has ends the process (a TestMain's, before any test runs).
func FromEnv() kernels.Schedule {
	name := os.Getenv(Env)
	if name == "" {
		return kernels.Forward
	}
	s, err := kernels.ParseSchedule(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return s
}

// Rerun runs the test binary's tests again, less the skip pattern (a
// -test.skip regexp naming at least the calling test), in each schedule,
// one process each, and fails t where a run fails. It skips within a run
// it started, under -short, under the race detector (make test's
// schedules step runs it without) and without the CPU build (no cgo).
func Rerun(t *testing.T, skip string, schedules ...kernels.Schedule) {
	t.Helper()
	if os.Getenv(Env) != "" {
		t.Skip("a schedule's own run")
	}
	if testing.Short() {
		t.Skip("-short: the package's tests once more in each schedule")
	}
	if raceEnabled {
		t.Skip("under -race the reruns take several times as long: make test's schedules step runs them without")
	}
	if !kernels.HasCPUBuild {
		t.Skip("no CPU build of the kernels without cgo")
	}
	for _, s := range schedules {
		t.Run(s.String(), func(t *testing.T) {
			start := time.Now()
			cmd := exec.Command(os.Args[0], "-test.count=1", "-test.timeout=15m", "-test.skip="+skip)
			cmd.Env = append(os.Environ(), Env+"="+s.String())
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "PASS") {
				t.Fatalf("the tests in schedule %v: %v\n%s", s, err, tail(string(out), 8000))
			}
			t.Logf("the tests pass in schedule %v (%.0f s)", s, time.Since(start).Seconds())
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
