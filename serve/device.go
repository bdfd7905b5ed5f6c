package serve

import (
	"context"
	"encoding/binary"
	"fmt"
	"iter"
	"sync"

	"github.com/faster-training/faster/loader"
)

// The device ring (issue 38 §2, docs/serve.md "GPU batches"): a Source
// whose batches come from the loader's batch-decode stage (a loader opened
// with Device "cuda", or with a NewBatchDecoder) has its rows in the
// stage's own buffers, device memory on a GPU. Serve exports each buffer
// once, in the DEVICE frame after HELLO, and then announces a batch by the
// index of its buffer: the slot of the same index in the shared-memory
// file holds only the slot header and the labels. A buffer goes back to
// the stage only when the consumer frees its slot ('F'), so the stage
// never decodes into rows a consumer's kernel may still read.

// stager is a Source whose batches come from a batch-decode stage; a
// *loader.Loader is one (its BatchDecoder is nil on the CPU path).
type stager interface {
	BatchDecoder() loader.BatchDecoder
	StageBuffers() ([]loader.BatchBuffer, error)
	IterStaged(ctx context.Context, e int) iter.Seq2[*loader.StagedBatch, error]
}

var _ stager = (*loader.Loader)(nil)

// ExportableBuffer is a stage's batch buffer another process can open:
// package gpudecode's device buffers (a cudaIpcMemHandle_t) and, in tests,
// host buffers in shared-memory files. Export returns the handle's kind
// and its bytes, at most IPCHandleBytes of them (padded with zeros in the
// DEVICE frame).
type ExportableBuffer interface {
	loader.BatchBuffer
	// Export returns kind HandleCUDA with the buffer's cudaIpcMemHandle_t,
	// or HandleShm with the name of a file under /dev/shm holding it.
	Export() (kind string, handle []byte, err error)
}

// Handle kinds (Hello.Handles). They must not change: the client repeats
// them.
const (
	HandleCUDA = "cuda-ipc" // cudaIpcMemHandle_t, opened with cudaIpcOpenMemHandle
	HandleShm  = "shm"      // a file name under /dev/shm, NUL-padded (the host stand-in)
)

// staged returns src as a stager when its batches come from a stage.
func staged(src Source) (stager, bool) {
	st, ok := src.(stager)
	if !ok || st.BatchDecoder() == nil {
		return nil, false
	}
	return st, true
}

// devRing is the session's view of the stage's buffers: which index each
// has, and the batch of each slot the consumer holds (released to the
// stage when the consumer frees it). Safe for concurrent use: the session
// announces, the reader frees.
type devRing struct {
	counters *Counters // Released, if set
	index    map[loader.BatchBuffer]int
	bytes    int    // bytes per buffer
	kind     string // HandleCUDA or HandleShm
	ordinal  int
	device   string
	handles  [][]byte // IPCHandleBytes each

	mu   sync.Mutex
	held []*loader.StagedBatch // by slot: announced, not yet freed
}

// openDevRing exports the stage's buffers.
func openDevRing(st stager) (*devRing, error) {
	bufs, err := st.StageBuffers()
	if err != nil {
		return nil, err
	}
	dev := st.BatchDecoder().Device()
	if len(bufs) < 1 || len(bufs) > maxDeviceSlots {
		return nil, fmt.Errorf("serve: %s: %d batch buffers: want 1 to %d", dev, len(bufs), maxDeviceSlots)
	}
	_, ord, err := loader.ParseDevice(dev)
	if err != nil {
		ord = 0
	}
	d := &devRing{index: map[loader.BatchBuffer]int{}, bytes: bufs[0].Size(), ordinal: ord, device: dev,
		held: make([]*loader.StagedBatch, len(bufs))}
	for i, b := range bufs {
		eb, ok := b.(ExportableBuffer)
		if !ok {
			return nil, fmt.Errorf("serve: %s: its batch buffers (%T) cannot be shared with another process", dev, b)
		}
		kind, h, err := eb.Export()
		if err != nil {
			return nil, fmt.Errorf("serve: %s: exporting batch buffer %d: %w", dev, i, err)
		}
		if kind != HandleCUDA && kind != HandleShm {
			return nil, fmt.Errorf("serve: %s: batch buffer %d: handle kind %q (want %s or %s)", dev, i, kind, HandleCUDA, HandleShm)
		}
		if d.kind != "" && kind != d.kind {
			return nil, fmt.Errorf("serve: %s: batch buffer %d: handle kind %q after %q", dev, i, kind, d.kind)
		}
		if len(h) == 0 || len(h) > IPCHandleBytes {
			return nil, fmt.Errorf("serve: %s: batch buffer %d: a handle of %d bytes (1 to %d)", dev, i, len(h), IPCHandleBytes)
		}
		if b.Size() != d.bytes {
			return nil, fmt.Errorf("serve: %s: batch buffer %d of %d bytes, buffer 0 of %d", dev, i, b.Size(), d.bytes)
		}
		if _, dup := d.index[b]; dup {
			return nil, fmt.Errorf("serve: %s: batch buffer %d listed twice", dev, i)
		}
		d.kind = kind
		d.index[b] = i
		d.handles = append(d.handles, append(h[:len(h):len(h)], make([]byte, IPCHandleBytes-len(h))...))
	}
	return d, nil
}

