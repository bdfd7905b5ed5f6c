//go:build cgo

package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/faster-training/faster/train"
)

// tinyNet is one training step over the backend's device ops, as a
// trainer would hand it to RunStep: the batch written into a fixed input
// tensor, a convolution with ReLU, a linear layer, the loss (labels copied
// in, the sums left on the device), backward, the fused SGD step at a
// learning rate that changes every step.
type tinyNet struct {
	b      *Backend
	params []*train.Param
	st     train.State
	opt    train.SGD
	conv   train.DeviceConvOp
	lin    train.DeviceLinearOp
	loss   train.LossOp
	x      map[int]train.Tensor // input tensors by batch size
	// scribble overwrites the batch once it is written: the caller's
	// memory is its own again when Write returns.
	scribble bool
}

func newTinyNet(t *testing.T, b *Backend) *tinyNet {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	mk := func(name string, n int) *train.Param {
		p := &train.Param{Name: name, Shape: []int{n}, Value: make([]float32, n), Grad: make([]float32, n)}
		for i := range p.Value {
			p.Value[i] = float32(rng.NormFloat64() * 0.3)
		}
		return p
	}
	n := &tinyNet{b: b, opt: train.SGD{Momentum: 0.9, WeightDecay: 1e-4}, x: map[int]train.Tensor{}}
	n.params = []*train.Param{mk("conv.w", 4*2*3*3), mk("conv.b", 4), mk("fc.w", 3*4*4*4), mk("fc.b", 3)}
	st, err := b.NewState(n.params, nil, &n.opt, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.st = st
	c, err := b.NewConv(train.ConvSpec{In: 2, Out: 4, Kernel: 3, Bias: true, ReLU: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.NewLinear(train.LinearSpec{In: 4 * 4 * 4, Out: 3})
	if err != nil {
		t.Fatal(err)
	}
	n.conv, n.lin = c.(train.DeviceConvOp), l.(train.DeviceLinearOp)
	if n.loss, err = b.NewLoss(train.LossSpec{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.st.Release()
		c.Close()
		l.Close()
		n.loss.Close()
		for _, x := range n.x {
			x.Release()
		}
	})
	return n
}

// batch is step s's input (batch×2×6×6) and labels, the same on every backend.
func batch(s, size int) ([]float32, []int) {
	rng := rand.New(rand.NewPCG(uint64(s), uint64(size)))
	x := make([]float32, size*2*6*6)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	y := make([]int, size)
	for i := range y {
		y[i] = rng.IntN(3)
	}
	return x, y
}

// step queues one training step (nothing read back).
func (n *tinyNet) step(s, size int) error {
	xv, labels := batch(s, size)
	return n.stepOn(s, xv, labels)
}

// stepOn is step on a batch the caller made.
func (n *tinyNet) stepOn(s int, xv []float32, labels []int) error {
	size := len(labels)
	x, ok := n.x[size]
	if !ok {
		var err error
		if x, err = n.b.NewTensor(size, 2, 6, 6); err != nil {
			return err
		}
		n.x[size] = x
	}
	if err := x.Write(xv); err != nil {
		return err
	}
	if n.scribble {
		for i := range xv {
			xv[i] = float32(math.NaN())
		}
	}
	cw, cdw := n.st.Tensors(0)
	cb, cdb := n.st.Tensors(1)
	fw, fdw := n.st.Tensors(2)
	fb, fdb := n.st.Tensors(3)
	h, err := n.conv.ForwardDevice(x, cw, cb)
	if err != nil {
		return err
	}
	z, err := n.lin.ForwardDevice(h, fw, fb)
	if err != nil {
		return err
	}
	dz, err := n.loss.Forward(z, labels, 1)
	if err != nil {
		return err
	}
	dh, err := n.lin.BackwardDevice(dz, fw, fdw, fdb, true)
	if err != nil {
		return err
	}
	if _, err := n.conv.BackwardDevice(dh, cw, cdw, cdb, false); err != nil {
		return err
	}
	return n.st.SGDStep(&n.opt, 0.1/float64(1+s)) // a new rate every step
}

func (n *tinyNet) weights(t *testing.T) [][]float32 {
	t.Helper()
	if err := n.st.Pull(&n.opt, nil); err != nil {
		t.Fatal(err)
	}
	var w [][]float32
	for _, p := range n.params {
		w = append(w, append([]float32(nil), p.Value...))
	}
	return w
}

// sameWithin compares a with the eager b: bit for bit when tol is 0,
// else within tol of each tensor's largest magnitude.
func sameWithin(a, b [][]float32, tol float64) error {
	for i := range a {
		scale := 0.0
		for _, v := range b[i] {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		for j := range a[i] {
			if tol == 0 && math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) ||
				tol > 0 && math.Abs(float64(a[i][j]-b[i][j])) > tol*scale {
				return fmt.Errorf("tensor %d value %d: %v, eager %v", i, j, a[i][j], b[i][j])
			}
		}
	}
	return nil
}

// A step run through RunStep (eager, captured, then replayed) leaves the
// weights bit-identical to eager steps after every step, the loss sums
// too; a new batch size (a new key) runs eagerly and is captured again;
// a call that differs from the record under the same key runs eagerly.
func TestTwinStepCapture(t *testing.T) {
	stepCapture(t, func(o train.BackendOptions) *Backend { return twinWith(t, o) }, 0)
}

func twinWith(t *testing.T, o train.BackendOptions) *Backend {
	t.Helper()
	b, err := OpenTwin(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.(*Backend)
}

// stepCapture runs the plan on two backends open makes; tol is 0 (bits)
// where the machine is deterministic.
func stepCapture(t *testing.T, open func(train.BackendOptions) *Backend, tol float64) {
	for _, p := range []train.Precision{train.Float32, train.Float16} {
		t.Run(p.String(), func(t *testing.T) {
			o := train.BackendOptions{Precision: p}
			eager, graphed := newTinyNet(t, open(o)), newTinyNet(t, open(o))
			graphed.scribble = true
			plan := []struct {
				size int
				key  string
				want train.StepRun
			}{
				{8, "b8", train.StepEager}, {8, "b8", train.StepCaptured}, {8, "b8", train.StepReplayed},
				{8, "b8", train.StepReplayed}, {8, "b8", train.StepReplayed},
				{5, "b5", train.StepEager}, {5, "b5", train.StepCaptured}, {5, "b5", train.StepReplayed},
				// The same key with another batch: the calls differ from the record.
				{8, "b5", train.StepEager}, {8, "b5", train.StepCaptured}, {8, "b5", train.StepReplayed},
			}
			for s, st := range plan {
				if err := eager.step(s, st.size); err != nil {
					t.Fatal(err)
				}
				run, err := graphed.b.RunStep(st.key, func() error { return graphed.step(s, st.size) })
				if err != nil {
					t.Fatalf("step %d: %v", s, err)
				}
				if run != st.want {
					t.Errorf("step %d (%s, batch %d): %v, want %v", s, st.key, st.size, run, st.want)
				}
				if err := sameWithin(graphed.weights(t), eager.weights(t), tol); err != nil {
					t.Fatalf("step %d (%v): %v", s, run, err)
				}
			}
			ge, gs := graphed.loss.Sums()
			ee, es := eager.loss.Sums()
			if gs != nil || es != nil || ge.Samples != ee.Samples || ge.Top1 != ee.Top1 && tol == 0 ||
				math.Abs(ge.Loss-ee.Loss) > tol*math.Abs(ee.Loss) {
				t.Errorf("loss sums %+v (%v), eager %+v (%v)", ge, gs, ee, es)
			}
			if e, c, r := graphed.b.StepRuns(); e != 3 || c != 3 || r != 5 {
				t.Errorf("runs: %d eager, %d captured, %d replayed; want 3, 3, 5", e, c, r)
			}
		})
	}
}

// A capture the device refuses (a call it cannot hold in a graph, or a
// graph it cannot make) leaves nothing run: the logged step runs eagerly
// in its place, the weights and loss sums the eager ones bit for bit
// after every step; the key warms up again and the capture is tried once
// more, and after a second refusal the backend captures no more steps, a
// new key's included, saying why in CaptureStats. A refusal that passes
// (the first capture's only) leaves the later steps captured and
// replayed, at the same bits.
func TestStepCaptureRefused(t *testing.T) {
	for _, c := range []struct {
		refuse string
		once   bool
	}{{"kernel sgd_lr", false}, {"end", false}, {"gemm 3x8x64", false}, {"kernel sgd_lr", true}} {
		t.Run(fmt.Sprintf("%s/once=%v", c.refuse, c.once), func(t *testing.T) {
			refuse := c.refuse
			eager := newTinyNet(t, twinWith(t, train.BackendOptions{}))
			gb, err := OpenTwinRefusing(train.BackendOptions{}, refuse)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { gb.Close() })
			if c.once {
				gb.(*Backend).m.(*twinMachine).refuseCaptures = 1
			}
			graphed := newTinyNet(t, gb.(*Backend))
			graphed.scribble = true
			sizes := []int{8, 8, 8, 8, 8, 5, 5, 5}
			want := []train.StepRun{train.StepEager, train.StepEager, train.StepEager, train.StepEager, train.StepEager,
				train.StepEager, train.StepEager, train.StepEager}
			if c.once { // refused, warm-up, captured, replayed; a new key's run
				want = []train.StepRun{train.StepEager, train.StepEager, train.StepEager, train.StepCaptured, train.StepReplayed,
					train.StepEager, train.StepCaptured, train.StepReplayed}
			}
			for s, size := range sizes {
				if err := eager.step(s, size); err != nil {
					t.Fatal(err)
				}
				run, err := graphed.b.RunStep(fmt.Sprint("b", size), func() error { return graphed.step(s, size) })
				if err != nil || run != want[s] {
					t.Fatalf("step %d: %v %v, want %v", s, run, err, want[s])
				}
				if err := sameWithin(graphed.weights(t), eager.weights(t), 0); err != nil {
					t.Fatalf("step %d: %v", s, err)
				}
			}
			ge, _ := graphed.loss.Sums()
			ee, _ := eager.loss.Sums()
			if ge != ee {
				t.Errorf("loss sums %+v, eager %+v", ge, ee)
			}
			st := graphed.b.CaptureStats()
			if !strings.Contains(st.Refused, "capturing a step") ||
				refuse != "end" && !strings.Contains(st.Refused, refuse) || refuse == "end" && !strings.Contains(st.Refused, "ending the capture") {
				t.Errorf("stats %+v: want the refusal of %q", st, refuse)
			}
			if _, err := graphed.b.m.alloc(8); err != nil {
				t.Errorf("the twin is left capturing: %v", err)
			}
			captures := graphed.b.m.(*twinMachine).captures
			if c.once {
				if st.Refusals != 1 || st.GaveUp || st.Captured != 2 || st.Replayed != 2 || captures != 3 {
					t.Errorf("stats %+v, %d captures begun: want 1 refusal, then 2 captured and 2 replayed, 3 captures", st, captures)
				}
				return
			}
			if st.Eager != len(sizes) || st.Captured+st.Replayed != 0 || st.Refusals != maxRefusals || !st.GaveUp || captures != maxRefusals {
				t.Errorf("stats %+v, %d captures begun: want %d eager steps, none captured, %d refusals and no capture after them (new keys too)", st, captures, len(sizes), maxRefusals)
			}
			if graphed.b.spare != nil || graphed.b.graph.warm {
				t.Error("after the last refusal the backend keeps a warm graph or a spare state's memory")
			}
		})
	}
}

// A replayed step queues its copies in as they come, from the caller's
// memory: it does not keep a copy of the batch (a captured step stages
// one), so a replay allocates far less than the batch's bytes, and the
// caller's scribbling over its batch after Write changes nothing.
func TestTwinReplayKeepsNoBatch(t *testing.T) {
	b := twinWith(t, train.BackendOptions{})
	n := newTinyNet(t, b)
	n.scribble = true
	const size = 256 // 72 kB of input a step
	xs, ys, xw := make([][]float32, 8), make([][]int, 8), make([][]float32, 8)
	for s := range xs {
		xs[s], ys[s] = batch(s, size)
		xw[s] = slices.Clone(xs[s])
	}
	want := newTinyNet(t, twinWith(t, train.BackendOptions{}))
	var ms runtime.MemStats
	var before uint64
	for s := range xs {
		if s == 2 { // the warm-up and the capture done
			runtime.ReadMemStats(&ms)
			before = ms.TotalAlloc
		}
		if err := want.stepOn(s, xw[s], ys[s]); err != nil {
			t.Fatal(err)
		}
		run, err := b.RunStep("k", func() error { return n.stepOn(s, xs[s], ys[s]) })
		if err != nil {
			t.Fatal(err)
		}
		if wantRun := min(train.StepRun(s), train.StepReplayed); run != wantRun {
			t.Fatalf("step %d ran %v, want %v", s, run, wantRun)
		}
	}
	runtime.ReadMemStats(&ms)
	perStep := (ms.TotalAlloc - before) / uint64(len(xs)-2)
	t.Logf("a replayed step allocated %d bytes (the batch: %d)", perStep, 4*len(xs[0]))
	if batchBytes := uint64(4 * len(xs[0])); perStep >= batchBytes {
		t.Errorf("a replayed step allocated %d bytes: the batch's %d were copied", perStep, batchBytes)
	}
	if err := sameWithin(n.weights(t), want.weights(t), 0); err != nil {
		t.Fatal(err)
	}
}

// A read back to the host inside a captured step is refused, by the
// recorder and by the twin itself (as the GPU refuses it during capture);
// the backend stays usable.
func TestTwinStepCaptureRefusesHostRead(t *testing.T) {
	b := twinWith(t, train.BackendOptions{})
	n := newTinyNet(t, b)
	read := func(s int) func() error {
		return func() error {
			if err := n.step(s, 4); err != nil {
				return err
			}
			_, err := n.loss.Sums()
			return err
		}
	}
	if run, err := b.RunStep("k", read(0)); err != nil || run != train.StepEager {
		t.Fatalf("warm-up: %v %v", run, err)
	}
	_, err := b.RunStep("k", read(1))
	if !errors.Is(err, errHostRead) {
		t.Fatalf("a read inside the captured step: %v, want errHostRead", err)
	}
	// The twin itself refuses while it records.
	m := b.m.(*twinMachine)
	if err := m.beginCapture(); err != nil {
		t.Fatal(err)
	}
	var v [4]byte
	err = m.copyOut(unsafePointer(&v), n.loss.(*lossOp).sums, 4)
	if _, endErr := m.endCapture(); endErr != nil {
		t.Fatal(endErr)
	}
	if err == nil || !strings.Contains(err.Error(), "read back to host memory") {
		t.Fatalf("twin copyOut while capturing: %v", err)
	}
	if _, err := m.alloc(8); err != nil {
		t.Fatalf("alloc after the capture: %v", err)
	}
	// After the refusal the next steps run again: eager, then captured.
	for s, want := range []train.StepRun{train.StepEager, train.StepCaptured, train.StepReplayed} {
		run, err := b.RunStep("k", func() error { return n.step(s+2, 4) })
		if err != nil || run != want {
			t.Fatalf("after the refusal, step %d: %v %v, want %v", s, run, err, want)
		}
	}
}

func unsafePointer(v *[4]byte) unsafe.Pointer { return unsafe.Pointer(&v[0]) }

// An event inside a step: refused while capturing (on the GPU it would be
// a node of the graph, no mark for another stream), and while replaying
// it leaves the record (recorded at once, it would come before the
// held-back work), so the step runs eagerly; the twin refuses events
// while it records, as the GPU machine does.
func TestStepCaptureEvents(t *testing.T) {
	b := twinWith(t, train.BackendOptions{})
	n := newTinyNet(t, b)
	ev, err := b.m.newEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer b.m.freeEvent(ev)
	for _, mark := range []func() error{
		func() error { return b.m.recordEvent(ev) },
		func() error { return b.m.streamWait(ev) },
	} {
		b.ReleaseStep()
		if run, err := b.RunStep("k", func() error { return n.step(0, 4) }); err != nil || run != train.StepEager {
			t.Fatalf("warm-up: %v %v", run, err)
		}
		_, err := b.RunStep("k", func() error {
			if err := n.step(1, 4); err != nil {
				return err
			}
			return mark()
		})
		if !errors.Is(err, errCapturedEvent) {
			t.Fatalf("an event in the captured step: %v, want errCapturedEvent", err)
		}
		for s, want := range []train.StepRun{train.StepEager, train.StepCaptured, train.StepReplayed} {
			if run, err := b.RunStep("k", func() error { return n.step(s+2, 4) }); err != nil || run != want {
				t.Fatalf("step %d: %v %v, want %v", s, run, err, want)
			}
		}
		run, err := b.RunStep("k", func() error {
			if err := n.step(5, 4); err != nil {
				return err
			}
			return mark()
		})
		if err != nil || run != train.StepEager {
			t.Fatalf("an event in a replayed step: %v %v, want it run eagerly", run, err)
		}
	}
	m := b.m.(*twinMachine)
	if err := m.beginCapture(); err != nil {
		t.Fatal(err)
	}
	rerr, werr := m.recordEvent(ev), m.streamWait(ev)
	if _, err := m.endCapture(); err != nil {
		t.Fatal(err)
	}
	if rerr == nil || werr == nil {
		t.Errorf("the twin while capturing: record %v, wait %v; want both refused", rerr, werr)
	}
}

// movingWorkspace is a machine whose convolutions' workspace is at ws (a
// workspacer): the test moves it as a grown cuDNN workspace moves.
type movingWorkspace struct {
	machine
	ws uint64
}

func (m *movingWorkspace) workspaceAddr() uint64 { return m.ws }

// A record names its convolutions' workspace: once the workspace moved
// (grown between steps, the old one freed) the next step leaves the
// record and runs eagerly, the one after captures again; a CUDA graph
// replayed after the move would run its convolutions in freed memory.
func TestStepCaptureWorkspaceMoved(t *testing.T) {
	b := twinWith(t, train.BackendOptions{})
	mw := &movingWorkspace{machine: b.m, ws: 1 << 20}
	b.m = mw
	t.Cleanup(func() { b.m = mw.machine })
	n, ref := newTinyNet(t, b), newTinyNet(t, twinWith(t, train.BackendOptions{}))
	plan := []train.StepRun{train.StepEager, train.StepCaptured, train.StepReplayed, train.StepEager, train.StepCaptured, train.StepReplayed}
	for s, want := range plan {
		if s == 3 {
			mw.ws = 2 << 20
		}
		run, err := b.RunStep("b8", func() error { return n.step(s, 8) })
		if err != nil {
			t.Fatal(err)
		}
		if err := ref.step(s, 8); err != nil {
			t.Fatal(err)
		}
		if run != want {
			t.Errorf("step %d: %v, want %v (the workspace moved before step 3)", s, run, want)
		}
	}
	if err := sameWithin(n.weights(t), ref.weights(t), 0); err != nil {
		t.Fatal(err)
	}
}
