package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
)

// NewState implements train.ParamStore: the params' values, then the
// buffers', in one flat allocation (so SGD, the EMA and its swap are one
// kernel each over the params' prefix or the whole), the gradients in
// another of the params' length, the momentum and the average beside
// them. Each Param's tensors are views into the flats.
func (b *Backend) NewState(params, buffers []*train.Param, opt *train.SGD, e *train.EMA) (train.State, error) {
	s := &state{b: b, params: params, all: append(params[:len(params):len(params)], buffers...)}
	for i, p := range s.all {
		if i < len(params) && len(p.Grad) != len(p.Value) {
			return nil, fmt.Errorf("cuda: state: %s has %d values and %d gradients", p.Name, len(p.Value), len(p.Grad))
		}
		s.off = append(s.off, s.nall)
		s.nall += len(p.Value)
		if i < len(params) {
			s.np = s.nall
		}
	}
	s.sizes = [3]int{s.np, s.nall, len(params)}
	if err := s.takeMemory(); err != nil {
		s.Release()
		return nil, fmt.Errorf("cuda: state of %d values: %w", s.nall, err)
	}
	for i, p := range s.all {
		v := &tensor{b: b, shape: []int{len(p.Value)}, p: s.vals + 4*uint64(s.off[i]), n: len(p.Value), view: true, st: s, off: s.off[i]}
		var g *tensor
		if i < len(params) {
			g = &tensor{b: b, shape: []int{len(p.Value)}, p: s.grads + 4*uint64(s.off[i]), n: len(p.Value), view: true}
		}
		s.vt, s.gt = append(s.vt, v), append(s.gt, g)
	}
	if err := b.copyIn(s.inv+4, []float32{1}); err != nil {
		s.Release()
		return nil, err
	}
	if err := s.Push(opt, e); err != nil {
		s.Release()
		return nil, err
	}
	return s, nil
}

// state is train.State in the machine's memory.
type state struct {
	b           *Backend
	params, all []*train.Param
	off         []int // element offset of each of all in vals (and of each param in grads, vel)
	np, nall    int   // elements of the params, of all
	stateMem
	velHave   bool      // the momentum exists (after the first step or a Push)
	haveStale bool      // SGDStepScaled ran since velHave was known: the device's flag says
	st        []*tensor // views of scratch, by param
	emaHave   bool
	vt, gt    []*tensor
	// gen counts the changes of the values; lowGen is the one low was
	// cast from.
	gen, lowGen uint64
}

// stateMem is a state's device memory. A released state's is kept by the
// backend (Backend.spare) and taken by the next state of the same sizes,
// so a network bound again — the next epoch's TrainStream — gets the same
// addresses, and the step's record (a CUDA graph, which names them)
// replays instead of being captured again.
type stateMem struct {
	sizes       [3]int // np, nall, params: what it was made for
	vals, grads uint64
	vel, ema    uint64
	found       uint64 // a float per param: the finite checks' flags
	inv         uint64 // [the unscale factor, 1, the momentum exists (SGDStepScaled's)]
	lr          uint64 // the learning rate, read by sgd_lr (a replayed step's graph does not change with it)
	sc          uint64 // the GradScaler (amp_update_scale's doubles), 0 before PushScaler
	scratch     uint64 // ZeroGrad's scratch gradients (0 until asked)
	// low is the values cast to the backend's 16-bit type (bf16, fp16):
	// the weights convolutions and products read, cast once after each
	// change of the values (0 until asked).
	low uint64
}

// ptrs lists the allocations, for freeing.
func (m *stateMem) ptrs() []*uint64 {
	return []*uint64{&m.vals, &m.grads, &m.vel, &m.ema, &m.found, &m.inv, &m.lr, &m.sc, &m.low, &m.scratch}
}

// free releases every allocation of m on b's machine.
func (m *stateMem) free(b *Backend) {
	for _, p := range m.ptrs() {
		if *p != 0 {
			b.m.free(*p)
			*p = 0
		}
	}
}

// changed records that the values changed: the 16-bit copy is stale.
func (s *state) changed() { s.gen++ }

