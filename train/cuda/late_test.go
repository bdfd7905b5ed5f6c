//go:build cgo

package cuda

import (
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
	"github.com/faster-training/faster/train/traintest"
)

// lateTwin is the twin run the way a GPU runs: the work a call queues
// (kernels, convolutions, products, memsets, device copies, replays, and
// copies in from pinned memory) is carried out only when the host waits
// for it — a sync, a fence, a copy out, a free, a wait on an event — so
// the host runs as far ahead as its callers let it. Copies from host
// memory go through a staging ring over it (every size: min 1), or in
// place from the HostMemory it hands out; each such copy is checked when
// it lands against what its source held when it was queued: a source
// written in between (on a GPU, a silent corruption) is an error.
type lateTwin struct {
	*twinMachine
	ring *stagingRing

	// mu is shared by the machines of one test (replicas' streams wait
	// for each other's marks: landing one may land another's work).
	mu     *sync.Mutex
	group  *[]*lateTwin // the machines sharing mu, in the order made
	q      []func() error
	seq    int // work queued so far
	landed int // work carried out so far
	pinned map[unsafe.Pointer][]byte
	events map[unsafe.Pointer]*lateEvent
	errs   []error
	waits  int // streamWait calls: marks of other streams waited for
	// noPin makes every pinned allocation fail (a machine short of
	// page-locked memory).
	noPin bool
}

// lateEvent is a mark: a position in a machine's stream.
type lateEvent struct {
	m   *lateTwin
	seq int
}

func newLateTwin() *lateTwin { return newLateTwins(1)[0] }

// newLateTwins makes n machines on one device: one lock, each its stream.
func newLateTwins(n int) []*lateTwin {
	mu := new(sync.Mutex)
	ms := make([]*lateTwin, n)
	for i := range ms {
		m := &lateTwin{twinMachine: newTwin(), mu: mu, group: &ms, pinned: map[unsafe.Pointer][]byte{}, events: map[unsafe.Pointer]*lateEvent{}}
		m.ring = newStagingRing(latePinner{m})
		m.ring.min = 1
		ms[i] = m
	}
	return ms
}

func (m *lateTwin) newEvent() (unsafe.Pointer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := &lateEvent{m: m}
	m.events[unsafe.Pointer(e)] = e
	return unsafe.Pointer(e), nil
}

func (m *lateTwin) freeEvent(ev unsafe.Pointer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.events, ev)
}

// recordEvent marks the work queued on m so far.
func (m *lateTwin) recordEvent(ev unsafe.Pointer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := (*lateEvent)(ev)
	e.m, e.seq = m, m.seq
	return nil
}

// streamWait queues, on m, the landing of ev's machine up to its mark.
func (m *lateTwin) streamWait(ev unsafe.Pointer) error {
	m.mu.Lock()
	e := *(*lateEvent)(ev)
	m.waits++
	m.mu.Unlock()
	return m.queue(func() error { return e.m.landLocked(e.seq) })
}

// queue adds f to the stream, or runs it at once while the twin records a
// capture (its calls land in the record, not on the stream).
func (m *lateTwin) queue(f func() error) error {
	if m.twinMachine.capturing != nil {
		return f()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.q = append(m.q, f)
	m.seq++
	return nil
}

// land carries out the queued work up to seq (all: m.seq).
func (m *lateTwin) land(seq int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.landLocked(seq)
}

func (m *lateTwin) landLocked(seq int) error {
	for m.landed < seq {
		f := m.q[0]
		m.q = m.q[1:]
		m.landed++
		if err := f(); err != nil {
			m.errs = append(m.errs, err)
			return err
		}
	}
	return nil
}

// flush is a host wait: it lands everything queued on every stream of
// the device, the last-made stream first (a GPU runs streams at once: a
// replica's work runs as soon as nothing it waits for holds it back, and
// may well run before rank 0's) — only the marks streams wait for order
// one stream's work after another's.
func (m *lateTwin) flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := *m.group
	for i := len(ms) - 1; i >= 0; i-- {
		if err := ms[i].landLocked(ms[i].seq); err != nil {
			return err
		}
	}
	return nil
}

func (m *lateTwin) copyIn(dst uint64, src unsafe.Pointer, bytes int) error {
	if m.twinMachine.capturing != nil {
		return m.twinMachine.copyIn(dst, src, bytes)
	}
	return m.ring.copyIn(dst, src, bytes, func() error {
		// From pageable memory: the copy waits for the stream.
		if err := m.flush(); err != nil {
			return err
		}
		return m.twinMachine.copyIn(dst, src, bytes)
	})
}

func (m *lateTwin) launch(name string, l kernels.Launch, args ...uint64) error {
	args = slices.Clone(args)
	return m.queue(func() error { return m.twinMachine.launch(name, l, args...) })
}

func (m *lateTwin) conv(c *convShape, dir convDir, a, b, out uint64) error {
	return m.queue(func() error { return m.twinMachine.conv(c, dir, a, b, out) })
}

func (m *lateTwin) gemm(g gemmArgs) error {
	return m.queue(func() error { return m.twinMachine.gemm(g) })
}

