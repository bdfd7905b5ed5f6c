//go:build !linux

package serve

import "errors"

type shm struct {
	path string
	mem  []byte
}

func createShm(dir string, size, header int64) (*shm, error) {
	return nil, errors.New("serve: shared memory is implemented on Linux only")
}

func (s *shm) unlink()                    {}
func (s *shm) close() error               { return nil }
func (s *shm) reserve(off, n int64) error { return nil }
