package bench

import "syscall"

// syncFS writes dirty pages out before the page cache is dropped.
func syncFS() { syscall.Sync() }
