package pipeline

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processCPU returns the process's CPU time (user + system) plus the time
// its threads waited on a run queue for a CPU (schedstat's run_delay), in
// nanoseconds: the CPU it used or wanted. On a machine shared with other
// processes, waiting for a core is CPU-bound as much as using it.
func processCPU() int64 {
	var ru syscall.Rusage
	var n int64
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		n = ru.Utime.Nano() + ru.Stime.Nano()
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return n
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) >= 2 {
			if d, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				n += d
			}
		}
	}
	return n
}
