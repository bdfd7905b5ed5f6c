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
	f        *os.File // kept open to reserve slots as they are first used
	lazy     bool     // the file system reserves space (fallocate works)
	unlinkMu sync.Once
}

// createShm creates and maps a new file of size bytes in dir, reserving
// (fallocate) its first header bytes now and the rest as reserve asks, so
// that a full tmpfs is an error rather than a SIGBUS on the first write,
// and the pages of slots the session never uses are never allocated or
// zeroed: a consumer that keeps up reuses the same few slots (the ring
// hands out the last freed first), and a fresh loader no longer pays for
// zeroing the whole ring before its first batch (270 MB, ~80 ms of kernel
// time for the default f32 ring at batch 64).
func createShm(dir string, size, header int64) (*shm, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	path := filepath.Join(dir, fmt.Sprintf("%s%d-%s", shmPrefix, os.Getpid(), hex.EncodeToString(rnd[:])))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*shm, error) {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("shared memory %s (%d bytes): %w", path, size, err)
	}
	if err := f.Truncate(size); err != nil {
		return fail(err)
	}
	lazy := true
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, header); err != nil {
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			return fail(err)
		}
		lazy = false // no reservation here: writes may fault when full
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(err)
	}
	return &shm{path: path, mem: mem, f: f, lazy: lazy}, nil
}

// reserve allocates the file's space for n bytes at off (a slot before its
// first use); an error says the file system is full.
func (s *shm) reserve(off, n int64) error {
	if !s.lazy || s.f == nil {
		return nil
	}
	if err := syscall.Fallocate(int(s.f.Fd()), 0, off, n); err != nil {
		return fmt.Errorf("shared memory %s: reserving %d bytes at offset %d: %w", s.path, n, off, err)
	}
	return nil
}

// unlink removes the file's name; the mappings stay valid. Idempotent.
func (s *shm) unlink() {
	s.unlinkMu.Do(func() { os.Remove(s.path) })
}

// close unlinks the file and unmaps it.
func (s *shm) close() error {
	s.unlink()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	if s.mem == nil {
		return nil
	}
	err := syscall.Munmap(s.mem)
	s.mem = nil
	return err
}
