package train

import (
	"errors"
	"fmt"
	"math"
)

// DeviceReference is the reference backend as a device backend: it
// implements every optional interface of device-resident training
// (ParamStore, LossBackend, ByteInputBackend, Syncer, DeviceNamer,
// DeviceMemory; its ops DeviceConvOp, DeviceLinearOp, DeviceBatchNormOp)
// natively, with tensors of its own that are not the Params' slices.
// It computes exactly what Reference computes on the host path, so a
// run on either gives the same bits: it is how the device path is
// tested without a device, and the model a GPU backend follows. It is
// not registered; make it with NewDeviceReference.
type DeviceReference struct {
	*Reference
	// Budget is what MemoryBudget reports (0: 1 GiB).
	Budget int64
	// Syncs counts the calls that wait for the device: Sync, and the
	// reads of a loss's sums, of the finite checks and of a Pull.
	Syncs int
	// LossReads counts the reads of a loss's sums (LossOp.Sums).
	LossReads int
	// ScalerReads counts the reads of a GradScaler kept on the device
	// (ScalerState.PullScaler), and Unscales the finite checks read back
	// by State.Unscale (the host's GradScaler: one a step).
	ScalerReads, Unscales int
}

var (
	_ Backend          = (*DeviceReference)(nil)
	_ ParamStore       = (*DeviceReference)(nil)
	_ LossBackend      = (*DeviceReference)(nil)
	_ ByteInputBackend = (*DeviceReference)(nil)
	_ Syncer           = (*DeviceReference)(nil)
	_ DeviceNamer      = (*DeviceReference)(nil)
	_ DeviceMemory     = (*DeviceReference)(nil)
	_ ScalerState      = (*refState)(nil)
	_ ScaledLossOp     = (*refLoss)(nil)

	_ DeviceConvOp      = (*refConv)(nil)
	_ DeviceLinearOp    = (*refLinear)(nil)
	_ DeviceBatchNormOp = (*refBN)(nil)
)

// NewDeviceReference returns the reference backend with device-resident
// state.
func NewDeviceReference(o BackendOptions) *DeviceReference {
	return &DeviceReference{Reference: NewReference(o)}
}

// Name is the backend's name; it is not registered under it.
func (r *DeviceReference) Name() string { return "reference-device" }

// Device implements DeviceNamer.
func (r *DeviceReference) Device() string { return "reference-device" }

// Sync implements Syncer.
func (r *DeviceReference) Sync() error { r.Syncs++; return nil }

// MemoryBudget implements DeviceMemory.
func (r *DeviceReference) MemoryBudget() (int64, error) {
	if r.Budget == 0 {
		return 1 << 30, nil
	}
	return r.Budget, nil
}

// ---- state ----

// NewState implements ParamStore.
func (r *DeviceReference) NewState(params, buffers []*Param, opt *SGD, e *EMA) (State, error) {
	s := &refState{r: r, params: params, all: append(params[:len(params):len(params)], buffers...)}
	for _, p := range s.all {
		v := &refTensor{shape: []int{len(p.Value)}, data: make([]float32, len(p.Value))}
		var g *refTensor
		if p.Grad != nil {
			g = &refTensor{shape: []int{len(p.Grad)}, data: make([]float32, len(p.Grad))}
		}
		s.vals, s.grads = append(s.vals, v), append(s.grads, g)
	}
	if err := s.Push(opt, e); err != nil {
		return nil, err
	}
	return s, nil
}

// refState is State in the DeviceReference's own tensors.
type refState struct {
	r           *DeviceReference
	params, all []*Param
	vals, grads []*refTensor // by all; grads nil for buffers
	vel         [][]float32  // by params; nil before the first step
	ema         [][]float32  // by all; nil before the first update
	scratch     []*refTensor // by params: ZeroGrad's, made on first use
	// sc is the GradScaler on the device (PushScaler's copy; nil before),
	// found the flag of the last UnscaleScaled.
	sc    *GradScaler
	found bool
}

var _ GradAccumulator = (*refState)(nil)

