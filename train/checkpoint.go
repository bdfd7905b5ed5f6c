package train

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"path/filepath"
	"unicode/utf8"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/internal/lockfile"
	"github.com/faster-training/faster/source"
)

// Checkpoint file layout (little-endian; must not change without a new
// magic):
//
//	"FSTRCKP1" | uint32 header length | header (JSON) | float32 data of
//	each tensor the header lists, in order | uint32 CRC-32C of all before
//
// The header names every tensor (parameters, buffers, momentum buffers)
// with its length, the trainer's position (epoch, step), the class count
// of the model's head, the data it trains on (DataID) and, in mixed precision with a GradScaler, the
// scaler's state (torch's GradScaler.state_dict: scale, growth tracker
// and factors), and with an EMA of the weights its update count and
// average ("ema:" tensors), so that a resumed run takes the same steps.
const checkpointMagic = "FSTRCKP1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCheckpoint marks a checkpoint that is corrupt or does not fit the
// model it is loaded into.
var ErrCheckpoint = errors.New("bad checkpoint")

// ErrData marks a checkpoint saved training on other data than the run
// that loads it (with ErrCheckpoint).
var ErrData = errors.New("trained on other data")

// DataID identifies what a run trains on, as its checkpoints record it: a
// checkpoint's position (epoch, step into it) only means something on the
// data it was saved on — resumed mid-epoch on a smaller dataset it would
// train nothing.
type DataID struct {
	// Name is the dataset: its absolute path (symlinks resolved) or URL.
	Name string `json:"name"`
	// Samples is the number of training samples an epoch covers (all
	// ranks together).
	Samples int `json:"samples"`
}

func (d DataID) String() string { return fmt.Sprintf("%s (%d samples)", d.Name, d.Samples) }

// DataError is a checkpoint saved training on other data than the run
// that loads it: Saved is what it records, Run what the run trains on.
// errors.Is(err, ErrData) and errors.Is(err, ErrCheckpoint) hold.
type DataError struct {
	Path       string
	Saved, Run DataID
}

func (e *DataError) Error() string {
	return fmt.Sprintf("%s: %v: %v: saved training on %v; this run trains on %v", e.Path, ErrCheckpoint, ErrData, e.Saved, e.Run)
}

// Is reports ErrData and ErrCheckpoint as matching.
func (e *DataError) Is(target error) bool { return target == ErrData || target == ErrCheckpoint }

// Moved reports whether the data differs by its name only (as many
// samples): the dataset may have moved (Trainer.DataMoved).
func (e *DataError) Moved() bool { return e.Saved.Samples == e.Run.Samples }

// ErrClasses marks a checkpoint saved by a model of another class count
// than the one it is loaded into (with ErrCheckpoint).
var ErrClasses = errors.New("class count differs")

type ckptHeader struct {
	Epoch   int          `json:"epoch"`
	Step    int          `json:"step"`
	Seed    uint64       `json:"seed"`
	Batch   int          `json:"batch"`
	Classes int          `json:"classes,omitempty"`
	Scaler  *ckptScaler  `json:"grad_scaler,omitempty"`
	EMA     int          `json:"ema_updates,omitempty"`
	Data    *DataID      `json:"data,omitempty"`
	Tensors []ckptTensor `json:"tensors"`
}

// maxCheckpointCount bounds a checkpoint's epoch, step and counts: no run
// writes more, and a forged one must not reach the schedule (an epoch of
// 2^62) or be negative (the rate at epoch -1).
const maxCheckpointCount = math.MaxInt32

// problem is what no run writes in h, naming the field ("" if none).
func (h *ckptHeader) problem() string {
	bad := func(v int) bool { return v < 0 || v > maxCheckpointCount }
	switch {
	case bad(h.Epoch):
		return fmt.Sprintf("epoch %d (want 0 to %d)", h.Epoch, maxCheckpointCount)
	case bad(h.Step):
		return fmt.Sprintf("step %d (want 0 to %d)", h.Step, maxCheckpointCount)
	case bad(h.Batch) || (h.Step > 0 && h.Batch == 0):
		return fmt.Sprintf("batch %d at step %d", h.Batch, h.Step)
	case bad(h.Classes):
		return fmt.Sprintf("classes %d", h.Classes)
	case bad(h.EMA):
		return fmt.Sprintf("EMA updates %d", h.EMA)
	case h.Data != nil && bad(h.Data.Samples):
		return fmt.Sprintf("data %v", *h.Data)
	}
	return ""
}

