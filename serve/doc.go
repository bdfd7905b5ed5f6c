// Package serve hands batches from a Go input pipeline to another process
// (a PyTorch training script, through the Python package in python/faster)
// without copies or pickling: the server writes each batch into a ring of
// fixed-size slots in one shared-memory file, and tells the consumer over a
// Unix socket which slot is ready; the consumer reads the slot in place
// (numpy and torch tensors viewing the mapping) and hands it back.
//
// # Shared memory
//
// One file under /dev/shm (Options.Dir), named faster-serve-<pid>-<random>,
// mapped by both sides. All integers are little-endian. The file has its
// full size from the start, but its space is reserved (fallocate) for the
// header at creation and for each slot the first time the ring hands it
// out: a full tmpfs is an error of that allocation, never a SIGBUS, and
// since the ring reuses the slot freed last, a consumer that keeps up
// touches two or three slots, not all of them (the default f32 ring at
// batch 64 is 270 MB, whose zeroing was ~80 ms of every loader's start).
//
//	offset 0               file header (HeaderBytes = 4096)
//	  0  [8]byte  magic "FSTSERVE"                    must not change
//	  8  uint32   version (Version)
//	 12  uint32   slots
//	 16  uint64   slot bytes (stride; a multiple of 4096)
//	 24  uint64   header bytes (offset of slot 0)
//	 32  uint32   batch (rows per slot)
//	 36  uint32   image dtype: 1 float32, 2 uint8
//	 40  uint32   ndim of one row (≤ 4)
//	 44  [4]uint32 row shape (C,H,W for f32-chw; H,W,C for u8-hwc)
//	 60  uint32   row bytes
//	 64  uint64   images offset within a slot (4096)
//	 72  uint64   labels offset within a slot
//	offset HeaderBytes + i*slot bytes: slot i
//	  0  int64    epoch       ┐ slot header, written before
//	  8  int64    batch index │ the slot is announced
//	 16  int64    valid rows  │
//	 24  int64    rows        │ (batch size, or fewer for a kept remainder)
//	 32  int64    repeats     ┘ (of the valid rows, the last ones)
//	 4096          images: valid rows of row bytes (page aligned)
//	 labels off    labels: valid int64s (64-byte aligned)
//
// Only the valid rows of a slot are written; the consumer must not read
// beyond them. Every rank's epoch has the same number of batches (Hello's
// steps) of the same sizes, none of zero rows: a rank with fewer samples
// than the largest fills its epoch by repeating its first samples, and
// repeats counts them in each batch: rows valid-repeats … valid-1 (see
// loader.Loader.StepsPerEpoch).
//
// The file is unlinked as soon as the consumer says it has mapped it
// (attach), and again, idempotently, on every way out of Serve, including
// cancellation by a signal; the consumer unlinks it too right after mapping
// it, so whichever side dies, nothing stays in /dev/shm once both sides
// mapped it.
//
// # Control channel
//
// A stream socket (Unix, or a socketpair inherited by a child process)
// carries frames:
//
//	uint32 length (of type + payload, ≤ MaxFrame) | uint8 type | payload
//
// Server to consumer:
//
//	'H' hello      JSON Hello: the layout above, the shm path, dataset facts
//	               (and the order's: seed, shuffle, sizes, for a state)
//	'R' ready      uint32 slot, int64 epoch, int64 index, uint32 valid,
//	               uint32 rows, uint32 repeats, int64 consumed (positions
//	               of this rank's epoch order served once this batch is:
//	               loader.Loader.Consumed), then the valid rows' keys
//	               joined by NUL
//	'D' end        int64 epoch, int64 batches, int64 images, uint8 cancelled,
//	               then, optionally, JSON EpochStats (the pipeline's
//	               statistics and the loader's ceiling)
//	'N' refused    UTF-8 message: the last 'E' cannot run (an epoch outside
//	               0 to loader.MaxEpoch, a state that is malformed, out of
//	               bounds, or of other data or another order); nothing ran,
//	               and the session goes on: a consumer's state never ends it
//	'G' device     after 'H', only when Hello.Device is set (a Source with a
//	               batch-decode stage: device.go): uint32 ordinal, uint32
//	               slots, uint64 bytes per slot, then per slot an
//	               IPCHandleBytes (64) handle of the stage's buffer of that
//	               index, of kind Hello.Handles: HandleCUDA, a
//	               cudaIpcMemHandle_t; HandleShm, a NUL-padded file name
//	               under /dev/shm (the host stand-in of the tests). Slot i's
//	               rows are buffer i's from its start; the file's slot i
//	               holds the header and labels only (no images area)
//	'X' error      UTF-8 message; the server then exits
//
// Consumer to server:
//
//	'A' attach     the shm file is mapped: the server unlinks it
//	'E' epoch      int64 epoch: run it (its batches arrive as 'R', then 'D');
//	               optionally followed by a JSON loader.State (or an array
//	               of every rank's) to continue the epoch from
//	'F' free       uint32 slot: hand a slot back
//	'C' cancel     stop the running epoch early (its 'D' still follows)
//	'S' seed       uint64: the seed of the epochs from the next 'E' on (the
//	               client's seed drawn from torch's generator); sent
//	               between epochs, applied with the next 'E'
//	'O' order      int64 dataset positions, appended to the next epoch's
//	               order (one frame or more, an empty one for an empty
//	               order), taken by the next 'E'; Hello's sampler
//	               "indices" serves exactly that order and refuses ('N')
//	               an 'E' without one, or with a position out of range
//
// A session: the server sends 'H'; the consumer maps the file and sends
// 'A'; then any number of times 'E' → 'R'… → 'D' (or 'E' → 'N'), with 'F' for each slot as
// the consumer is done with it. A slot the consumer holds (announced and not
// freed) is never written: the ring, Options.Slots deep, is the prefetch
// depth and the backpressure. When the consumer closes the socket (or dies)
// the server cancels its pipeline, unlinks the file and Serve returns nil.
// When the server dies, the consumer reads EOF.
//
// # No copy
//
// Serve passes the ring to the Source as a pipeline.Allocator, in the
// epoch's context (pipeline.WithAllocator): a loader's batch stage takes a
// free slot when a batch's first row is ready and its decode workers write
// the rows straight into the slot's images, which the server then
// announces as they are, writing only the slot header and labels beside
// them. The batch being filled and the loader's prefetch queue hold slots
// too, so a stage waiting for a slot while the consumer holds the others is
// the backpressure. 'F' and 'C' frames are applied as they arrive (not
// between batches), so a consumer that cancels while it holds every slot
// still gets its 'D'; slots a pipeline dropped unreleased (a prefetch queue
// cut short) come back when the epoch's iteration returns. A Source whose
// batches have memory of their own is copied into a free slot instead.
// Options.Counters counts both kinds.
//
// # Device ring
//
// A Source with a batch-decode stage (a *loader.Loader opened with Device
// "cuda", or a NewBatchDecoder) is served from the stage's own buffers:
// the ring has one slot per buffer (Options.Slots is ignored), each buffer
// exported once in 'G' (its ExportableBuffer.Export), and a batch is
// announced in the slot of the buffer it was decoded into. The rule is the
// host ring's: the buffer goes back to the stage only on the consumer's
// 'F' for its slot (or when the session ends), so the stage never decodes
// into rows the consumer may still read; the Python client sends 'F' once
// the work queued on its CUDA stream when it asked for the next batch has
// passed (an event per slot). Counters.Released counts the batches given
// back.
//
// Serve runs one session on one connection; it is not safe to call it twice
// on the same connection. Different sessions share nothing.
package serve
