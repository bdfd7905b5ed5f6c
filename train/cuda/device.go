package cuda

import (
	"math"
	"sync"
	"unsafe"

	"github.com/faster-training/faster/train/cuda/kernels"
)

// Device is one GPU with its primary context. Its methods may be called
// from any goroutine; each makes the context current on its thread.
type Device struct {
	Facts
	ordinal int32
	ctx     unsafe.Pointer
	cache   *Cache
	mu      sync.Mutex
	closed  bool
	modules []unsafe.Pointer
}

// Buffer is device memory.
type Buffer struct {
	ptr  uint64
	size int
}

// Size is the buffer's length in bytes.
func (b Buffer) Size() int { return b.size }

// Module is compiled source loaded on the device.
type Module struct {
	d       *Device
	m       unsafe.Pointer
	Outcome Outcome // how the cache found it (zero without a cache)
	// aligns are its kernels' parameters' alignments, from the source
	// (kernels.AlignsOf): a launch checks its pointers against them.
	aligns map[string][]int
}

// Function is one kernel of a module.
type Function struct {
	d     *Device
	f     unsafe.Pointer
	Name  string
	align []int // each parameter's alignment (kernels.AlignsOf)
}

// Arg is one kernel argument: a device pointer, an int32, an int64 or a
// float32 (Ptr, I32, I64, F32).
type Arg struct{ v uint64 }

func Ptr(b Buffer) Arg  { return Arg{b.ptr} }
func I32(v int32) Arg   { return Arg{uint64(uint32(v))} }
func I64(v int64) Arg   { return Arg{uint64(v)} }
func F32(v float32) Arg { return Arg{uint64(math.Float32bits(v))} }

// Kernels compiles kernels.cu (kernels.GPUSource).
func (d *Device) Kernels() (*Module, error) { return d.Compile(kernels.GPUSource()) }
