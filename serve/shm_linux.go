package serve

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// shm is the server's shared-memory file, mapped read-write.
type shm struct {
	path     string
	mem      []byte
	unlinkMu sync.Once
}

// createShm creates, reserves and maps a new file of size bytes in dir.
// The space is allocated up front (fallocate) so that a full tmpfs is an
// error here rather than a SIGBUS on the first write.
func createShm(dir string, size int64) (*shm, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	path := filepath.Join(dir, fmt.Sprintf("%s%d-%s", shmPrefix, os.Getpid(), hex.EncodeToString(rnd[:])))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	fail := func(err error) (*shm, error) {
		os.Remove(path)
		return nil, fmt.Errorf("shared memory %s (%d bytes): %w", path, size, err)
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			return fail(err)
		}
		if err := f.Truncate(size); err != nil {
			return fail(err)
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(err)
	}
	return &shm{path: path, mem: mem}, nil
}

// unlink removes the file's name; the mappings stay valid. Idempotent.
func (s *shm) unlink() {
	s.unlinkMu.Do(func() { os.Remove(s.path) })
}

// close unlinks the file and unmaps it.
func (s *shm) close() error {
	s.unlink()
	if s.mem == nil {
		return nil
	}
	err := syscall.Munmap(s.mem)
	s.mem = nil
	return err
}