// lowValues is the 16-bit copy of every value, cast (one kernel over the
// flat) when the values changed since the last cast.
func (s *state) lowValues() (uint64, error) {
	if s.low == 0 {
		p, err := s.b.m.alloc(2 * max(s.nall, 1))
		if err != nil {
			return 0, fmt.Errorf("cuda: state: %s copy of %d values: %w", s.b.prec, s.nall, err)
		}
		s.low, s.lowGen = p, s.gen-1
	}
	if s.lowGen != s.gen {
		to, _ := s.b.casts()
		if err := s.b.run(to, kernels.Elementwise, s.nall, 0, s.vals, s.low, i64(s.nall)); err != nil {
			return 0, err
		}
		s.lowGen = s.gen
	}
	return s.low, nil
}

func (s *state) Tensors(i int) (train.Tensor, train.Tensor) {
	if s.gt[i] == nil {
		return s.vt[i], nil
	}
	return s.vt[i], s.gt[i]
}

// Unscale is amp_unscale over every gradient, the flag read back.
func (s *state) Unscale(inv float32) (bool, error) {
	if err := s.b.copyIn(s.inv, []float32{inv}); err != nil {
		return false, err
	}
	if err := s.b.m.zero(s.found, 4); err != nil {
		return false, err
	}
	if err := s.b.run("amp_unscale", kernels.Elementwise, s.np, 0, s.grads, i64(s.np), s.found, s.inv); err != nil {
		return false, err
	}
	f := []float32{0}
	if err := s.b.copyOut(f, s.found); err != nil {
		return false, err
	}
	return f[0] == 0, nil
}

var _ train.ScalerState = (*state)(nil)

// scalerLen is the doubles amp_update_scale keeps: scale, growth
// tracker, skipped count, growth factor, backoff factor, interval.
const scalerLen = 6

// PushScaler implements train.ScalerState: g's scale, counts and factors
// into the state's doubles, float32(1/Scale) into the unscale factor,
// and whether the momentum exists into the flag sgd_found reads.
func (s *state) PushScaler(g *train.GradScaler) error {
	if s.sc == 0 {
		p, err := s.b.m.alloc(8 * scalerLen)
		if err != nil {
			return fmt.Errorf("cuda: GradScaler: %w", err)
		}
		s.sc = p
	}
	v := [scalerLen]float64{g.Scale, float64(g.Growth), float64(g.Skipped), g.GrowthFactor, g.BackoffFactor, float64(g.GrowthInterval)}
	if err := s.b.m.copyIn(s.sc, unsafe.Pointer(&v[0]), 8*scalerLen); err != nil {
		return err
	}
	if err := s.syncHave(); err != nil {
		return err
	}
	return s.b.copyIn(s.inv, []float32{float32(1 / g.Scale), 1, flagF(s.velHave)})
}

// PullScaler implements train.ScalerState: the scale and counts read back
// (waiting for the queued work).
func (s *state) PullScaler(g *train.GradScaler) error {
	if s.sc == 0 {
		return errors.New("cuda: no GradScaler on the device (PushScaler)")
	}
	var v [scalerLen]float64
	if err := s.b.m.copyOut(unsafe.Pointer(&v[0]), s.sc, 8*scalerLen); err != nil {
		return err
	}
	g.Scale, g.Growth, g.Skipped = v[0], int(v[1]), int(v[2])
	return nil
}

// UnscaleScaled implements train.ScalerState: amp_unscale over every
// gradient by the factor amp_update_scale (or PushScaler) left, its flag
// on the device.
func (s *state) UnscaleScaled() error {
	if s.sc == 0 {
		return errors.New("cuda: no GradScaler on the device (PushScaler)")
	}
	if err := s.b.m.zero(s.found, 4); err != nil {
		return err
	}
	return s.b.run("amp_unscale", kernels.Elementwise, s.np, 0, s.grads, i64(s.np), s.found, s.inv)
}

// SGDStepScaled implements train.ScalerState: sgd_found, which skips the
// update when UnscaleScaled's flag is set and takes the momentum's first
// step from the device's flag, then amp_update_scale. Nothing is read
// back: whether the momentum exists is known again at the next read of
// the flag (syncHave).
func (s *state) SGDStepScaled(o *train.SGD, lr float64) error {
	if s.sc == 0 {
		return errors.New("cuda: no GradScaler on the device (PushScaler)")
	}
	s.changed()
	if err := s.b.copyIn(s.lr, []float32{float32(lr)}); err != nil {
		return err
	}
	have := s.inv + 8
	if err := s.b.run("sgd_found", kernels.Elementwise, s.np, 0, s.vals, s.grads, s.vel, i64(s.np), s.lr,
		f32(o.Momentum), f32(o.WeightDecay), flag(o.Nesterov), have, s.found); err != nil {
		return err
	}
	if o.Momentum == 0 {
		have = 0 // no momentum is made
	} else {
		s.haveStale = true
	}
	return s.b.run("amp_update_scale", kernels.Single, 1, 1, s.sc, s.found, s.inv, have)
}

