package serve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Wire and file format constants. They must not change without a new
// Version: the Python client (python/faster/_protocol.py) repeats them.
const (
	Magic       = "FSTSERVE"
	Version     = 6        // 6: the device ring ('G', Hello.Device, Hello.Handles); 5: the consumer's seed ('S') and order ('O'); 4: a refused epoch request ('N'); 3: ready carries the consumed count, epoch a state, end the statistics
	HeaderBytes = 4096     // file header; slot 0 starts here
	SlotHeader  = 4096     // per-slot header; images start here
	MaxFrame    = 16 << 20 // largest frame accepted
	pageBytes   = 4096     // slot stride alignment
	labelAlign  = 64       // alignment of a slot's labels
	shmPrefix   = "faster-serve-"
	dtypeF32    = uint32(1)
	dtypeU8     = uint32(2)
	maxRowDims  = 4
	readyFixed  = 4 + 8 + 8 + 4 + 4 + 4 + 8
	endFixed    = 8 + 8 + 8 + 1
	labelBytes  = 8 // int64 per row
	// IPCHandleBytes is one slot's handle in the DEVICE frame:
	// sizeof(cudaIpcMemHandle_t), CUDA_IPC_HANDLE_SIZE (64) in CUDA's
	// driver_types.h.
	IPCHandleBytes = 64
	deviceFixed    = 4 + 4 + 8 // ordinal, slots, bytes per slot
	maxDeviceSlots = 1024
)

// Frame types.
const (
	FrameHello   byte = 'H'
	FrameReady   byte = 'R'
	FrameEnd     byte = 'D'
	FrameError   byte = 'X'
	FrameRefused byte = 'N' // the epoch request cannot run; the session goes on
	FrameAttach  byte = 'A'
	FrameEpoch   byte = 'E'
	FrameFree    byte = 'F'
	FrameCancel  byte = 'C'
	FrameSeed    byte = 'S' // the seed of the epochs to come
	FrameOrder   byte = 'O' // part of the next epoch's order (Hello.Sampler "indices")
	FrameDevice  byte = 'G' // after 'H' when Hello.Device is set: each slot's batch buffer as a handle
)

// ErrProtocol marks a malformed or unexpected frame.
var ErrProtocol = errors.New("serve: protocol error")

// Hello is the payload of the 'H' frame: everything the consumer needs to
// map the file and interpret its slots.
type Hello struct {
	Version      int    `json:"version"`
	Path         string `json:"path"`         // the shared-memory file
	Size         int64  `json:"size"`         // its size in bytes
	Slots        int    `json:"slots"`        // ring depth
	SlotBytes    int64  `json:"slot_bytes"`   // stride between slots
	HeaderBytes  int64  `json:"header_bytes"` // offset of slot 0
	ImagesOffset int64  `json:"images_offset"`
	LabelsOffset int64  `json:"labels_offset"`
	Batch        int    `json:"batch"`     // rows per slot
	DType        string `json:"dtype"`     // "float32" or "uint8"
	Shape        []int  `json:"shape"`     // of one row
	RowBytes     int    `json:"row_bytes"` // bytes of one row
	Len          int    `json:"len"`       // distinct samples this rank reads per epoch
	// Steps is the number of batches every rank's epoch has, the same on
	// all ranks (loader.Loader.StepsPerEpoch; -1 when unknown): the
	// client's len(). Samples is the rows each rank serves per epoch,
	// repeats included (-1 when unknown).
	Steps   int      `json:"steps"`
	Samples int      `json:"samples"`
	Classes []string `json:"classes,omitempty"`
	Rank    int      `json:"rank"`
	World   int      `json:"world"`
	PID     int      `json:"pid"` // the server's process id
	// Workers is the decode threads the session's loader was opened with,
	// after the server's cap (0: as many as the CPUs allow).
	Workers int `json:"workers"`
	// What a client needs to describe the epoch's order and to save a
	// position the loader can resume from (loader.State): the dataset's
	// size over all ranks, each rank's share of it, the order's seed and
	// shuffle, and the padding policy.
	DatasetLen   int    `json:"dataset_len"`
	PerRank      []int  `json:"per_rank,omitempty"` // samples each rank holds; absent when unknown
	Kind         string `json:"kind,omitempty"`     // imagefolder, shards, lmdb, wds
	Root         string `json:"root,omitempty"`     // imagefolder: the folder of class folders read
	Seed         uint64 `json:"seed"`
	Shuffle      bool   `json:"shuffle"`
	Stream       bool   `json:"stream"` // streamed: resumes only with the same ranks
	Drop         bool   `json:"drop"`
	Exact        bool   `json:"exact"`
	StateVersion int    `json:"state_version"`
	// Fingerprint names the data (loader.Loader.Fingerprint): a state
	// saved on it carries it, and one saved on other data is refused.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Sampler "indices": each epoch serves the order the consumer sends
	// before it ('O'), and Steps, Samples and Len are -1. Repeats is
	// RASampler's repetitions (loader.Options.Repeats; 0: none).
	Sampler string `json:"sampler,omitempty"`
	Repeats int    `json:"repeated_augmentation,omitempty"`
	// Device is set when the rows are not in the file but in the batch
	// buffers of the loader's batch-decode stage ("cuda:0"; "cpu" for the
	// host stand-in), each exported once in the DEVICE frame that follows
	// the hello, its kind Handles (HandleCUDA or HandleShm). A slot of
	// the file then holds its header and labels only (its images area is
	// empty), and slot i's rows are buffer i's, RowBytes each from its
	// start.
	Device  string `json:"device,omitempty"`
	Handles string `json:"handles,omitempty"`
}

