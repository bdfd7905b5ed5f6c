//go:build unix

package usage

import (
	"syscall"
	"time"
)

// CPU is the CPU time (user + system, all threads) this process has used
// so far, or 0 when it cannot be read.
func CPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