// syncHave reads whether the momentum exists from the device's flag when
// SGDStepScaled ran since it was last known (waiting for the queued
// work).
func (s *state) syncHave() error {
	if !s.haveStale {
		return nil
	}
	f := []float32{0}
	if err := s.b.copyOut(f, s.inv+8); err != nil {
		return err
	}
	s.velHave, s.haveStale = f[0] != 0, false
	return nil
}

func flagF(v bool) float32 {
	if v {
		return 1
	}
	return 0
}

var _ train.GradAccumulator = (*state)(nil)

// ScratchGrad implements train.GradAccumulator: a view of param i in a
// flat of the params' length, allocated on first use (torch's
// zero_grad() without set_to_none on the device: Trainer.ZeroGrad).
func (s *state) ScratchGrad(i int) (train.Tensor, error) {
	if i < 0 || i >= len(s.params) {
		return nil, fmt.Errorf("cuda: state: no param %d of %d", i, len(s.params))
	}
	if s.scratch == 0 {
		p, err := s.b.m.alloc(4 * max(s.np, 1))
		if err != nil {
			return nil, fmt.Errorf("cuda: state: scratch gradients of %d values: %w", s.np, err)
		}
		s.scratch = p
	}
	if s.st == nil {
		s.st = make([]*tensor, len(s.params))
	}
	if s.st[i] == nil {
		n := len(s.params[i].Value)
		s.st[i] = &tensor{b: s.b, shape: []int{n}, p: s.scratch + 4*uint64(s.off[i]), n: n, view: true}
	}
	return s.st[i], nil
}

// ZeroGrads implements train.GradAccumulator: one memset of the
// gradients' flat.
func (s *state) ZeroGrads() error { return s.b.m.zero(s.grads, 4*s.np) }

// AccumulateGrads implements train.GradAccumulator: grad = grad +
// scratch, the add kernel once over the flat (the host path's float32
// additions).
func (s *state) AccumulateGrads() error {
	if s.scratch == 0 {
		return errors.New("cuda: state: accumulating gradients before any scratch gradient")
	}
	return s.b.run("add", kernels.Elementwise, s.np, 0, s.grads, s.scratch, s.grads, i64(s.np))
}

// SGDStep is the sgd_lr kernel once over the params' flat, the learning
// rate copied into device memory first (so a captured step's graph reads
// each step's rate and stays the same).
func (s *state) SGDStep(o *train.SGD, lr float64) error {
	if err := s.syncHave(); err != nil {
		return err
	}
	first := o.Momentum != 0 && !s.velHave
	s.changed()
	if err := s.b.copyIn(s.lr, []float32{float32(lr)}); err != nil {
		return err
	}
	if err := s.b.run("sgd_lr", kernels.Elementwise, s.np, 0, s.vals, s.grads, s.vel, i64(s.np), s.lr,
		f32(o.Momentum), f32(o.WeightDecay), flag(o.Nesterov), flag(first)); err != nil {
		return err
	}
	if first { // the flag sgd_found reads, should a scaled step follow
		if err := s.b.copyIn(s.inv+8, []float32{1}); err != nil {
			return err
		}
	}
	if o.Momentum != 0 {
		s.velHave = true
	}
	return nil
}

