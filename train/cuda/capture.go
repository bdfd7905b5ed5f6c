package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
)

// The training step as a CUDA graph (train.StepCapturer). The machine
// records the work queued between beginCapture and endCapture instead of
// running it (the GPU: stream capture on the backend's stream, then
// cuGraphInstantiateWithFlags; the twin: a list of its calls) and replays
// the record (cuGraphLaunch; the twin runs the list). Above it, a
// recorder stands in for the machine while a step runs under RunStep: it
// logs every call, stages copies in, refuses reads back to the host and
// allocations, and in replay mode checks each call against the captured
// log instead of queueing it.

//
// While RunStep runs, the backend's machine is the recorder: the backend
// must be used by the step's goroutine alone for that time. A ByteInputOp
// or an input tensor filled from another goroutine (the Trainer's feeder
// fills one slot while a step runs on the other) would race with the swap
// and land in the record; the trainer's wiring stages its slots outside
// RunStep or copies the slot into a fixed input inside the step.

var (
	_ train.StepCapturer    = (*Backend)(nil)
	_ train.CaptureReporter = (*Backend)(nil)
)

// errHostRead is the refusal of a read back to the host inside a captured
// or replayed step (the GPU refuses it too: a pageable copy out and a
// stream synchronisation cannot be captured).
var errHostRead = errors.New("cuda: a read back to host memory inside a captured step (read losses and flags outside the step, once per interval)")

// record is a machine's replayable record of a step (a CUDA graph on the
// GPU, a call list on the twin).
type record any

// callKind is what one logged machine call did.
type callKind int

const (
	callLaunch callKind = iota
	callConv
	callGemm
	callZero
	callCopyIn
)

// call is one machine call of a step, as logged and compared: a kernel
// with its launch and slots; a convolution with its op's shape and
// buffers; a product; a memset; a copy in (destination and size compared,
// the bytes staged).
type call struct {
	kind  callKind
	name  string
	l     kernels.Launch
	args  []uint64
	cs    *convShape
	shape convShape // *cs's sizes when logged
	dir   convDir
	a, b  uint64
	out   uint64
	g     gemmArgs
	n     int
	ws    uint64 // a convolution's workspace (workspacer), 0 where the machine has none
	data  []byte // capture: a copy in's bytes, staged until the capture ends
	// done: a copy in that replay mode queued at once (it lands before
	// the record's launch, and a diverging step does not run it again).
	done bool
}

func (c *call) same(o *call) bool {
	switch {
	case c.kind != o.kind:
		return false
	case c.kind == callLaunch:
		return c.name == o.name && c.l == o.l && slices.Equal(c.args, o.args)
	case c.kind == callConv:
		return c.cs == o.cs && sizes(&c.shape) == sizes(&o.shape) && c.dir == o.dir && c.a == o.a && c.b == o.b && c.out == o.out && c.ws == o.ws
	case c.kind == callGemm:
		return c.g == o.g
	}
	return c.out == o.out && c.n == o.n // zero, copy in
}

// sizes is a convolution's sizes, comparable.
func sizes(c *convShape) [12]int {
	nhwc := 0
	if c.NHWC {
		nhwc = 1
	}
	return [12]int{c.N, c.C, c.H, c.W, c.K, c.R, c.Pad, c.Stride, c.OH, c.OW, int(c.Dtype), nhwc}
}

func (c *call) String() string {
	switch c.kind {
	case callLaunch:
		return "kernel " + c.name
	case callConv:
		return c.shape.String() + " " + c.dir.String()
	case callGemm:
		return fmt.Sprintf("gemm %dx%dx%d", c.g.M, c.g.N, c.g.K)
	case callZero:
		return fmt.Sprintf("zero %d bytes", c.n)
	}
	return fmt.Sprintf("copy in of %d bytes", c.n)
}

// execCall runs c on m.
func execCall(m machine, c *call) error {
	switch c.kind {
	case callLaunch:
		return m.launch(c.name, c.l, c.args...)
	case callConv:
		return m.conv(c.cs, c.dir, c.a, c.b, c.out)
	case callGemm:
		return m.gemm(c.g)
	case callZero:
		return m.zero(c.out, c.n)
	}
	if c.n == 0 {
		return nil
	}
	return m.copyIn(c.out, unsafe.Pointer(&c.data[0]), c.n)
}

// recorder modes.
const (
	recCapture = iota // log (copies with their bytes); nothing queued
	recReplay         // log and compare with want; nothing queued
	recEager          // diverged from the record: forward everything
)

