//go:build unix

package loader

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// mappedBuffer is CPUBatchDecoder's buffer under Mapped: anonymous
// memory outside Go's heap, so its address may be handed to C code that
// keeps it (a DeviceBatchBuffer of a stand-in device).
type mappedBuffer struct {
	b   []byte
	dev string
}

var _ DeviceBatchBuffer = (*mappedBuffer)(nil)

func mapBuffer(n int, dev string) (*mappedBuffer, error) {
	b, err := syscall.Mmap(-1, 0, max(n, 1), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("cpu batch decoder: mapping %d bytes: %w", n, err)
	}
	return &mappedBuffer{b: b[:n], dev: dev}, nil
}

func (m *mappedBuffer) Size() int      { return len(m.b) }
func (m *mappedBuffer) Host() []byte   { return nil } // "device" memory: read by address
func (m *mappedBuffer) Device() string { return m.dev }

func (m *mappedBuffer) Ptr() uint64 {
	if m.b == nil {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(m.b[:cap(m.b)]))))
}

func (m *mappedBuffer) unmap() error {
	if m.b == nil {
		return errors.New("free of a buffer twice")
	}
	err := syscall.Munmap(m.b[:cap(m.b)])
	m.b = nil
	return err
}