// NonFinite runs amp_unscale with a factor of 1 (which writes back what
// it reads) over all the params at once, one flag, read once; only when
// it is set (a failing run), over each param with its own flag, to name
// them.
func (s *state) NonFinite(values bool) ([]int, error) {
	base := s.grads
	if values {
		base = s.vals
	}
	if err := s.b.m.zero(s.found, 4); err != nil {
		return nil, err
	}
	if err := s.b.run("amp_unscale", kernels.Elementwise, s.np, 0, base, i64(s.np), s.found, s.inv+4); err != nil {
		return nil, err
	}
	any := make([]float32, 1)
	if err := s.b.copyOut(any, s.found); err != nil {
		return nil, err
	}
	if any[0] == 0 {
		return nil, nil
	}
	if err := s.b.m.zero(s.found, 4*len(s.params)); err != nil {
		return nil, err
	}
	for i, p := range s.params {
		n := len(p.Value)
		if err := s.b.run("amp_unscale", kernels.Elementwise, n, 0, base+4*uint64(s.off[i]), i64(n), s.found+4*uint64(i), s.inv+4); err != nil {
			return nil, err
		}
	}
	f := make([]float32, len(s.params))
	if err := s.b.copyOut(f, s.found); err != nil {
		return nil, err
	}
	var bad []int
	for i, v := range f {
		if v != 0 {
			bad = append(bad, i)
		}
	}
	return bad, nil
}

func (s *state) EMAUpdate(decay float64, first bool) error {
	first = first || !s.emaHave
	if err := s.b.run("ema_update", kernels.Elementwise, s.nall, 0, s.ema, s.vals, i64(s.nall), f32(float32(decay)), flag(first)); err != nil {
		return err
	}
	s.emaHave = true
	return nil
}

func (s *state) EMASwap() error {
	if !s.emaHave {
		return errors.New("cuda: EMA swap before an update")
	}
	s.changed()
	return s.b.run("swap_f32", kernels.Elementwise, s.nall, 0, s.vals, s.ema, i64(s.nall))
}

// Pull copies the values, the momentum and the average out (each copy
// waits for the queued work).
func (s *state) Pull(opt *train.SGD, e *train.EMA) error {
	if err := s.syncHave(); err != nil {
		return err
	}
	for i, p := range s.all {
		if err := s.b.copyOut(p.Value, s.vals+4*uint64(s.off[i])); err != nil {
			return fmt.Errorf("cuda: pull %s: %w", p.Name, err)
		}
	}
	if s.velHave && opt != nil {
		if opt.Velocity == nil {
			opt.Velocity = make([][]float32, len(s.params))
		}
		for i, p := range s.params {
			opt.Velocity[i] = grow(opt.Velocity[i], len(p.Value))
			if err := s.b.copyOut(opt.Velocity[i], s.vel+4*uint64(s.off[i])); err != nil {
				return fmt.Errorf("cuda: pull the momentum of %s: %w", p.Name, err)
			}
		}
	}
	if s.emaHave && e != nil {
		if e.Values == nil {
			e.Values = make([][]float32, len(s.all))
		}
		for i, p := range s.all {
			e.Values[i] = grow(e.Values[i], len(p.Value))
			if err := s.b.copyOut(e.Values[i], s.ema+4*uint64(s.off[i])); err != nil {
				return fmt.Errorf("cuda: pull the average of %s: %w", p.Name, err)
			}
		}
	}
	return nil
}

func grow(v []float32, n int) []float32 {
	if cap(v) < n {
		return make([]float32, n)
	}
	return v[:n]
}

// Push copies the values, the momentum and the average in; a nil
// Velocity or Values means none yet.
func (s *state) Push(opt *train.SGD, e *train.EMA) error {
	s.changed()
	for i, p := range s.all {
		if len(p.Value) != s.vt[i].n {
			return fmt.Errorf("cuda: push %s: %d values, the state %d", p.Name, len(p.Value), s.vt[i].n)
		}
		if err := s.b.copyIn(s.vals+4*uint64(s.off[i]), p.Value); err != nil {
			return fmt.Errorf("cuda: push %s: %w", p.Name, err)
		}
	}
	s.velHave, s.emaHave, s.haveStale = false, false, false
	if opt != nil && opt.Velocity != nil {
		if len(opt.Velocity) != len(s.params) {
			return fmt.Errorf("cuda: push: momentum of %d params, the state has %d", len(opt.Velocity), len(s.params))
		}
		for i, p := range s.params {
			if len(opt.Velocity[i]) != len(p.Value) {
				return fmt.Errorf("cuda: push the momentum of %s: %d values, want %d", p.Name, len(opt.Velocity[i]), len(p.Value))
			}
			if err := s.b.copyIn(s.vel+4*uint64(s.off[i]), opt.Velocity[i]); err != nil {
				return err
			}
		}
		s.velHave = true
	}
	if err := s.b.copyIn(s.inv+8, []float32{flagF(s.velHave)}); err != nil {
		return err
	}
	if e != nil && e.Values != nil {
		if len(e.Values) != len(s.all) {
			return fmt.Errorf("cuda: push: average of %d tensors, the state has %d", len(e.Values), len(s.all))
		}
		for i, p := range s.all {
			if len(e.Values[i]) != len(p.Value) {
				return fmt.Errorf("cuda: push the average of %s: %d values, want %d", p.Name, len(e.Values[i]), len(p.Value))
			}
			if err := s.b.copyIn(s.ema+4*uint64(s.off[i]), e.Values[i]); err != nil {
				return err
			}
		}
		s.emaHave = true
	}
	return nil
}