// layout computes the slot geometry of o (already validated).
// With rowsElsewhere (a device ring) a slot's images area is empty.
func layout(o *Options, rowsElsewhere bool) (rowBytes int, labelsOff, slotBytes, size int64) {
	rowBytes = dtypeSize(o.DType)
	for _, d := range o.Shape {
		rowBytes *= d
	}
	images := int64(o.Batch) * int64(rowBytes)
	if rowsElsewhere {
		images = 0
	}
	labelsOff = alignUp(SlotHeader+images, labelAlign)
	slotBytes = alignUp(labelsOff+int64(o.Batch)*labelBytes, pageBytes)
	size = HeaderBytes + int64(o.Slots)*slotBytes
	return
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

func dtypeSize(d string) int {
	if d == "uint8" {
		return 1
	}
	return 4
}

// putHeader writes the file header of h into b.
func putHeader(b []byte, h *Hello) {
	le := binary.LittleEndian
	copy(b[0:8], Magic)
	le.PutUint32(b[8:], Version)
	le.PutUint32(b[12:], uint32(h.Slots))
	le.PutUint64(b[16:], uint64(h.SlotBytes))
	le.PutUint64(b[24:], uint64(h.HeaderBytes))
	le.PutUint32(b[32:], uint32(h.Batch))
	dt := dtypeF32
	if h.DType == "uint8" {
		dt = dtypeU8
	}
	le.PutUint32(b[36:], dt)
	le.PutUint32(b[40:], uint32(len(h.Shape)))
	for i, d := range h.Shape {
		le.PutUint32(b[44+4*i:], uint32(d))
	}
	le.PutUint32(b[60:], uint32(h.RowBytes))
	le.PutUint64(b[64:], uint64(h.ImagesOffset))
	le.PutUint64(b[72:], uint64(h.LabelsOffset))
}

// writeFrame writes one frame: length, type, payload.
func writeFrame(w io.Writer, typ byte, payload ...[]byte) error {
	n := 1
	for _, p := range payload {
		n += len(p)
	}
	var hdr [5]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(n))
	hdr[4] = typ
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for _, p := range payload {
		if len(p) == 0 {
			continue // a frame is complete after its bytes: no empty writes
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// readFrame reads one frame into buf (reused when large enough) and returns
// its type and payload.
func readFrame(r io.Reader, buf []byte) (typ byte, payload []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err // io.EOF when the peer closed between frames
	}
	n := binary.LittleEndian.Uint32(hdr[:4])
	if n < 1 || n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: frame length %d", ErrProtocol, n)
	}
	if cap(buf) < int(n-1) {
		buf = make([]byte, n-1)
	}
	buf = buf[:n-1]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, unexpected(err)
	}
	return hdr[4], buf, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
