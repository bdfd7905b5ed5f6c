package loader

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// threadClock reads the CPU time of the calling thread, so a profile
// counts the work of a phase, not the time other processes held the
// core (on a shared machine the two differ by a factor). Callers hold
// the goroutine on its thread (lockThread) between two readings.
func threadClock() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

func lockThread()   { runtime.LockOSThread() }
func unlockThread() { runtime.UnlockOSThread() }

// threadCPU says that threadClock is the thread's CPU time, so that the
// read stages can report their CPU work to the verdict.
const threadCPU = true

// profileClock names what the phases measure.
const profileClock = "thread CPU time"