// Release frees the state's memory, or, while the backend runs captured
// steps (a step graph is warm), gives it to the backend for the next
// state of its sizes (Backend.spare, one kept; freed by ReleaseStep and
// Close).
func (s *state) Release() {
	if s.vals != 0 && !s.b.closed && s.b.graph.warm && !s.b.graph.gaveUp() {
		if s.b.spare != nil {
			s.b.spare.free(s.b)
		}
		s.b.spare = &stateMem{}
		*s.b.spare = s.stateMem
	} else {
		s.stateMem.free(s.b)
	}
	s.stateMem = stateMem{}
	s.vt, s.gt, s.st = nil, nil, nil
}

// takeMemory gives s the backend's spare memory when it was made for the
// same sizes (its gradients and flags zeroed, as new memory is: the
// values, momentum, average and scaler are written by Push and
// PushScaler, the 16-bit copy is cast again), else new memory.
func (s *state) takeMemory() error {
	b := s.b
	if sp := b.spare; sp != nil {
		b.spare = nil
		if sp.sizes == s.sizes {
			s.stateMem = *sp
			if err := b.m.zero(s.grads, 4*max(s.np, 1)); err != nil {
				return err
			}
			return b.m.zero(s.found, 4*max(len(s.params), 1))
		}
		sp.free(b)
	}
	for _, f := range []struct {
		p *uint64
		n int
	}{{&s.vals, s.nall}, {&s.grads, s.np}, {&s.vel, s.np}, {&s.ema, s.nall}, {&s.found, len(s.params)}, {&s.inv, 3}, {&s.lr, 1}} {
		p, err := b.m.alloc(4 * max(f.n, 1))
		if err != nil {
			return err
		}
		*f.p = p
	}
	return nil
}

// ---- loss ----

// NewLoss implements train.LossBackend: ce_loss per row, ce_sums into
// three doubles that stay on the device until Sums.
func (b *Backend) NewLoss(s train.LossSpec) (train.LossOp, error) {
	sums, err := b.m.alloc(3 * 8)
	if err != nil {
		return nil, fmt.Errorf("cuda: loss sums: %w", err)
	}
	return &lossOp{b: b, eps: float32(s.LabelSmoothing), sums: sums}, nil
}

type lossOp struct {
	b         *Backend
	eps       float32
	sums      uint64 // [loss, top-1, top-5] in float64
	samples   int
	labels    uint64
	nLabels   int
	rowstat   *tensor
	dl        *tensor
	labelHost []int32
}

var _ train.ScaledLossOp = (*lossOp)(nil)

func (l *lossOp) Forward(logits train.Tensor, labels []int, gradScale float64) (train.Tensor, error) {
	if gradScale == 0 {
		gradScale = 1
	}
	return l.forward(logits, labels, gradScale, 0, train.ScaleShare{})
}

// ForwardScaled implements train.ScaledLossOp: ce_loss reads the scale
// from ss's doubles on the device (a state of this backend with a
// GradScaler pushed).
func (l *lossOp) ForwardScaled(logits train.Tensor, labels []int, ss train.ScalerState, share train.ScaleShare) (train.Tensor, error) {
	st, ok := ss.(*state)
	if !ok || st.b != l.b || st.sc == 0 {
		return nil, fmt.Errorf("cuda: cross-entropy scaled by %T, not a state of this backend with a GradScaler", ss)
	}
	if share.Ranks < 1 || share.Local < 1 {
		return nil, fmt.Errorf("cuda: cross-entropy: share %+v of the scale", share)
	}
	return l.forward(logits, labels, 1, st.sc, share)
}

