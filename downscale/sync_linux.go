package downscale

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS flushes the file system holding dir to stable storage: one call
// at the end of a run instead of an fsync per output file.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
