package kernels

import "fmt"

// Facts are the device limits a launch is planned from (read with
// cuDeviceGetAttribute).
type Facts struct {
	SMs                int // multiprocessors
	MaxThreadsPerBlock int
	MaxThreadsPerSM    int
}

// H200 are the H200's facts (GPU.md): 132 SMs, 1024 threads a block, 2048
// an SM.
var H200 = Facts{SMs: 132, MaxThreadsPerBlock: 1024, MaxThreadsPerSM: 2048}

// Validate reports facts no device has.
func (f Facts) Validate() error {
	if f.SMs < 1 || f.MaxThreadsPerBlock < 32 || f.MaxThreadsPerSM < f.MaxThreadsPerBlock {
		return fmt.Errorf("kernels: device facts %+v: want SMs ≥ 1, threads a block ≥ 32, threads an SM ≥ threads a block", f)
	}
	return nil
}

// Launch is a kernel's grid and block (one-dimensional).
type Launch struct {
	Grid, Block int
}

// elementBlock is the block of element-wise kernels.
const elementBlock = 256

// pow2Block returns the power of two ≥ n, within [32, min(MaxBlock,
// MaxThreadsPerBlock)].
func (f Facts) pow2Block(n int64) int {
	hi := MaxBlock
	for hi > f.MaxThreadsPerBlock {
		hi /= 2
	}
	b := 32
	for int64(b) < n && b < hi {
		b *= 2
	}
	return min(b, hi)
}

// Plan returns the launch of a kernel of shape s over items of work:
// elements (Elementwise), rows of size each (PerRow), channels of size
// elements each (PerChannel), or size values (Single; items is ignored).
// The grid of a striding kernel is capped at what the device holds
// resident, so a large n loops rather than queueing blocks.
func (f Facts) Plan(s Shape, items, size int64) (Launch, error) {
	if err := f.Validate(); err != nil {
		return Launch{}, err
	}
	if items < 0 || size < 0 {
		return Launch{}, fmt.Errorf("kernels: plan of %d items of %d", items, size)
	}
	switch s {
	case Elementwise:
		b := min(elementBlock, f.pow2Block(elementBlock))
		resident := int64(f.SMs) * int64(f.MaxThreadsPerSM/b)
		return Launch{Grid: int(max(1, min((items+int64(b)-1)/int64(b), resident))), Block: b}, nil
	case PerRow, PerChannel:
		b := f.pow2Block(size)
		resident := int64(f.SMs) * int64(f.MaxThreadsPerSM/b)
		return Launch{Grid: int(max(1, min(items, resident))), Block: b}, nil
	case Single:
		return Launch{Grid: 1, Block: f.pow2Block(size)}, nil
	}
	return Launch{}, fmt.Errorf("kernels: unknown shape %d", s)
}