// forward is ce_loss then ce_sums, the gradient scaled by gradScale, or
// by share of the double at dscale in device memory when it is not 0.
func (l *lossOp) forward(logits train.Tensor, labels []int, gradScale float64, dscale uint64, share train.ScaleShare) (train.Tensor, error) {
	x, err := asT(logits, 2)
	if err != nil {
		return nil, err
	}
	n, k := x.shape[0], x.shape[1]
	if n != len(labels) {
		return nil, fmt.Errorf("cuda: cross-entropy: logits %v for %d labels", x.shape, len(labels))
	}
	l.labelHost = l.labelHost[:0]
	for _, y := range labels {
		if y < 0 || y >= k {
			return nil, fmt.Errorf("cuda: cross-entropy: label %d out of range [0,%d)", y, k)
		}
		l.labelHost = append(l.labelHost, int32(y))
	}
	if l.nLabels < n {
		if l.labels != 0 {
			l.b.m.free(l.labels)
			l.labels, l.nLabels = 0, 0
		}
		if l.labels, err = l.b.m.alloc(4 * n); err != nil {
			return nil, fmt.Errorf("cuda: labels: %w", err)
		}
		l.nLabels = n
	}
	if err := l.b.m.copyIn(l.labels, unsafe.Pointer(&l.labelHost[0]), 4*n); err != nil {
		return nil, err
	}
	if err := l.b.ensure(&l.dl, n, k); err != nil {
		return nil, err
	}
	if err := l.b.ensure(&l.rowstat, 3*n); err != nil {
		return nil, err
	}
	if err := l.b.run("ce_loss", kernels.PerRow, n, k, x.p, l.labels, l.dl.p, l.rowstat.p, i32(n), i32(k), f32(l.eps),
		f32(float32(gradScale/float64(n))), dscale, i32(share.Ranks), i32(share.Rows), i32(share.Local)); err != nil {
		return nil, err
	}
	if err := l.b.run("ce_sums", kernels.Single, 1, n, l.rowstat.p, i32(n), l.sums); err != nil {
		return nil, err
	}
	l.samples += n
	return l.dl, nil
}

// Sums reads the three sums (waiting for the queued work) and zeroes them.
func (l *lossOp) Sums() (train.LossSums, error) {
	var v [3]float64
	if err := l.b.m.copyOut(unsafe.Pointer(&v[0]), l.sums, 24); err != nil {
		return train.LossSums{}, err
	}
	if err := l.b.m.zero(l.sums, 24); err != nil {
		return train.LossSums{}, err
	}
	s := train.LossSums{Loss: v[0], Top1: int(v[1]), Top5: int(v[2]), Samples: l.samples}
	l.samples = 0
	return s, nil
}

func (l *lossOp) Close() {
	l.dl.free()
	l.rowstat.free()
	for _, p := range []*uint64{&l.sums, &l.labels} {
		if *p != 0 {
			l.b.m.free(*p)
			*p = 0
		}
	}
}

// ---- input ----

// NewByteInput implements train.ByteInputBackend: the bytes copied in,
// normalize_u8 on the device.
func (b *Backend) NewByteInput() (train.ByteInputOp, error) { return &byteInput{b: b}, nil }

type byteInput struct {
	b            *Backend
	pix          uint64
	nPix         int
	scale, shift *tensor
	host         []float32
}

func (in *byteInput) Normalize(dst train.Tensor, bb train.ByteBatch) error {
	t, err := asT(dst, 4)
	if err != nil {
		return err
	}
	if t.shape[0] != bb.N || t.shape[1] != bb.C || t.shape[2] != bb.H || t.shape[3] != bb.W {
		return fmt.Errorf("cuda: byte batch %d×%d×%d×%d into %v", bb.N, bb.H, bb.W, bb.C, t.shape)
	}
	n := bb.N * bb.H * bb.W * bb.C
	if len(bb.Pixels) != n {
		return fmt.Errorf("cuda: byte batch of %d bytes for %d×%d×%d×%d", len(bb.Pixels), bb.N, bb.H, bb.W, bb.C)
	}
	if in.nPix < n {
		if in.pix != 0 {
			in.b.m.free(in.pix)
			in.pix, in.nPix = 0, 0
		}
		if in.pix, err = in.b.m.alloc(n); err != nil {
			return fmt.Errorf("cuda: byte batch: %w", err)
		}
		in.nPix = n
	}
	if n > 0 {
		if err := in.b.m.copyIn(in.pix, unsafe.Pointer(&bb.Pixels[0]), n); err != nil {
			return err
		}
	}
	return in.normalize(in.pix, t.p, bb.N, bb.C, bb.H, bb.W, bb.Mean, bb.Std, bb.CHW, bb.Torch, bb.Flip)
}