// ScratchGrad implements GradAccumulator.
func (s *refState) ScratchGrad(i int) (Tensor, error) {
	if i < 0 || i >= len(s.params) {
		return nil, fmt.Errorf("reference device: no param %d of %d", i, len(s.params))
	}
	if s.scratch == nil {
		s.scratch = make([]*refTensor, len(s.params))
	}
	if s.scratch[i] == nil {
		n := len(s.grads[i].data)
		s.scratch[i] = &refTensor{shape: []int{n}, data: make([]float32, n)}
	}
	return s.scratch[i], nil
}

// ZeroGrads implements GradAccumulator.
func (s *refState) ZeroGrads() error {
	for i := range s.params {
		clear(s.grads[i].data)
	}
	return nil
}

// AccumulateGrads implements GradAccumulator: grad += scratch, as the
// trainer's host path adds its slices.
func (s *refState) AccumulateGrads() error {
	for i := range s.params {
		if s.scratch == nil || s.scratch[i] == nil {
			return fmt.Errorf("reference device: %s has no scratch gradient", s.params[i].Name)
		}
		acc := s.grads[i].data
		for j, g := range s.scratch[i].data {
			acc[j] += g
		}
	}
	return nil
}

func (s *refState) Tensors(i int) (Tensor, Tensor) {
	if s.grads[i] == nil {
		return s.vals[i], nil
	}
	return s.vals[i], s.grads[i]
}

func (s *refState) Unscale(inv float32) (bool, error) {
	s.r.Syncs++ // the flag is read back
	s.r.Unscales++
	return s.unscale(inv), nil
}

// unscale multiplies every gradient by inv and reports whether all of
// them are finite (the GradScaler's unscale).
func (s *refState) unscale(inv float32) bool {
	finite := true
	for i := range s.params {
		gs := s.grads[i].data
		for j, g := range gs {
			g *= inv
			if math.IsNaN(float64(g)) || math.IsInf(float64(g), 0) {
				finite = false
			}
			gs[j] = g
		}
	}
	return finite
}

// PushScaler implements ScalerState: the state keeps a copy.
func (s *refState) PushScaler(g *GradScaler) error {
	c := *g
	s.sc = &c
	return nil
}

// PullScaler implements ScalerState: the copy's scale and counts, read
// back.
func (s *refState) PullScaler(g *GradScaler) error {
	if s.sc == nil {
		return errors.New("reference device: no GradScaler pushed")
	}
	s.r.Syncs++
	s.r.ScalerReads++
	g.Scale, g.Growth, g.Skipped = s.sc.Scale, s.sc.Growth, s.sc.Skipped
	return nil
}

// UnscaleScaled implements ScalerState: the flag stays in the state.
func (s *refState) UnscaleScaled() error {
	if s.sc == nil {
		return errors.New("reference device: no GradScaler pushed")
	}
	s.found = !s.unscale(float32(1 / s.sc.Scale))
	return nil
}

// SGDStepScaled implements ScalerState: SGDStep unless the flag is set,
// then the copy's update.
func (s *refState) SGDStepScaled(o *SGD, lr float64) error {
	if s.sc == nil {
		return errors.New("reference device: no GradScaler pushed")
	}
	if !s.found {
		if err := s.SGDStep(o, lr); err != nil {
			return err
		}
	}
	s.sc.Update(!s.found)
	return nil
}

// SGDStep is SGD.Step fused into one pass per parameter: each element's
// gradient, momentum and weight are read and written once, with the
// expressions of SGD.Step in their order (so the same bits).
func (s *refState) SGDStep(o *SGD, lr float64) error {
	first := o.Momentum != 0 && s.vel == nil
	if first {
		s.vel = make([][]float32, len(s.params))
		for i := range s.params {
			s.vel[i] = make([]float32, len(s.vals[i].data))
		}
	}
	m, wd, lr32 := o.Momentum, o.WeightDecay, float32(lr)
	for i := range s.params {
		w, gs := s.vals[i].data, s.grads[i].data
		if m == 0 {
			for j, g := range gs {
				w[j] -= float32(lr) * (g + wd*w[j])
			}
			continue
		}
		v := s.vel[i]
		for j, g := range gs {
			if first {
				v[j] = g + wd*w[j]
			} else {
				v[j] = m*v[j] + g + wd*w[j]
			}
			if o.Nesterov {
				gd := g + wd*w[j]
				w[j] -= lr32 * (gd + m*v[j])
			} else {
				w[j] -= lr32 * v[j]
			}
		}
	}
	return nil
}

