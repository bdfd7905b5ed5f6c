//go:build !linux

package loader

import "time"

var clockStart = time.Now()

// threadClock is wall time where the thread's CPU clock is not read: a
// loaded machine inflates the phases.
func threadClock() int64 { return int64(time.Since(clockStart)) }

func lockThread()   {}
func unlockThread() {}

const profileClock = "wall time"