// normalize runs normalize_u8 from the N×H×W×C bytes at src (N×C×H×W
// when chw) into the N×C×H×W floats at dst in train.NormalizeHWC's
// arithmetic: Fill's factors, scale 1/(255·std) and shift −mean/std, or
// with torch the mean and std themselves, divided by.
func (in *byteInput) normalize(src, dst uint64, n, c, h, w int, mean, std []float32, chw, torch, flip bool) error {
	in.host = grow(in.host, 2*c)
	for k := range c {
		m, s := channel(mean, k, 0), channel(std, k, 1)
		if s == 0 {
			s = 1
		}
		if torch {
			in.host[k], in.host[c+k] = m, s
		} else {
			in.host[k], in.host[c+k] = 1/(255*s), -m/s
		}
	}
	if _, err := in.b.hostTensor(&in.scale, in.host[:c]); err != nil {
		return err
	}
	if _, err := in.b.hostTensor(&in.shift, in.host[c:]); err != nil {
		return err
	}
	var mode kernels.NormMode
	if chw {
		mode |= kernels.NormCHW
	}
	if torch {
		mode |= kernels.NormDiv
	}
	if flip {
		mode |= kernels.NormFlip
	}
	return in.b.run("normalize_u8", kernels.PerRow, n*c, h*w, src, dst, in.scale.p, in.shift.p, i32(n), i32(c), i32(h), i32(w), i32(int(mode)))
}

// NewDeviceInput implements train.DeviceInputBackend: rows already in
// this device's memory (a decode stage's batch) are read there — F32
// rows by a device-to-device copy, U8 rows by normalize_u8 reading them
// in place — and Load waits for that work alone (an event), not for the
// step queued beside it.
func (b *Backend) NewDeviceInput() (train.DeviceInputOp, error) {
	return &deviceInput{byteInput{b: b}}, nil
}

type deviceInput struct{ byteInput }

func (in *deviceInput) Load(dst train.Tensor, r train.DeviceRows, lo, hi int) error {
	t, err := asT(dst, 4)
	if err != nil {
		return err
	}
	if dev := in.b.m.device(); r.Device != dev {
		return fmt.Errorf("%w: rows on %s, backend on %s", train.ErrDeviceRows, r.Device, dev)
	}
	if lo < 0 || hi > r.N || lo >= hi {
		return fmt.Errorf("cuda: rows [%d, %d) of %d", lo, hi, r.N)
	}
	if t.shape[0] != hi-lo || t.shape[1] != r.C || t.shape[2] != r.H || t.shape[3] != r.W {
		return fmt.Errorf("cuda: %d rows of %d×%d×%d into %v", hi-lo, r.C, r.H, r.W, t.shape)
	}
	per := r.C * r.H * r.W
	src := r.Ptr + uint64(lo*r.RowBytes)
	if r.U8 {
		if r.RowBytes != per {
			return fmt.Errorf("cuda: U8 rows of %d bytes for %d×%d×%d", r.RowBytes, r.H, r.W, r.C)
		}
		err = in.normalize(src, t.p, hi-lo, r.C, r.H, r.W, r.Mean, r.Std, false, r.Torch, false)
	} else {
		if r.RowBytes != 4*per {
			return fmt.Errorf("cuda: F32 rows of %d bytes for %d×%d×%d", r.RowBytes, r.C, r.H, r.W)
		}
		err = in.b.m.copyDev(t.p, src, (hi-lo)*r.RowBytes)
	}
	if err != nil {
		return err
	}
	return in.b.m.fence()
}

func channel(v []float32, c int, def float32) float32 {
	switch {
	case len(v) == 0:
		return def
	case len(v) == 1:
		return v[0]
	}
	return v[c]
}

func (in *byteInput) Close() {
	in.scale.free()
	in.shift.free()
	if in.pix != 0 {
		in.b.m.free(in.pix)
		in.pix = 0
	}
}
