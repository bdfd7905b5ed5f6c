package cuda

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
)

// Where a step's device time goes (issue 37 §2: "measure where its time
// and ours goes"). Between StartProfile and StopProfile the backend's
// machine is a profiler: every kernel, convolution, product, memset and
// copy it queues is bracketed by two timed events on the stream, and the
// events are read when the machine next waits (a read back, a sync). A
// call's time is the device's between its two events; the gap before it
// is the device's idle time since the previous call's end — what launch
// latency and host work cost, where the host does not keep ahead. Steps
// run eagerly while profiling (RunStep does not capture), so the profile
// is the eager step's; the events' own cost (a few µs of host time a
// call) is in the wall time, not in the device's.

var _ train.StepProfiler = (*Backend)(nil)

// eventTimer is implemented by machines with timed events: the GPU's
// (cuEventRecord, cuEventElapsedTime) and the twin's (the host's clock,
// its calls running as they are queued).
type eventTimer interface {
	newTimedEvent() (unsafe.Pointer, error)
	recordTimed(ev unsafe.Pointer) error
	// elapsed is the milliseconds from start to end, both recorded and
	// passed.
	elapsed(start, end unsafe.Pointer) (float64, error)
	freeEvent(ev unsafe.Pointer)
}

// profiler is a machine that times every call of the one it wraps. The
// backend's machine may be called from two goroutines (a Tensor.Write or
// a ByteInputOp's copy from the trainer's feeder beside a step's work):
// mu keeps each call with its two events, and the bookkeeping, one at a
// time.
type profiler struct {
	machine
	t       eventTimer
	mu      sync.Mutex
	pending []profCall
	spare   []unsafe.Pointer // events read, to record again
	rows    map[string]*train.ProfileRow
	prevEnd unsafe.Pointer // the last call read's end (nil before the first)
	busy    float64
	gap     float64
	calls   int
}

type profCall struct {
	op, kind   string
	start, end unsafe.Pointer
}

// StartProfile times every call the backend queues from now on, until
// StopProfile. It fails on a machine without timed events and while a
// profile or a captured step runs.
func (b *Backend) StartProfile() error {
	switch m := b.m.(type) {
	case *profiler:
		return errors.New("cuda: a profile is already running")
	case *recorder:
		return errors.New("cuda: StartProfile inside a step")
	case eventTimer:
		b.ReleaseStep() // a record's steps would replay unprofiled
		b.m = &profiler{machine: b.m, t: m, rows: map[string]*train.ProfileRow{}}
		return nil
	}
	return fmt.Errorf("cuda: %s has no timed events to profile with", b.m.device())
}

// StopProfile waits for the queued work, reads the last events and
// returns the profile; the backend's machine is its own again.
func (b *Backend) StopProfile() (train.DeviceProfile, error) {
	p, ok := b.m.(*profiler)
	if !ok {
		return train.DeviceProfile{}, errors.New("cuda: no profile is running")
	}
	err := p.sync() // reads every pending event
	b.m = p.machine
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range p.spare {
		p.t.freeEvent(ev)
	}
	out := train.DeviceProfile{Calls: p.calls, BusyMs: p.busy, GapMs: p.gap}
	for _, r := range p.rows {
		out.Rows = append(out.Rows, *r)
	}
	slices.SortFunc(out.Rows, func(a, b train.ProfileRow) int {
		return cmp.Or(cmp.Compare(b.Ms, a.Ms), cmp.Compare(a.Op, b.Op))
	})
	return out, err
}

// profiling reports whether a profile runs (RunStep then runs steps
// eagerly).
func (b *Backend) profiling() bool {
	_, ok := b.m.(*profiler)
	return ok
}

