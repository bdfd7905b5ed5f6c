// Package usage measures what a process or a piece of work costs: its
// CPU time (user + system, all threads), which holds on a shared machine
// where wall time does not, and the heap it allocates.
package usage

import (
	"runtime"
	"time"
)

// Measure runs f and returns the heap bytes it allocated
// (runtime.MemStats.TotalAlloc) and the process CPU time it took.
func Measure(f func()) (alloc uint64, cpu time.Duration) {
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	c0 := CPU()
	f()
	cpu = CPU() - c0
	runtime.ReadMemStats(&ms1)
	return ms1.TotalAlloc - ms0.TotalAlloc, cpu
}
