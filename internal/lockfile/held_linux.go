package lockfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Held reports whether some process holds a lock (Lock's flock) on the
// file at path, without taking it: a reader that only looks at the
// destination must not make a writer starting at that moment fail. It
// reads /proc/locks, which names each lock's file by device and inode. A
// missing file is not held.
func Held(path string) (bool, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false, err
	}
	return heldIn(b, unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), uint64(st.Ino)), nil
}

// heldIn reports whether the /proc/locks text b lists a FLOCK on the
// file with that device and inode ("1: FLOCK  ADVISORY  WRITE 20174
// fe:00:10192023 0 EOF"; a waiter's line has "->" before FLOCK).
func heldIn(b []byte, major, minor uint32, ino uint64) bool {
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, ino)
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := bytes.Fields(line)
		for i, w := range f {
			if string(w) == "FLOCK" && i+4 < len(f) && string(f[i+4]) == want && (i == 0 || string(f[i-1]) != "->") {
				return true
			}
		}
	}
	return false
}