// frame is the DEVICE frame's payload: ordinal, slots, bytes per slot,
// then each slot's handle.
func (d *devRing) frame() []byte {
	p := make([]byte, deviceFixed, deviceFixed+len(d.handles)*IPCHandleBytes)
	le := binary.LittleEndian
	le.PutUint32(p[0:], uint32(d.ordinal))
	le.PutUint32(p[4:], uint32(len(d.handles)))
	le.PutUint64(p[8:], uint64(d.bytes))
	for _, h := range d.handles {
		p = append(p, h...)
	}
	return p
}

// hold records that the consumer is about to be given sb, in slot i.
func (d *devRing) hold(sb *loader.StagedBatch) (int, error) {
	i, ok := d.index[sb.Buffer]
	if !ok {
		return 0, fmt.Errorf("serve: %s: batch %d in a buffer the device frame did not list", d.device, sb.Index)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held[i] != nil {
		return 0, fmt.Errorf("serve: %s: batch %d in buffer %d, which the consumer holds", d.device, sb.Index, i)
	}
	d.held[i] = sb
	return i, nil
}

// consumerFree applies the consumer's 'F' for slot i: its buffer goes back
// to the stage.
func (d *devRing) consumerFree(i int) error {
	d.mu.Lock()
	var sb *loader.StagedBatch
	if i >= 0 && i < len(d.held) {
		sb, d.held[i] = d.held[i], nil
	}
	d.mu.Unlock()
	if sb == nil {
		return fmt.Errorf("%w: free of device slot %d, which the consumer does not hold", ErrProtocol, i)
	}
	d.release(sb)
	return nil
}

func (d *devRing) release(sb *loader.StagedBatch) {
	sb.Release()
	if d.counters != nil {
		d.counters.Released.Add(1)
	}
}

// releaseAll gives every slot the consumer still holds back to the stage
// (the session ended).
func (d *devRing) releaseAll() {
	d.mu.Lock()
	var out []*loader.StagedBatch
	for i, sb := range d.held {
		if sb != nil {
			out = append(out, sb)
			d.held[i] = nil
		}
	}
	d.mu.Unlock()
	for _, sb := range out {
		d.release(sb)
	}
}

// heldCount is the slots the consumer holds.
func (d *devRing) heldCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, sb := range d.held {
		if sb != nil {
			n++
		}
	}
	return n
}

// iterStaged serves epoch e's batches from the stage (epoch's loop for a
// device ring): each announced in the slot of its buffer.
func (s *session) iterStaged(ectx context.Context, e int, isCancelled func() bool, batches, images *int64) error {
	for sb, err := range s.stage.IterStaged(ectx, e) {
		if err != nil {
			if ectx.Err() != nil && isCancelled() {
				return nil
			}
			return err
		}
		if isCancelled() {
			sb.Release()
			return nil
		}
		valid := sb.Valid
		if err := s.putStaged(e, sb); err != nil {
			if ectx.Err() != nil && isCancelled() {
				return nil
			}
			return err
		}
		*batches++
		*images += int64(valid)
	}
	return nil
}

// putStaged announces staged batch sb of epoch e in the slot of its
// buffer; the consumer's 'F' for that slot releases it.
func (s *session) putStaged(e int, sb *loader.StagedBatch) error {
	h := &s.hello
	if sb.Valid > h.Batch || len(sb.Items) > h.Batch || sb.Repeats < 0 || sb.Repeats > sb.Valid {
		sb.Release()
		return fmt.Errorf("batch %d has %d rows; slots hold %d", sb.Index, len(sb.Items), h.Batch)
	}
	if sb.RowBytes != h.RowBytes {
		sb.Release()
		return fmt.Errorf("batch %d: rows of %d bytes; the device slots were announced with rows of %d", sb.Index, sb.RowBytes, h.RowBytes)
	}
	i, err := s.dev.hold(sb)
	if err != nil {
		sb.Release()
		return err
	}
	if c := s.o.Counters; c != nil { // counted as held: Released counts it back
		c.Batches.Add(1)
		c.InPlace.Add(1)
	}
	b := &loader.Batch{Items: sb.Items, Valid: sb.Valid, Index: sb.Index, Repeats: sb.Repeats}
	// On an error the slot stays held: the session ends, and releaseAll
	// gives it back.
	return s.announce(i, e, b)
}
