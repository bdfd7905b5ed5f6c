package train

import (
	"fmt"
	"unsafe"
)

// HostMemoryBackend is implemented by backends that copy into their
// device faster from host memory they allocate: CUDA's page-locked
// memory, from which a copy is a DMA queued without waiting (the study's
// pin_memory=True with non_blocking=True), where a copy from a Go slice
// is first moved through the driver's buffers. A trainer with
// CaptureStep holds its batches there (its feeder writes each batch once,
// and the step's copy reads it in place).
type HostMemoryBackend interface {
	// HostMemory returns bytes of the backend's host memory.
	HostMemory(bytes int) (HostMemory, error)
}

// HostMemory is host memory of a backend's. A copy from it into the
// device (Tensor.Write, a ByteInputOp) may still be reading it when the
// copy returns: the memory is written again only once Wait has returned.
type HostMemory interface {
	// Bytes is the memory (valid until Free, or the backend's Close).
	Bytes() []byte
	// Wait returns once every copy queued from the memory so far has
	// read it.
	Wait() error
	// Free waits as Wait does and releases the memory.
	Free() error
}

// HostCopyReporter is implemented by backends that count their copies
// from host memory (a GPU backend's pinned staging), so that a summary
// tells a figure measured with pinned copies from one without.
type HostCopyReporter interface {
	HostCopies() HostCopies
}

// HostCopies counts a backend's copies from host memory into its device.
type HostCopies struct {
	Staged  int64 `json:"staged"`   // moved into the backend's pinned buffers, then a DMA
	InPlace int64 `json:"in_place"` // a DMA from the pinned HostMemory it handed out
	Direct  int64 `json:"direct"`   // straight from pageable memory (small, huge, or Pageable)
	// Unpinned is why pinned memory could not be had ("": it could).
	Unpinned string `json:"unpinned,omitempty"`
}

// ensureHeld gives each held batch n bytes of the backend's host memory
// when it has some (HostMemoryBackend; where HostMemory fails, Go memory)
// and the steps are captured, then waits until no copy from a held batch
// is still reading it: called on the step's goroutine before the feeder
// starts writing them.
func (t *Trainer) ensureHeld(n int) error {
	if hb, ok := t.Backend.(HostMemoryBackend); ok && t.CaptureStep && len(t.devs) == 1 {
		for i := range t.held {
			h := &t.held[i]
			if h.mem != nil && len(h.mem.Bytes()) >= n {
				continue
			}
			if err := h.freeMem(); err != nil {
				return err
			}
			// It is there for speed: where it fails, the batch is held
			// in Go memory, as with a backend that has none.
			if m, err := hb.HostMemory(n); err == nil {
				h.mem = m
			}
		}
	}
	return t.waitHeld()
}

// waitHeld waits until no copy from a held batch's memory is reading it.
func (t *Trainer) waitHeld() error {
	for i := range t.held {
		if err := t.held[i].wait(); err != nil {
			return err
		}
	}
	return nil
}

// wait returns once the copies from h's memory have read it (at once in
// Go memory).
func (h *heldBatch) wait() error {
	if h.mem == nil {
		return nil
	}
	if err := h.mem.Wait(); err != nil {
		return fmt.Errorf("train: waiting for the copy of a held batch: %w", err)
	}
	return nil
}

// freeMem releases h's backend memory; h holds in Go memory after it.
func (h *heldBatch) freeMem() error {
	if h.mem == nil {
		return nil
	}
	err := h.mem.Free()
	h.mem, h.x, h.pix = nil, nil, nil
	return err
}

// floats and bytes are h's backend memory as n floats or n bytes, if it
// holds that many (nil otherwise: Go memory then).
func (h *heldBatch) floats(n int) []float32 {
	if h.mem == nil || n == 0 || 4*n > len(h.mem.Bytes()) {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&h.mem.Bytes()[0])), n)
}

func (h *heldBatch) bytes(n int) []byte {
	if h.mem == nil || n == 0 || n > len(h.mem.Bytes()) {
		return nil
	}
	return h.mem.Bytes()[:n]
}