// recorder is the machine while a step runs under RunStep.
type recorder struct {
	machine // the real one
	mode    int
	log     []call // capture: the step's calls, copies in with their bytes
	want    []call // replay: the captured log
	pending []call // replay: the calls matched so far
	stale   string // replay: why the record no longer fits ("" while it does)
}

func (w *recorder) do(c call) error {
	switch w.mode {
	case recCapture:
		// Logged, nothing queued: Backend.capture captures the log once
		// the step's Go side is done, or runs it eagerly if the device
		// refuses the capture.
		w.log = append(w.log, c)
		return nil
	case recReplay:
		if i := len(w.pending); i < len(w.want) && w.want[i].same(&c) {
			w.pending = append(w.pending, c)
			return nil
		}
		why := fmt.Sprintf("call %d (%s) differs from the record's", len(w.pending), c.String())
		if err := w.diverge(why); err != nil {
			return err
		}
	}
	return execCall(w.machine, &c)
}

// diverge runs what replay mode held back, in order, and forwards
// everything after it: the step runs eagerly.
func (w *recorder) diverge(why string) error {
	if w.mode != recReplay {
		return nil
	}
	w.mode, w.stale = recEager, why
	for i := range w.pending {
		if c := &w.pending[i]; !c.done {
			if err := execCall(w.machine, c); err != nil {
				return err
			}
		}
	}
	w.pending = nil
	return nil
}

func (w *recorder) launch(name string, l kernels.Launch, args ...uint64) error {
	return w.do(call{kind: callLaunch, name: name, l: l, args: slices.Clone(args)})
}

func (w *recorder) conv(c *convShape, dir convDir, a, b, out uint64) error {
	s := *c
	s.state, s.releaseState = nil, nil
	var ws uint64
	if m, ok := w.machine.(workspacer); ok {
		ws = m.workspaceAddr()
	}
	return w.do(call{kind: callConv, cs: c, shape: s, dir: dir, a: a, b: b, out: out, ws: ws})
}

// workspacer is implemented by a machine whose convolutions run in a
// workspace of its own (cuDNN's, dnn's: grown when a convolution needs
// more, the old one freed). A recorded convolution names the workspace's
// address, since the record (a CUDA graph) holds it: a step after the
// workspace moved — grown between steps by a larger convolution, as an
// evaluation's batch may need — differs from the record and runs eagerly
// instead of replaying into freed memory.
type workspacer interface {
	workspaceAddr() uint64
}

func (w *recorder) gemm(g gemmArgs) error { return w.do(call{kind: callGemm, g: g}) }

func (w *recorder) zero(p uint64, bytes int) error {
	return w.do(call{kind: callZero, out: p, n: bytes})
}

// copyIn stages the bytes while capturing (not captured: a memcpy node
// would hold the host address, a ring slot or a held batch the feeder
// rewrites, and a copy from pageable memory cannot be captured at all; it
// is queued once the capture ends, before the record's first launch, or
// in its place if the log runs eagerly). In
// replay mode a copy that matches the record's is queued at once — before
// the record's launch, as the step's contract has it land, and without
// holding the caller's bytes (a batch's megabytes each step) — and one
// that does not runs after what diverge runs; eagerly it is queued.
func (w *recorder) copyIn(dst uint64, src unsafe.Pointer, bytes int) error {
	c := call{kind: callCopyIn, out: dst, n: bytes}
	switch w.mode {
	case recCapture:
		if bytes > 0 {
			c.data = slices.Clone(unsafe.Slice((*byte)(src), bytes))
		}
		return w.do(c)
	case recReplay:
		if i := len(w.pending); i < len(w.want) && w.want[i].same(&c) {
			// A step copies into a buffer before any of its work touches
			// it, so queuing the copy ahead of calls still held back
			// (run by diverge, if the step leaves the record) keeps the
			// step's meaning.
			c.done = true
			w.pending = append(w.pending, c)
			return w.machine.copyIn(dst, src, bytes)
		}
		if err := w.diverge(fmt.Sprintf("call %d (%s) differs from the record's", len(w.pending), c.String())); err != nil {
			return err
		}
	}
	return w.machine.copyIn(dst, src, bytes)
}

func (w *recorder) copyOut(dst unsafe.Pointer, src uint64, bytes int) error {
	if w.mode != recEager {
		return errHostRead
	}
	return w.machine.copyOut(dst, src, bytes)
}

// copyDev and fence are refused in a step: rows in another producer's
// memory are read before it (the trainer's capturedStep), since their
// address changes from batch to batch.
func (w *recorder) copyDev(dst, src uint64, bytes int) error {
	return errors.New("cuda: a copy of another producer's memory inside a captured step (read device rows before the step)")
}

