//go:build !cgo

package cuda

import (
	"unsafe"

	"github.com/faster-training/faster/train/cuda/kernels"
)

// Without cgo there is no dlopen: Open fails with ErrNoCgo and Probe says
// so; the cache, the plans and the kernels' source work as with cgo.

// Probe says why this build has no CUDA.
func Probe() string { return "no (built without cgo)" }

// DriverVersion is 0: this build cannot load the driver.
func DriverVersion() int { return 0 }

// Open fails: this build cannot load the CUDA libraries.
func Open(o Options) (*Device, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return nil, ErrNoCgo
}

func (d *Device) Close() error                                            { return ErrNoCgo }
func (d *Device) Alloc(int) (Buffer, error)                               { return Buffer{}, ErrNoCgo }
func (d *Device) Free(Buffer) error                                       { return ErrNoCgo }
func (d *Device) Sync() error                                             { return ErrNoCgo }
func (d *Device) Compile(string) (*Module, error)                         { return nil, ErrNoCgo }
func (m *Module) Function(string) (*Function, error)                      { return nil, ErrNoCgo }
func (f *Function) Launch(kernels.Launch, ...Arg) error                   { return ErrNoCgo }
func (f *Function) LaunchOn(unsafe.Pointer, kernels.Launch, ...Arg) error { return ErrNoCgo }
func CopyIn[T any](*Device, Buffer, []T) error                            { return ErrNoCgo }
func CopyOut[T any](*Device, []T, Buffer) error                           { return ErrNoCgo }
func (d *Device) Exercise() []string                                      { return nil }