func (m *lateTwin) zero(p uint64, bytes int) error {
	return m.queue(func() error { return m.twinMachine.zero(p, bytes) })
}

func (m *lateTwin) copyDev(dst, src uint64, bytes int) error {
	return m.queue(func() error { return m.twinMachine.copyDev(dst, src, bytes) })
}

func (m *lateTwin) replay(r record) error {
	return m.queue(func() error { return m.twinMachine.replay(r) })
}

func (m *lateTwin) copyOut(dst unsafe.Pointer, src uint64, bytes int) error {
	if err := m.flush(); err != nil {
		return err
	}
	return m.twinMachine.copyOut(dst, src, bytes)
}

func (m *lateTwin) sync() error {
	if err := m.flush(); err != nil {
		return err
	}
	return m.twinMachine.sync()
}

func (m *lateTwin) fence() error {
	if err := m.flush(); err != nil {
		return err
	}
	return m.twinMachine.fence()
}

func (m *lateTwin) free(p uint64) {
	m.flush()
	m.twinMachine.free(p)
}

func (m *lateTwin) beginCapture() error {
	if err := m.flush(); err != nil {
		return err
	}
	return m.twinMachine.beginCapture()
}

func (m *lateTwin) close() error {
	err := errors.Join(m.flush(), m.ring.close())
	return errors.Join(err, m.twinMachine.close())
}

func (m *lateTwin) hostMemory(bytes int) (train.HostMemory, error) { return m.ring.hostMemory(bytes) }
func (m *lateTwin) hostCopies() train.HostCopies {
	c, _ := m.ring.stats()
	return c
}

// check fails t with what went wrong on the stream.
func (m *lateTwin) check(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := errors.Join(m.errs...); err != nil {
		t.Fatal(err)
	}
}

// latePinner is the ring's pinner on a lateTwin: Go memory for pinned
// memory, events as stream positions, copies queued and checked.
type latePinner struct{ m *lateTwin }

func (p latePinner) hostAlloc(n int) (unsafe.Pointer, error) {
	if p.m.noPin {
		return nil, fmt.Errorf("no page-locked memory for %d bytes", n)
	}
	b := make([]byte, n)
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	p.m.pinned[unsafe.Pointer(&b[0])] = b
	return unsafe.Pointer(&b[0]), nil
}

func (p latePinner) hostFree(h unsafe.Pointer) {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	delete(p.m.pinned, h)
}

func (p latePinner) newEvent() (unsafe.Pointer, error) { return p.m.newEvent() }
func (p latePinner) freeEvent(ev unsafe.Pointer)       { p.m.freeEvent(ev) }

func (p latePinner) copyPinned(dst uint64, src unsafe.Pointer, n int, ev unsafe.Pointer) error {
	sum := crc32.ChecksumIEEE(unsafe.Slice((*byte)(src), n))
	m := p.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.q = append(m.q, func() error {
		if got := crc32.ChecksumIEEE(unsafe.Slice((*byte)(src), n)); got != sum {
			return fmt.Errorf("a copy of %d bytes from pinned memory: its source was written before the copy ran", n)
		}
		return m.twinMachine.copyIn(dst, src, n)
	})
	m.seq++
	e := (*lateEvent)(ev)
	e.m, e.seq = m, m.seq
	return nil
}

func (p latePinner) waitEvent(ev unsafe.Pointer) error {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	e := (*lateEvent)(ev)
	if e.m == nil {
		return nil
	}
	return e.m.landLocked(e.seq)
}

// A trainer on a GPU-like machine — work carried out only when the host
// waits, copies from host memory through the staging ring, a captured
// step's batches held in the backend's pinned memory and copied from it
// in place — trains to the twin's bits, float and byte batches, eager and
// captured steps, fp32 and fp16 with a GradScaler (kept on the device: no
// EMA, so nothing of it is read between the loss's reads); and no copy's source
// is written before the copy ran (the trainer hands a held batch back to
// its feeder only after the copies from it: without that wait this test
// fails).
func TestLateTwinTrainer(t *testing.T) {
	for _, p := range []train.Precision{train.Float32, train.Float16} {
		for _, bytes := range []bool{false, true} {
			for _, capture := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/bytes=%v/capture=%v", p, bytes, capture), func(t *testing.T) {
					setup := func(tr *train.Trainer) {
						tr.CaptureStep, tr.LossEvery = capture, 4
						if p == train.Float16 {
							tr.Scaler = train.NewGradScaler()
							tr.Scaler.Scale, tr.Scaler.GrowthInterval = 1e6, 3 // skips, then growth
							tr.EMA = nil
						}
					}
					// Images on this backend come as their bytes: a type
					// embedding them (floatsOnly) keeps the float batches.
					stream := func(tr *train.Trainer, d *train.Images) train.Stream { return tr.StreamOf(floatsOnly{d}) }
					if bytes {
						stream = func(tr *train.Trainer, d *train.Images) train.Stream {
							return &byteStream{tr: tr, d: d, nhwc: d.Pixels}
						}
					}
					o := train.BackendOptions{Precision: p}
					want := trainRunStream(t, twinWith(t, o), 2, "", "", setup, stream)
					lt := newLateTwin()
					b := newBackend(lt, o)
					got := trainRunStream(t, b, 2, "", "", setup, stream)
					st := b.HostCopies()
					if err := b.Close(); err != nil {
						t.Fatal(err)
					}
					lt.check(t)
					near(t, "weights", got.weights, want.weights, 0)
					near(t, "momentum", got.velocity, want.velocity, 0)
					nearLosses(t, got.losses, want.losses, 0)
					if got.skipped != want.skipped || p == train.Float16 && got.skipped == 0 {
						t.Fatalf("skipped %d steps, the twin %d (want the same, more than 0 in fp16)", got.skipped, want.skipped)
					}
					if st.Staged == 0 || capture && st.InPlace == 0 {
						t.Fatalf("staging %+v: want staged copies, and in-place ones from held batches when captured", st)
					}
					if len(lt.pinned) != 0 || len(lt.events) != 0 {
						t.Fatalf("closed with %d pinned memories and %d events left", len(lt.pinned), len(lt.events))
					}
					t.Logf("staging %+v", st)
				})
			}
		}
	}
}

