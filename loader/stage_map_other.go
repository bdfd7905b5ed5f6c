//go:build !unix

package loader

import "errors"

type mappedBuffer struct{ b []byte }

func (m *mappedBuffer) Size() int      { return 0 }
func (m *mappedBuffer) Host() []byte   { return nil }
func (m *mappedBuffer) Device() string { return "" }
func (m *mappedBuffer) Ptr() uint64    { return 0 }
func (m *mappedBuffer) unmap() error   { return nil }

func mapBuffer(int, string) (*mappedBuffer, error) {
	return nil, errors.New("cpu batch decoder: Mapped needs a unix system (mmap)")
}