type ckptScaler struct {
	Scale          float64 `json:"scale"`
	GrowthFactor   float64 `json:"growth_factor"`
	BackoffFactor  float64 `json:"backoff_factor"`
	GrowthInterval int     `json:"growth_interval"`
	Growth         int     `json:"growth_tracker"`
	Skipped        int     `json:"skipped"`
}

type ckptTensor struct {
	Name string `json:"name"`
	Len  int    `json:"len"`
}

func (t *Trainer) stateTensors() (names []string, vals [][]float32) {
	for _, p := range t.Net.Params() {
		names, vals = append(names, p.Name), append(vals, p.Value)
	}
	for _, p := range t.Net.Buffers() {
		names, vals = append(names, p.Name), append(vals, p.Value)
	}
	for i, p := range t.Net.Params() {
		if t.Opt.Velocity != nil {
			names, vals = append(names, "momentum:"+p.Name), append(vals, t.Opt.Velocity[i])
		}
	}
	if t.EMA != nil && t.EMA.Values != nil {
		for i, p := range emaTensors(t.Net) {
			names, vals = append(names, "ema:"+p.Name), append(vals, t.EMA.Values[i])
		}
	}
	return names, vals
}

// LockCheckpoint takes the lock of the checkpoint at path, a hidden file
// beside it (".NAME.lock", see CheckpointLockName), held until unlock or
// the end of the process however it ends: a second run saving to the same
// path fails at once, where the two would overwrite each other's
// checkpoints. It also fails at once when path's folder is missing or not
// writable, before any training. Holding the lock, it removes the
// temporaries a killed save of path left (atomicfile.RemoveStale).
func LockCheckpoint(path string) (unlock func(), err error) {
	lock := CheckpointLockName(path)
	unlock, err = lockfile.Lock(lock)
	if errors.Is(err, lockfile.ErrLocked) {
		return nil, fmt.Errorf("%s: another run is saving to this checkpoint (%s is locked); wait for it to finish or save to another checkpoint", path, filepath.Base(lock))
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	// A run killed while it saved left its temporary: the lock's holder
	// is the only writer, so any there now is stale (a failure to remove
	// one is no reason to stop).
	atomicfile.RemoveStale(path)
	return unlock, nil
}

// CheckpointLockName is the lock file of the checkpoint at path: ".NAME.lock"
// in its folder, or for a name too long to take the affixes within NAME_MAX
// its first 64 bytes and a hash of the whole name.
func CheckpointLockName(path string) string {
	dir, base := filepath.Split(path)
	if len(base) > 240 {
		n := 64
		for n > 0 && !utf8.RuneStart(base[n]) {
			n--
		}
		base = fmt.Sprintf("%s-%08x", base[:n], crc32.Checksum([]byte(base), castagnoli))
	}
	return filepath.Join(dir, "."+base+".lock")
}

// SaveCheckpoint writes the trainer's model, optimiser state and position
// to path atomically (a crash leaves the previous file intact).
func (t *Trainer) SaveCheckpoint(path string) error {
	if err := t.pullState(); err != nil {
		return err
	}
	names, vals := t.stateTensors()
	h := ckptHeader{Epoch: t.Epoch, Step: t.Step, Seed: t.Seed, Batch: t.Batch, Classes: t.Classes}
	if t.EMA != nil {
		h.EMA = t.EMA.Updates
	}
	if t.Data != (DataID{}) {
		h.Data = &t.Data
	}
	if s := t.Scaler; s != nil {
		h.Scaler = &ckptScaler{Scale: s.Scale, GrowthFactor: s.GrowthFactor, BackoffFactor: s.BackoffFactor,
			GrowthInterval: s.GrowthInterval, Growth: s.Growth, Skipped: s.Skipped}
	}
	for i, n := range names {
		h.Tensors = append(h.Tensors, ckptTensor{Name: n, Len: len(vals[i])})
	}
	hj, err := json.Marshal(h)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString(checkpointMagic)
	binary.Write(&buf, binary.LittleEndian, uint32(len(hj)))
	buf.Write(hj)
	var b4 [4]byte
	for _, v := range vals {
		for _, f := range v {
			binary.LittleEndian.PutUint32(b4[:], math.Float32bits(f))
			buf.Write(b4[:])
		}
	}
	binary.Write(&buf, binary.LittleEndian, crc32.Checksum(buf.Bytes(), castagnoli))
	return atomicfile.WriteFile(path, buf.Bytes(), 0o644)
}

// maxCheckpointHeader bounds a checkpoint's JSON header (a few hundred
// tensors' names take kilobytes).
const maxCheckpointHeader = 16 << 20

// CheckpointPosition returns the epoch and step a checkpoint resumes at
// (epochs completed, steps into the next), after checking its CRC. It
// reads the file through a small buffer, whatever its size.
func CheckpointPosition(path string) (epoch, step int, err error) {
	f, size, err := source.OpenFile(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %w: %s", path, ErrCheckpoint, fmt.Sprintf(format, a...))
	}
	if size < int64(len(checkpointMagic)+8) {
		return 0, 0, bad("not a checkpoint")
	}
	crc := crc32.New(castagnoli)
	var head [len(checkpointMagic) + 4]byte
	if _, err := io.ReadFull(io.TeeReader(f, crc), head[:]); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	if string(head[:len(checkpointMagic)]) != checkpointMagic {
		return 0, 0, bad("not a checkpoint")
	}
	hl := int64(binary.LittleEndian.Uint32(head[len(checkpointMagic):]))
	if hl > min(size-int64(len(head))-4, maxCheckpointHeader) {
		return 0, 0, bad("header length %d", hl)
	}
	hj := make([]byte, hl)
	if _, err := io.ReadFull(io.TeeReader(f, crc), hj); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	rest := size - int64(len(head)) - hl - 4
	if n, err := io.CopyN(crc, f, rest); err != nil {
		return 0, 0, bad("truncated at byte %d", int64(len(head))+hl+n)
	}
	var sum [4]byte
	if _, err := io.ReadFull(f, sum[:]); err != nil {
		return 0, 0, bad("truncated")
	}
	if crc.Sum32() != binary.LittleEndian.Uint32(sum[:]) {
		return 0, 0, bad("checksum mismatch")
	}
	var h ckptHeader
	if err := json.Unmarshal(hj, &h); err != nil {
		return 0, 0, bad("header: %v", err)
	}
	if p := h.problem(); p != "" {
		return 0, 0, bad("header: %s", p)
	}
	return h.Epoch, h.Step, nil
}

// readCheckpoint reads and checks a checkpoint file of at most max bytes:
// its header, its body (without the trailing CRC) and the offset of the
// first tensor. Only a regular file is read (a FIFO or a device is refused
// without blocking: source.OpenFile), and its size is checked before
// anything is allocated.
func readCheckpoint(path string, max int64) (h ckptHeader, body []byte, off int, err error) {
	f, size, err := source.OpenFile(path)
	if err != nil {
		return h, nil, 0, err
	}
	defer f.Close()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %w: %s", path, ErrCheckpoint, fmt.Sprintf(format, a...))
	}
	if size > max {
		return h, nil, 0, bad("%d bytes, more than a checkpoint of this model holds (at most %d)", size, max)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return h, nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) < len(checkpointMagic)+8 || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return h, nil, 0, bad("not a checkpoint")
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return h, nil, 0, bad("checksum mismatch")
	}
	hl := int(binary.LittleEndian.Uint32(body[len(checkpointMagic):]))
	off = len(checkpointMagic) + 4
	if hl > len(body)-off {
		return h, nil, 0, bad("header length %d", hl)
	}
	if err := json.Unmarshal(body[off:off+hl], &h); err != nil {
		return h, nil, 0, bad("header: %v", err)
	}
	if p := h.problem(); p != "" {
		return h, nil, 0, bad("header: %s", p)
	}
	return h, body, off + hl, nil
}