// Data-parallel replicas on one device, two streams run as a GPU runs
// them, sum their gradients on the device (peerAllReduce: rank 0's
// stream waits for the replica's mark, adds, copies the sums back and
// marks; the replica's stream waits for that mark): the bits of the same
// replicas summing through host memory (the trainer's host fallback on
// plain twins), over two epochs, momentum and EMA included.
func TestLateTwinReplicas(t *testing.T) {
	run := func(bs [2]train.Backend) outcome {
		return trainRunWith(t, bs[0], 2, "", "", func(tr *train.Trainer) {
			net, err := train.NewThinNet(bs[1], traintest.SmallThinNet(), 5)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { net.Close() })
			if err := tr.AddReplica(bs[1], net); err != nil {
				t.Fatal(err)
			}
			tr.LossEvery = 4
		})
	}
	want := run([2]train.Backend{twinBackend(t), twinBackend(t)})
	ms := newLateTwins(2)
	var bs [2]train.Backend
	for i, m := range ms {
		b := newBackend(m, train.BackendOptions{})
		t.Cleanup(func() { b.Close() })
		bs[i] = &ncclBackend{b}
	}
	got := run(bs)
	for _, m := range ms {
		m.check(t)
	}
	near(t, "weights", got.weights, want.weights, 0)
	near(t, "momentum", got.velocity, want.velocity, 0)
	near(t, "EMA", got.ema, want.ema, 0)
	nearLosses(t, got.losses, want.losses, 0)
	if ms[1].waits == 0 || ms[0].waits == 0 {
		t.Fatalf("streams waited for %d and %d marks: the sums did not go through the device", ms[0].waits, ms[1].waits)
	}
}

// Without pinned memory (cuMemHostAlloc failing) the ring copies straight
// from the caller's memory and the trainer holds its batches in Go
// memory: the same bits, HostCopies saying why nothing was staged.
func TestLateTwinWithoutPinnedMemory(t *testing.T) {
	setup := func(tr *train.Trainer) { tr.CaptureStep, tr.LossEvery = true, 4 }
	want := trainRunStream(t, twinWith(t, train.BackendOptions{}), 2, "", "", setup, nil)
	lt := newLateTwin()
	lt.noPin = true
	b := newBackend(lt, train.BackendOptions{})
	got := trainRunStream(t, b, 2, "", "", setup, nil)
	st := b.HostCopies()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lt.check(t)
	near(t, "weights", got.weights, want.weights, 0)
	nearLosses(t, got.losses, want.losses, 0)
	if st.Staged != 0 || st.InPlace != 0 || st.Direct == 0 || !strings.Contains(st.Unpinned, "page-locked") {
		t.Fatalf("host copies %+v: want every copy direct, and why", st)
	}
}

// A resume on a GPU-like machine: two epochs with captured steps (batches
// held in pinned memory, copied in place) end where one epoch, a
// checkpoint, a fresh backend and trainer, and one more epoch end.
func TestLateTwinResume(t *testing.T) {
	setup := func(tr *train.Trainer) { tr.CaptureStep, tr.LossEvery = true, 4 }
	open := func() *Backend {
		b := newBackend(newLateTwin(), train.BackendOptions{})
		t.Cleanup(func() { b.Close() })
		return b
	}
	want := trainRunStream(t, open(), 2, "", "", setup, nil)
	ckpt := t.TempDir() + "/one.ckpt"
	trainRunStream(t, open(), 1, "", ckpt, setup, nil)
	b := open()
	got := trainRunStream(t, b, 1, ckpt, "", setup, nil)
	near(t, "weights", got.weights, want.weights, 0)
	near(t, "momentum", got.velocity, want.velocity, 0)
	if c := b.HostCopies(); c.InPlace == 0 {
		t.Fatalf("host copies %+v: the resumed epoch held no batch in pinned memory", c)
	}
}

// floatsOnly is Images fed as Fill's floats (the trainer gives *Images as
// bytes to a backend that normalises them).
type floatsOnly struct{ *train.Images }
