//go:build !unix

package usage

import "time"

// CPU is 0 where the process's CPU time is not read.
func CPU() time.Duration { return 0 }
