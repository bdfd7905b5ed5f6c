//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/faster-training/faster/train"
)

func init() {
	train.Register("onednn", func(o train.BackendOptions) (train.Backend, error) {
		if err := train.CheckCPUDevice("onednn", o); err != nil {
			return nil, err
		}
		return New(o)
	})
}

// Backend runs train's ops on oneDNN primitives. Use it from one goroutine
// at a time.
type Backend struct {
	s       *stream
	threads int
	prec    train.Precision
	num     numerics
	tune    *tuner // nil unless BackendOptions.Autotune
	// winograd: BackendOptions.Winograd.
	winograd bool
}

var (
	_ train.Backend           = (*Backend)(nil)
	_ train.PrecisionReporter = (*Backend)(nil)
	_ train.Tuner             = (*Backend)(nil)
	_ train.TuneFlusher       = (*Backend)(nil)
)

// New opens the oneDNN CPU engine with its own stream.
func New(o train.BackendOptions) (*Backend, error) {
	if o.Precision < train.Float32 || o.Precision > train.Float16 {
		return nil, fmt.Errorf("onednn: unknown precision %v", o.Precision)
	}
	t := o.Threads
	if t <= 0 {
		t = runtime.NumCPU()
	}
	s, err := newStream(t)
	if err != nil {
		return nil, err
	}
	if o.NormThreads > 0 {
		s.bnThreads = min(o.NormThreads, t)
	}
	b := &Backend{s: s, threads: t, prec: o.Precision, num: newNumerics(o.Precision), winograd: o.Winograd}
	if o.Autotune {
		b.tune = &tuner{chosen: map[string]convAlgo{}, prec: o.Precision}
		if o.TuneCache != "" {
			c, err := train.OpenTuneCache(o.TuneCache, MachineKey())
			if err != nil {
				b.Close()
				return nil, fmt.Errorf("onednn: autotune: %w", err)
			}
			if c.Problem != nil { // never worth stopping a run for
				fmt.Fprintf(warnings, "faster: autotune: %v\n", c.Problem)
			}
			b.tune.cache = c
		}
	}
	return b, nil
}

func (b *Backend) Name() string { return "onednn" }
func (b *Backend) Threads() int { return b.threads }

// FlushTuneCache implements train.TuneFlusher: it writes the choices
// autotuning made since the last call to the tune cache, if any.
func (b *Backend) FlushTuneCache() { b.tune.flush() }

// Close writes the choices autotuning made to the tune cache (those not
// written yet) and releases the backend.
func (b *Backend) Close() error {
	b.tune.flush()
	b.s.close()
	return nil
}

// tensor is a buffer in any layout with its logical shape.
type tensor struct {
	s     *stream
	shape []int
	m     *mem
	plain memDesc
	host  slot // reorder to plain for Read
	stage *mem // plain staging buffer for Write into a blocked layout
	// nonNeg: the output of a convolution with a fused ReLU. maskedBy,
	// when not nil, says this gradient is already masked where that
	// buffer (a fused ReLU's output) is 0: a BatchNorm after the ReLU did
	// the ReLU's backward pass in its own, and the convolution skips it.
	nonNeg   bool
	maskedBy *mem
}

func newTensor(s *stream, shape []int, md memDesc) (*tensor, error) {
	plain, err := newMD(shape, false)
	if err != nil {
		return nil, err
	}
	m, err := newMem(md)
	if err != nil {
		return nil, err
	}
	return &tensor{s: s, shape: slices.Clone(shape), m: m, plain: plain}, nil
}

func (b *Backend) NewTensor(shape ...int) (train.Tensor, error) {
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("tensor shape %v: dimensions must be positive", shape)
		}
	}
	md, err := newMD(shape, false)
	if err != nil {
		return nil, err
	}
	return newTensor(b.s, shape, md)
}

func (t *tensor) Shape() []int { return t.shape }

func (t *tensor) Read(dst []float32) error {
	n := train.Numel(t.shape)
	if len(dst) != n {
		return fmt.Errorf("tensor %v: read into %d values", t.shape, len(dst))
	}
	if t.m == nil {
		return fmt.Errorf("tensor %v: released", t.shape)
	}
	m, err := t.host.get(t.s, t.m, t.plain)
	if err != nil {
		return err
	}
	copy(dst, m.floats(n))
	return nil
}

func (t *tensor) Write(src []float32) error {
	n := train.Numel(t.shape)
	if len(src) != n {
		return fmt.Errorf("tensor %v: write of %d values", t.shape, len(src))
	}
	if t.m == nil {
		return fmt.Errorf("tensor %v: released", t.shape)
	}
	if mdEqual(&t.m.md, &t.plain) {
		copy(t.m.floats(n), src)
		return nil
	}
	if t.stage == nil {
		m, err := newMem(t.plain)
		if err != nil {
			return err
		}
		t.stage = m
	}
	copy(t.stage.floats(n), src)
	r, err := newReorder(&t.plain, &t.m.md)
	if err != nil {
		return err
	}
	defer r.free()
	return t.s.exec("reorder", r, arg(argSrc, t.stage), arg(argDst, t.m))
}

func (t *tensor) Release() {
	t.host.free()
	t.stage.free()
	t.m.free()
	t.m = nil
}

// reset replaces *tp with a tensor of the given shape and layout unless it
// already is one.
func reset(s *stream, tp **tensor, shape []int, md memDesc) error {
	if *tp != nil && slices.Equal((*tp).shape, shape) && mdEqual(&(*tp).m.md, &md) {
		return nil
	}
	if *tp != nil {
		(*tp).Release()
	}
	t, err := newTensor(s, shape, md)
	*tp = t
	return err
}

func release(ts ...*tensor) {
	for _, t := range ts {
		if t != nil && t.m != nil {
			t.Release()
		}
	}
}

func asTensor(x train.Tensor, rank ...int) (*tensor, error) {
	t, ok := x.(*tensor)
	if !ok {
		return nil, fmt.Errorf("onednn backend: tensor of another backend (%T)", x)
	}
	if t.m == nil {
		return nil, fmt.Errorf("onednn backend: tensor %v released", t.shape)
	}
	if len(rank) > 0 && !slices.Contains(rank, len(t.shape)) {
		return nil, fmt.Errorf("onednn backend: tensor of shape %v: want rank %v", t.shape, rank)
	}
	return t, nil
}

// load copies v into a plain buffer (created on first use).
func load(mp **mem, shape []int, v []float32) error {
	if *mp == nil {
		md, err := newMD(shape, false)
		if err != nil {
			return err
		}
		if *mp, err = newMem(md); err != nil {
			return err
		}
	}
	copy((*mp).floats(len(v)), v)
	return nil
}

func freeMems(ms ...**mem) {
	for _, m := range ms {
		(*m).free()
		*m = nil
	}
}

func freePrims(ps ...**prim) {
	for _, p := range ps {
		(*p).free()
		*p = nil
	}
}

func freeSlots(ss ...*slot) {
	for _, s := range ss {
		s.free()
	}
}

// workspace allocates the workspace a primitive wants, or returns nil.
func workspace(p *prim) (*mem, error) {
	md := p.md(argWorkspace)
	if mdSize(&md) == 0 {
		return nil, nil
	}
	return newMem(md)
}