func (s *refState) NonFinite(values bool) ([]int, error) {
	s.r.Syncs++
	var bad []int
	for i := range s.params {
		t := s.grads[i]
		if values {
			t = s.vals[i]
		}
		if !finite32(t.data) {
			bad = append(bad, i)
		}
	}
	return bad, nil
}

func (s *refState) EMAUpdate(decay float64, first bool) error {
	if first || s.ema == nil {
		s.ema = make([][]float32, len(s.all))
		for i, v := range s.vals {
			s.ema[i] = append([]float32(nil), v.data...)
		}
		return nil
	}
	d, r := float32(decay), float32(1-decay)
	for i, v := range s.vals {
		avg := s.ema[i]
		for j, x := range v.data {
			avg[j] = d*avg[j] + r*x
		}
	}
	return nil
}

func (s *refState) EMASwap() error {
	if s.ema == nil {
		return errors.New("reference device: EMA swap before an update")
	}
	for i, v := range s.vals {
		s.ema[i], v.data = v.data, s.ema[i]
	}
	return nil
}

func (s *refState) Pull(opt *SGD, e *EMA) error {
	s.r.Syncs++
	for i, p := range s.all {
		copy(p.Value, s.vals[i].data)
	}
	if s.vel != nil && opt != nil {
		if opt.Velocity == nil {
			opt.Velocity = make([][]float32, len(s.vel))
		}
		for i, v := range s.vel {
			opt.Velocity[i] = append(opt.Velocity[i][:0], v...)
		}
	}
	if s.ema != nil && e != nil {
		if e.Values == nil {
			e.Values = make([][]float32, len(s.ema))
		}
		for i, v := range s.ema {
			e.Values[i] = append(e.Values[i][:0], v...)
		}
	}
	return nil
}

func (s *refState) Push(opt *SGD, e *EMA) error {
	for i, p := range s.all {
		if len(p.Value) != len(s.vals[i].data) {
			return fmt.Errorf("reference device: %s has %d values, the state %d", p.Name, len(p.Value), len(s.vals[i].data))
		}
		copy(s.vals[i].data, p.Value)
	}
	s.vel, s.ema = nil, nil
	if opt != nil && opt.Velocity != nil {
		for _, v := range opt.Velocity {
			s.vel = append(s.vel, append([]float32(nil), v...))
		}
	}
	if e != nil && e.Values != nil {
		for _, v := range e.Values {
			s.ema = append(s.ema, append([]float32(nil), v...))
		}
	}
	return nil
}

func (s *refState) Release() { s.vals, s.grads, s.vel, s.ema, s.scratch = nil, nil, nil, nil, nil }

// ---- loss ----

// NewLoss implements LossBackend: the sums stay in the op until Sums.
func (r *DeviceReference) NewLoss(s LossSpec) (LossOp, error) {
	ce := NewCrossEntropy(r)
	ce.LabelSmoothing = s.LabelSmoothing
	return &refLoss{r: r, hostLoss: hostLoss{ce: ce}}, nil
}

type refLoss struct {
	r *DeviceReference
	hostLoss
}

// ForwardScaled implements ScaledLossOp: Forward with share of the scale
// of ss, a state of the same backend.
func (l *refLoss) ForwardScaled(logits Tensor, labels []int, ss ScalerState, share ScaleShare) (Tensor, error) {
	st, ok := ss.(*refState)
	if !ok || st.r != l.r || st.sc == nil {
		return nil, fmt.Errorf("reference device: loss scaled by %T, not a state of this backend with a GradScaler", ss)
	}
	return l.Forward(logits, labels, share.Of(st.sc.Scale))
}