// timed queues f between two timed events.
func (p *profiler) timed(op, kind string, f func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	start, err := p.event()
	if err != nil {
		return err
	}
	end, err := p.event()
	if err != nil {
		p.spare = append(p.spare, start)
		return err
	}
	if err := p.t.recordTimed(start); err != nil {
		p.spare = append(p.spare, start, end)
		return err
	}
	err = f()
	if rerr := p.t.recordTimed(end); rerr != nil {
		p.spare = append(p.spare, start, end)
		return errors.Join(err, rerr)
	}
	p.pending = append(p.pending, profCall{op: op, kind: kind, start: start, end: end})
	return err
}

func (p *profiler) event() (unsafe.Pointer, error) {
	if n := len(p.spare); n > 0 {
		ev := p.spare[n-1]
		p.spare = p.spare[:n-1]
		return ev, nil
	}
	return p.t.newTimedEvent()
}

// read adds the pending calls' times (their events have passed: the
// machine waited) and keeps their events for reuse.
func (p *profiler) read() error {
	var errs []error
	for _, c := range p.pending {
		ms, err := p.t.elapsed(c.start, c.end)
		if err != nil {
			errs = append(errs, fmt.Errorf("cuda: profile of %s: %w", c.op, err))
		} else {
			r := p.rows[c.op]
			if r == nil {
				r = &train.ProfileRow{Op: c.op, Kind: c.kind}
				p.rows[c.op] = r
			}
			r.Calls++
			r.Ms += ms
			p.busy += ms
			p.calls++
		}
		if p.prevEnd != nil {
			if g, err := p.t.elapsed(p.prevEnd, c.start); err == nil && g > 0 {
				p.gap += g
			}
			p.spare = append(p.spare, p.prevEnd)
		}
		p.prevEnd = c.end
		p.spare = append(p.spare, c.start)
	}
	p.pending = p.pending[:0]
	return errors.Join(errs...)
}

func (p *profiler) launch(name string, l kernels.Launch, args ...uint64) error {
	return p.timed("kernel "+name, "kernel", func() error { return p.machine.launch(name, l, args...) })
}

func (p *profiler) conv(c *convShape, dir convDir, a, b, out uint64) error {
	return p.timed(c.String()+" "+dir.String(), "conv", func() error { return p.machine.conv(c, dir, a, b, out) })
}

func (p *profiler) gemm(g gemmArgs) error {
	return p.timed(fmt.Sprintf("gemm %dx%dx%d", g.M, g.N, g.K), "gemm", func() error { return p.machine.gemm(g) })
}

func (p *profiler) zero(ptr uint64, bytes int) error {
	return p.timed("memset", "memset", func() error { return p.machine.zero(ptr, bytes) })
}

func (p *profiler) copyIn(dst uint64, src unsafe.Pointer, bytes int) error {
	return p.timed("copy in", "copy", func() error { return p.machine.copyIn(dst, src, bytes) })
}

func (p *profiler) copyDev(dst, src uint64, bytes int) error {
	return p.timed("copy on the device", "copy", func() error { return p.machine.copyDev(dst, src, bytes) })
}

// copyOut and sync wait for the queued work: the pending events have
// passed.
func (p *profiler) copyOut(dst unsafe.Pointer, src uint64, bytes int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.machine.copyOut(dst, src, bytes); err != nil {
		return err
	}
	return p.read()
}

func (p *profiler) sync() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.machine.sync(); err != nil {
		return err
	}
	return p.read()
}

// The capture is refused: profiled steps run eagerly (RunStep).
func (p *profiler) beginCapture() error {
	return errors.New("cuda: no capture while profiling")
}

// The machine's other faces, passed through: its staging (pinned memory,
// the copies' counts), cuDNN's workspace and handles.
func (p *profiler) hostCopies() train.HostCopies { return hostCopiesOf(p.machine) }

func (p *profiler) hostMemory(bytes int) (train.HostMemory, error) {
	return hostMemoryOf(p.machine, bytes)
}

func (p *profiler) workspaceAddr() uint64 {
	if w, ok := p.machine.(workspacer); ok {
		return w.workspaceAddr()
	}
	return 0
}