func (w *recorder) fence() error { return errHostRead }

func (w *recorder) alloc(bytes int) (uint64, error) {
	if w.mode == recCapture {
		return 0, fmt.Errorf("cuda: an allocation of %d bytes inside a captured step (the warm-up step allocates)", bytes)
	}
	if err := w.diverge(fmt.Sprintf("an allocation of %d bytes", bytes)); err != nil {
		return 0, err
	}
	return w.machine.alloc(bytes)
}

func (w *recorder) free(p uint64) {
	if w.mode == recCapture {
		// Refused: the memory may be in the record. Freed with the machine.
		return
	}
	if w.diverge("a free") == nil {
		w.machine.free(p)
	}
}

func (w *recorder) sync() error {
	if w.mode == recCapture {
		return errHostRead
	}
	if err := w.diverge("a sync"); err != nil {
		return err
	}
	return w.machine.sync()
}

// errCapturedEvent refuses an event inside a captured step: a step runs
// on the backend's stream alone (replicas and Distribute are not
// captured), and on the GPU an event recorded into a capture is a node of
// the graph, not a mark another stream can wait for now.
var errCapturedEvent = errors.New("cuda: an event recorded or waited for inside a captured step (order other streams outside the step)")

// recordEvent and streamWait: refused while capturing; while replaying
// they leave the record as a sync does (a mark recorded at once, before
// the held-back work the record's launch would queue, would let another
// stream go on too early).
func (w *recorder) recordEvent(ev unsafe.Pointer) error {
	return w.event("an event record", func() error { return w.machine.recordEvent(ev) })
}

func (w *recorder) streamWait(ev unsafe.Pointer) error {
	return w.event("a wait for an event", func() error { return w.machine.streamWait(ev) })
}

func (w *recorder) event(what string, run func() error) error {
	if w.mode == recCapture {
		return errCapturedEvent
	}
	if err := w.diverge(what); err != nil {
		return err
	}
	return run()
}

// stepGraph is the Backend's captured step.
type stepGraph struct {
	key  string
	warm bool   // an eager step of key ran
	rec  record // nil until captured
	log  []call
	runs [3]int // steps run by StepRun: eager, captured, replayed
	// refusals counts the captures the device refused (a call it cannot
	// hold in a graph, a graph it cannot instantiate), lastRefusal says
	// why the last one was. The step whose capture is refused runs
	// eagerly, its key warms up again and the next step tries once more
	// (a cause that has passed: memory, a workspace the eager step grew);
	// after maxRefusals the backend captures no more (gaveUp). ReleaseStep
	// keeps them.
	refusals    int
	lastRefusal error
}

// gaveUp reports whether the backend stopped capturing steps.
func (g *stepGraph) gaveUp() bool { return g.refusals >= maxRefusals }

// maxRefusals is the refused captures after which a backend stops
// capturing: a second refusal of the same calls says the next would be
// refused too.
const maxRefusals = 2

// RunStep implements train.StepCapturer: the first step of a key eager,
// the second captured (then its record launched), later ones replayed
// when their calls match the record's, else eager (and the next one
// captured again). Once the device refuses a capture, steps run eagerly
// (CaptureStats says why).
func (b *Backend) RunStep(key string, step func() error) (train.StepRun, error) {
	if b.closed {
		return train.StepEager, errors.New("cuda: RunStep on a closed backend")
	}
	if _, nested := b.m.(*recorder); nested {
		return train.StepEager, errors.New("cuda: RunStep inside a step")
	}
	g := &b.graph
	if b.profiling() || g.gaveUp() { // a profile times the eager step's calls
		err := step()
		if err == nil {
			g.runs[train.StepEager]++
		}
		return train.StepEager, err
	}
	if g.key != key {
		b.ReleaseStep()
		g.key = key
	}
	run := train.StepEager
	var err error
	switch {
	case !g.warm:
		if err = step(); err == nil {
			g.warm = true
		}
	case g.rec == nil:
		run, err = b.capture(step)
	default:
		run, err = b.replay(step)
	}
	if err != nil {
		b.ReleaseStep()
		return run, err
	}
	g.runs[run]++
	return run, nil
}