func (l *refLoss) Sums() (LossSums, error) {
	l.r.Syncs++
	l.r.LossReads++
	return l.hostLoss.Sums()
}

// ---- input ----

// NewByteInput implements ByteInputBackend: it writes into the tensor's
// memory directly.
func (r *DeviceReference) NewByteInput() (ByteInputOp, error) { return refByteInput{}, nil }

type refByteInput struct{}

func (refByteInput) Normalize(dst Tensor, b ByteBatch) error {
	t, err := asRef(dst, 4)
	if err != nil {
		return err
	}
	if t.shape[0] != b.N || t.shape[1] != b.C || t.shape[2] != b.H || t.shape[3] != b.W {
		return fmt.Errorf("reference device: byte batch %d×%d×%d×%d into %v", b.N, b.H, b.W, b.C, t.shape)
	}
	return NormalizeHWC(t.data, b)
}

func (refByteInput) Close() {}

// ---- ops with tensor weights ----

// data is the values of a reference tensor, nil for a nil t.
func data(t Tensor) ([]float32, error) {
	if t == nil {
		return nil, nil
	}
	r, err := asRef(t)
	if err != nil {
		return nil, err
	}
	return r.data, nil
}

// datas is data of each of ts.
func datas(ts ...Tensor) ([][]float32, error) {
	out := make([][]float32, len(ts))
	for i, t := range ts {
		d, err := data(t)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

func (c *refConv) ForwardDevice(x, w, b Tensor) (Tensor, error) {
	d, err := datas(w, b)
	if err != nil {
		return nil, err
	}
	return c.Forward(x, d[0], d[1])
}

func (c *refConv) BackwardDevice(dy, w, dw, db Tensor, needDX bool) (Tensor, error) {
	d, err := datas(w, dw, db)
	if err != nil {
		return nil, err
	}
	return c.Backward(dy, d[0], d[1], d[2], needDX)
}

func (l *refLinear) ForwardDevice(x, w, b Tensor) (Tensor, error) {
	d, err := datas(w, b)
	if err != nil {
		return nil, err
	}
	return l.Forward(x, d[0], d[1])
}

func (l *refLinear) BackwardDevice(dy, w, dw, db Tensor, needDX bool) (Tensor, error) {
	d, err := datas(w, dw, db)
	if err != nil {
		return nil, err
	}
	return l.Backward(dy, d[0], d[1], d[2], needDX)
}

// ForwardDevice normalises x and, training, updates the running
// statistics as BatchNorm2D does on the host (float32, the unbiased
// variance).
func (b *refBN) ForwardDevice(x, gamma, beta, runMean, runVar Tensor, momentum float32, training bool) (Tensor, error) {
	d, err := datas(gamma, beta, runMean, runVar)
	if err != nil {
		return nil, err
	}
	if !training {
		return b.Forward(x, d[0], d[1], d[2], d[3], false)
	}
	if len(b.batchMean) != b.s.C {
		b.batchMean, b.batchVar = make([]float32, b.s.C), make([]float32, b.s.C)
	}
	y, err := b.Forward(x, d[0], d[1], b.batchMean, b.batchVar, true)
	if err != nil {
		return nil, err
	}
	n, _, hw := planes(x.Shape())
	cnt := float32(n * hw)
	unbias := cnt / max(cnt-1, 1)
	m, rm, rv := momentum, d[2], d[3]
	for i := range b.s.C {
		rm[i] = (1-m)*rm[i] + m*b.batchMean[i]
		rv[i] = (1-m)*rv[i] + m*b.batchVar[i]*unbias
	}
	return y, nil
}

func (b *refBN) BackwardDevice(dy, gamma, beta, dgamma, dbeta Tensor) (Tensor, error) {
	d, err := datas(gamma, beta, dgamma, dbeta)
	if err != nil {
		return nil, err
	}
	return b.Backward(dy, d[0], d[1], d[2], d[3])
}
