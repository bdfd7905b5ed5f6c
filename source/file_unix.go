//go:build unix

package source

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

func openNonblock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// clearNonblock makes reads of f block again (they do for regular files
// anyway; this keeps the descriptor's flags plain).
func clearNonblock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}

func isLinkError(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}

// statStamp is the part of a FileStamp only Unix has: device, inode and
// status change time.
func statStamp(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d.%09d", st.Dev, st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
}
