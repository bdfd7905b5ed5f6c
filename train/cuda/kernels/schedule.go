package kernels

import "fmt"

// Schedule is the order in which the CPU build runs a launch's blocks and
// their threads (prelude_cpu.h). Every schedule is one a GPU may follow, so
// a kernel's output must not depend on it: one that does has a race the
// GPU could show, which the tests find by running the CPU build in each.
type Schedule int

const (
	// Forward runs the blocks, and each phase's threads, in index order.
	Forward Schedule = iota
	// Reverse runs them in reverse order: a thread reading in a phase what
	// another writes in it reads another value.
	Reverse
	// Interleaved runs the even indices, then the odd ones.
	Interleaved
	// Ahead runs, at each stretch of a block's code between SYNCs, one
	// thread by itself before the others: a missing SYNC shows.
	Ahead
	// Behind runs that thread after the others, and the blocks and the
	// others in reverse order.
	Behind
)

// Schedules lists every schedule, Forward first.
var Schedules = []Schedule{Forward, Reverse, Interleaved, Ahead, Behind}

var scheduleNames = [...]string{"forward", "reverse", "interleaved", "ahead", "behind"}

func (s Schedule) String() string {
	if s >= 0 && int(s) < len(scheduleNames) {
		return scheduleNames[s]
	}
	return fmt.Sprintf("Schedule(%d)", int(s))
}

// ParseSchedule returns the schedule named name (Schedule.String).
func ParseSchedule(name string) (Schedule, error) {
	for i, n := range scheduleNames {
		if n == name {
			return Schedule(i), nil
		}
	}
	return 0, fmt.Errorf("kernels: no schedule %q (want one of %v)", name, scheduleNames)
}
