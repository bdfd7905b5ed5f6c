//go:build unix

package storage

import (
	"os"
	"syscall"
)

// openNonblock opens path without blocking on a FIFO (its reads are made
// blocking again by openRegular once it is known to be a regular file).
func openNonblock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

func clearNonblock(f *os.File) error { return syscall.SetNonblock(int(f.Fd()), false) }