// capture runs step's Go side once with the machine's calls logged, not
// queued, then captures the log's device work (captureLog) and launches
// the record after the copies in. When the device refuses the capture
// nothing of the step has run: the log runs eagerly instead, in order;
// the key warms up again, and after maxRefusals the backend captures no
// more steps (stepGraph.gaveUp). A refusal of the step's own (a read
// back, an allocation, an event inside it) is the step's error: nothing
// was queued.
func (b *Backend) capture(step func() error) (train.StepRun, error) {
	m := b.m
	w := &recorder{machine: m, mode: recCapture}
	b.m = w
	err := step()
	b.m = m
	if err != nil {
		return train.StepCaptured, fmt.Errorf("capturing the step: %w", err)
	}
	rec, err := captureLog(m, w.log)
	if err != nil {
		// The key warms up again before the next try; after the last,
		// nothing is kept for a record's addresses (Backend.spare).
		b.ReleaseStep()
		g := &b.graph
		g.refusals++
		g.lastRefusal = err
		for i := range w.log {
			if err := execCall(m, &w.log[i]); err != nil {
				return train.StepEager, fmt.Errorf("cuda: call %d (%s) of a step run eagerly after its capture was refused (%v): %w", i, w.log[i].String(), g.lastRefusal, err)
			}
		}
		return train.StepEager, nil
	}
	for i := range w.log {
		if c := &w.log[i]; c.kind == callCopyIn {
			if err := execCall(m, c); err != nil {
				m.dropRecord(rec)
				return train.StepCaptured, err
			}
		}
	}
	if err := m.replay(rec); err != nil {
		m.dropRecord(rec)
		return train.StepCaptured, err
	}
	// The staged bytes (a batch's megabytes) are queued: the record keeps
	// the calls, not what they copied (same never reads it).
	for i := range w.log {
		w.log[i].data = nil
	}
	b.graph.rec, b.graph.log = rec, w.log
	return train.StepCaptured, nil
}

// captureLog captures log's device work, its copies in left out, as a
// record: nil and the device's refusal when it cannot hold a call or
// make the graph (the capture ended, nothing run).
func captureLog(m machine, log []call) (record, error) {
	// One OS thread from the capture's begin to its end: the machine's
	// calls lock their thread each (Device.do), and these locks nest.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := m.beginCapture(); err != nil {
		return nil, fmt.Errorf("cuda: beginning the capture: %w", err)
	}
	var err error
	for i := range log {
		if c := &log[i]; c.kind != callCopyIn {
			if err = execCall(m, c); err != nil {
				err = fmt.Errorf("cuda: capturing call %d (%s): %w", i, c.String(), err)
				break
			}
		}
	}
	rec, endErr := m.endCapture()
	if err == nil && endErr != nil {
		err = fmt.Errorf("cuda: ending the capture: %w", endErr)
	}
	if err != nil {
		if rec != nil {
			m.dropRecord(rec)
		}
		return nil, err
	}
	return rec, nil
}

func (b *Backend) replay(step func() error) (train.StepRun, error) {
	m := b.m
	w := &recorder{machine: m, mode: recReplay, want: b.graph.log}
	b.m = w
	err := step()
	b.m = m
	if err != nil {
		return train.StepEager, err
	}
	if w.mode == recReplay && len(w.pending) != len(w.want) {
		if err := w.diverge(fmt.Sprintf("%d calls, the record %d", len(w.pending), len(w.want))); err != nil {
			return train.StepEager, err
		}
	}
	if w.mode == recEager {
		// Ran eagerly: capture again next step.
		b.dropRecord()
		return train.StepEager, nil
	}
	// The copies in were queued as they came (recorder.copyIn).
	return train.StepReplayed, m.replay(b.graph.rec)
}

// dropRecord releases the record, keeping the key warm.
func (b *Backend) dropRecord() {
	if b.graph.rec != nil {
		b.m.dropRecord(b.graph.rec)
	}
	b.graph.rec, b.graph.log = nil, nil
}

// ReleaseStep implements train.StepCapturer.
func (b *Backend) ReleaseStep() {
	b.dropRecord()
	b.graph.key, b.graph.warm = "", false
	if b.spare != nil { // kept for the record's addresses
		b.spare.free(b)
		b.spare = nil
	}
}

// StepRuns counts the steps RunStep ran eagerly, captured and replayed.
func (b *Backend) StepRuns() (eager, captured, replayed int) {
	return b.graph.runs[0], b.graph.runs[1], b.graph.runs[2]
}

// CaptureStats implements train.CaptureReporter.
func (b *Backend) CaptureStats() train.CaptureStats {
	g := &b.graph
	s := train.CaptureStats{Eager: g.runs[0], Captured: g.runs[1], Replayed: g.runs[2], Refusals: g.refusals, GaveUp: g.gaveUp()}
	if g.lastRefusal != nil {
		s.Refused = g.lastRefusal.Error()
	}
	return s
}
