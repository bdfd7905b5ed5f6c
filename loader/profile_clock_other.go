//go:build !linux

package loader

import "time"

var clockStart = time.Now()

// threadClock is wall time where the thread's CPU clock is not read: a
// loaded machine inflates the phases.
func threadClock() int64 { return int64(time.Since(clockStart)) }

// threadCPU is false: threadClock is wall time here, and the read stages
// report no CPU time to the verdict.
const threadCPU = false

func lockThread()   {}
func unlockThread() {}

const profileClock = "wall time"
