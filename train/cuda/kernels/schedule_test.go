package kernels_test

import (
	"math"
	"slices"
	"testing"

	. "github.com/faster-training/faster/train/cuda/kernels"
	"github.com/faster-training/faster/train/cuda/kernels/kerneltest"
)

func TestMain(m *testing.M) { kerneltest.Main(m) }

// TestSchedulesFindRaces: each kind of race in races.c changes the CPU
// build's output in the schedules meant to show it, and its fixed form
// gives the same bits in every schedule; the check below (every test of
// the package in every schedule) could fail.
func TestSchedulesFindRaces(t *testing.T) {
	if !HasCPUBuild {
		t.Skip("no cgo: no CPU build of kernels.cu")
	}
	defer SetSchedule(SetSchedule(Forward))
	const block, grid, tiles = 64, 3, 4
	in := make([]float32, grid*block*tiles)
	for i := range in {
		in[i] = float32(i%251) + 0.5
	}
	kinds := []struct {
		name  string
		kind  int
		shows []Schedule // the schedules whose bits differ from Forward's
	}{
		{"a race within a phase", 0, []Schedule{Reverse, Interleaved, Ahead, Behind}},
		{"no SYNC between phases", 1, []Schedule{Ahead, Behind}},
		{"no SYNC at a loop's end", 2, []Schedule{Ahead, Behind}},
		{"blocks depending on each other", 3, []Schedule{Reverse, Interleaved, Behind}},
	}
	for _, k := range kinds {
		for _, fixed := range []bool{false, true} {
			var want []float32
			for _, s := range Schedules {
				SetSchedule(s)
				out := make([]float32, len(in))
				if err := RaceKernel(k.kind, Launch{Grid: grid, Block: block}, in, out, tiles, fixed); err != nil {
					t.Fatal(err)
				}
				if s == Forward {
					want = out
					continue
				}
				differs := !slices.EqualFunc(out, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) })
				if shows := !fixed && slices.Contains(k.shows, s); differs != shows {
					t.Errorf("%s (fixed %v), schedule %v: output differs from forward's: %v, want %v", k.name, fixed, s, differs, shows)
				}
			}
		}
	}
}

// TestEverySchedule runs the package's other tests again in the schedules
// that find every kind of race races.c shows (Reverse: within a phase and
// between blocks; Behind: those and a missing SYNC). Every test compares the
// CPU build's bits with a twin, the reference backend or torch, so a kernel
// whose output changes with the schedule fails there. Interleaved and Ahead
// run the same way by hand: FASTER_KERNEL_SCHEDULE=ahead go test .
func TestEverySchedule(t *testing.T) {
	kerneltest.Rerun(t, "^(TestEverySchedule|TestSchedulesFindRaces)$", Reverse, Behind)
}