// maxCheckpointSize is the largest checkpoint t's model can have written:
// its parameters and buffers, their momentum and EMA copies, and the
// header.
func (t *Trainer) maxCheckpointSize() int64 {
	var n int64
	for _, p := range t.Net.Params() {
		n += 3 * int64(len(p.Value)) // value, momentum, EMA
	}
	for _, p := range t.Net.Buffers() {
		n += 2 * int64(len(p.Value)) // value, EMA
	}
	return int64(len(checkpointMagic)) + 4 + maxCheckpointHeader + 4*n + 4
}

// LoadCheckpoint restores what SaveCheckpoint wrote into t, whose model
// must have the same tensors. Errors wrap ErrCheckpoint (or the I/O error).
func (t *Trainer) LoadCheckpoint(path string) error {
	// A device state is released: the next step binds it from the
	// loaded host values.
	if err := t.unbindState(); err != nil {
		return err
	}
	h, body, off, err := readCheckpoint(path, t.maxCheckpointSize())
	if err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %w: %s", path, ErrCheckpoint, fmt.Sprintf(format, a...))
	}
	if h.Classes != 0 && t.Classes != 0 && h.Classes != t.Classes {
		return fmt.Errorf("%s: %w: %w: saved by a model of %d classes, this one has %d", path, ErrCheckpoint, ErrClasses, h.Classes, t.Classes)
	}
	if h.Data != nil && t.Data != (DataID{}) && *h.Data != t.Data {
		if e := (&DataError{path, *h.Data, t.Data}); !(t.DataMoved && e.Moved()) {
			return e
		}
	}
	if h.Step > 0 && h.Batch != t.Batch {
		return bad("saved mid-epoch with batch %d; resume with the same batch (have %d)", h.Batch, t.Batch)
	}
	// Momentum buffers exist once the optimiser stepped.
	hasMomentum := false
	for _, ct := range h.Tensors {
		if len(ct.Name) > 9 && ct.Name[:9] == "momentum:" {
			hasMomentum = true
		}
	}
	if hasMomentum && t.Opt.Velocity == nil {
		t.Opt.Velocity = make([][]float32, len(t.Net.Params()))
		for i, p := range t.Net.Params() {
			t.Opt.Velocity[i] = make([]float32, len(p.Value))
		}
	}
	if !hasMomentum {
		t.Opt.Velocity = nil
	}
	// The EMA's average exists once it was updated.
	if h.EMA > 0 {
		if t.EMA == nil {
			return bad("saved with an EMA of the weights (%d updates); resume with the EMA", h.EMA)
		}
		t.EMA.Values = make([][]float32, len(emaTensors(t.Net)))
		for i, p := range emaTensors(t.Net) {
			t.EMA.Values[i] = make([]float32, len(p.Value))
		}
	} else if t.EMA != nil {
		t.EMA.Values = nil
	}
	names, vals := t.stateTensors()
	if len(names) != len(h.Tensors) {
		return bad("%d tensors, the model has %d", len(h.Tensors), len(names))
	}
	for i, ct := range h.Tensors {
		if ct.Name != names[i] || ct.Len != len(vals[i]) {
			return bad("tensor %d is %s[%d], the model has %s[%d]", i, ct.Name, ct.Len, names[i], len(vals[i]))
		}
		if off+4*ct.Len > len(body) {
			return bad("truncated")
		}
		for j := range vals[i] {
			vals[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(body[off+4*j:]))
		}
		off += 4 * ct.Len
	}
	if off != len(body) {
		return bad("%d trailing bytes", len(body)-off)
	}
	if sc := h.Scaler; sc != nil && t.Scaler != nil {
		if !(sc.Scale > 0) || math.IsInf(sc.Scale, 0) || sc.Growth < 0 || sc.GrowthInterval < 1 || sc.Skipped < 0 {
			return bad("grad scaler state %+v", *sc)
		}
		*t.Scaler = GradScaler{Scale: sc.Scale, GrowthFactor: sc.GrowthFactor, BackoffFactor: sc.BackoffFactor,
			GrowthInterval: sc.GrowthInterval, Skipped: sc.Skipped, Growth: sc.Growth}
	}
	if t.EMA != nil {
		t.EMA.Updates = h.EMA
	}
	t.Epoch, t.Step, t.Seed = h.Epoch, h.Step, h.Seed
	return nil
}
