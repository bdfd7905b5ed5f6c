package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Param is a trainable tensor (or, for buffers such as BatchNorm's running
// statistics, a non-trainable one) in plain layout, in Go memory.
type Param struct {
	Name  string
	Shape []int
	Value []float32
	Grad  []float32 // nil for buffers
	// dv, dg are the device tensors of a bound State (nil: the slices
	// are the parameter).
	dv, dg Tensor
}

// Tensors returns the device tensors of the value and gradient while a
// backend's State holds the parameter (Value is then a host mirror, see
// State.Pull), else nils.
func (p *Param) Tensors() (value, grad Tensor) { return p.dv, p.dg }

// bound reports whether the parameters are held by a device State.
func bound(ps ...*Param) bool {
	for _, p := range ps {
		if p != nil && p.dv != nil {
			return true
		}
	}
	return false
}

// valueOf is p's device value, nil for a nil p.
func valueOf(p *Param) Tensor {
	if p == nil {
		return nil
	}
	return p.dv
}

// gradOf is p's device gradient, nil for a nil p.
func gradOf(p *Param) Tensor {
	if p == nil {
		return nil
	}
	return p.dg
}

// errNoDeviceOp reports an op of a ParamStore backend without its device form.
func errNoDeviceOp(op any) error {
	return fmt.Errorf("%T takes no device tensors: %w", op, ErrUnsupported)
}

// newParam makes a parameter of a layer on b: zeroed values (and
// gradients if grad), or on the Shapes backend only its shape.
func newParam(b Backend, name string, grad bool, shape ...int) *Param {
	p := &Param{Name: name, Shape: shape}
	if !allocates(b) {
		return p
	}
	p.Value = make([]float32, numel(shape))
	if grad {
		p.Grad = make([]float32, len(p.Value))
	}
	return p
}

// Layer is one stage of a network.
type Layer interface {
	// Forward computes the layer's output, owned by the layer and valid
	// until its next Forward. training selects batch statistics in
	// BatchNorm and keeps what Backward needs.
	Forward(x Tensor, training bool) (Tensor, error)
	// Backward takes dL/d(output) of the last training Forward, overwrites
	// the gradients of the layer's parameters and returns dL/d(input), or
	// nil when needDX is false.
	Backward(dy Tensor, needDX bool) (Tensor, error)
	// Params lists the trainable parameters, Buffers the non-trainable
	// state (running statistics), both in a fixed order.
	Params() []*Param
	Buffers() []*Param
	// Close releases the layer's backend ops.
	Close()
}

// uniform fills v from U(-bound, bound).
func uniform(v []float32, bound float64, rng *rand.Rand) {
	for i := range v {
		v[i] = float32((rng.Float64()*2 - 1) * bound)
	}
}

// Conv2D is a 2-D convolution with PyTorch's default initialisation
// (weights and bias uniform in ±1/√fan_in).
type Conv2D struct {
	Spec ConvSpec
	W, B *Param // B is nil without bias
	op   ConvOp
}

// NewConv2D makes a convolution on b, initialised from rng.
func NewConv2D(b Backend, name string, s ConvSpec, rng *rand.Rand) (*Conv2D, error) {
	op, err := b.NewConv(s)
	if err != nil {
		return nil, err
	}
	c := &Conv2D{Spec: s, op: op, W: newParam(b, name+".weight", true, s.Out, s.In, s.Kernel, s.Kernel)}
	bound := 1 / math.Sqrt(float64(s.In*s.Kernel*s.Kernel))
	uniform(c.W.Value, bound, rng)
	if s.Bias {
		c.B = newParam(b, name+".bias", true, s.Out)
		uniform(c.B.Value, bound, rng)
	}
	return c, nil
}

func (c *Conv2D) Forward(x Tensor, training bool) (Tensor, error) {
	if bound(c.W) {
		d, ok := c.op.(DeviceConvOp)
		if !ok {
			return nil, errNoDeviceOp(c.op)
		}
		return d.ForwardDevice(x, c.W.dv, valueOf(c.B))
	}
	var b []float32
	if c.B != nil {
		b = c.B.Value
	}
	return c.op.Forward(x, c.W.Value, b)
}

func (c *Conv2D) Backward(dy Tensor, needDX bool) (Tensor, error) {
	if bound(c.W) {
		d, ok := c.op.(DeviceConvOp)
		if !ok {
			return nil, errNoDeviceOp(c.op)
		}
		return d.BackwardDevice(dy, c.W.dv, c.W.dg, gradOf(c.B), needDX)
	}
	var db []float32
	if c.B != nil {
		db = c.B.Grad
	}
	return c.op.Backward(dy, c.W.Value, c.W.Grad, db, needDX)
}

func (c *Conv2D) Params() []*Param {
	if c.B != nil {
		return []*Param{c.W, c.B}
	}
	return []*Param{c.W}
}
func (c *Conv2D) Buffers() []*Param { return nil }
func (c *Conv2D) Close()            { c.op.Close() }

// BatchNorm2D normalises per channel with learnt scale (Gamma, init 1) and
// shift (Beta, init 0), tracking running statistics as PyTorch does:
// running = (1−Momentum)·running + Momentum·batch, the running variance
// being the unbiased one.
type BatchNorm2D struct {
	C                       int
	Momentum                float32
	Gamma, Beta             *Param
	RunningMean, RunningVar *Param
	op                      BatchNormOp
	batchMean, batchVar     []float32
	// Sync, when set, makes training steps use the statistics of the
	// batch spread over all replicas (SyncBN): it sums its argument over
	// the replicas in place. The backend's op must implement
	// SyncBatchNormOp. See SyncBatchNorm.
	Sync   func([]float64) error
	synced bool // the last training Forward was synchronised
}

// NewBatchNorm2D makes a BatchNorm over c channels (eps 1e-5, momentum 0.1).
func NewBatchNorm2D(b Backend, name string, c int) (*BatchNorm2D, error) {
	op, err := b.NewBatchNorm(BatchNormSpec{C: c})
	if err != nil {
		return nil, err
	}
	l := &BatchNorm2D{C: c, Momentum: 0.1, op: op,
		Gamma: newParam(b, name+".weight", true, c), Beta: newParam(b, name+".bias", true, c),
		RunningMean: newParam(b, name+".running_mean", false, c), RunningVar: newParam(b, name+".running_var", false, c),
	}
	if allocates(b) {
		l.batchMean, l.batchVar = make([]float32, c), make([]float32, c)
	}
	for i := range l.Gamma.Value {
		l.Gamma.Value[i], l.RunningVar.Value[i] = 1, 1
	}
	return l, nil
}

func (l *BatchNorm2D) Forward(x Tensor, training bool) (Tensor, error) {
	if bound(l.Gamma) {
		d, ok := l.op.(DeviceBatchNormOp)
		if !ok || l.Sync != nil {
			return nil, errNoDeviceOp(l.op)
		}
		return d.ForwardDevice(x, l.Gamma.dv, l.Beta.dv, l.RunningMean.dv, l.RunningVar.dv, l.Momentum, training)
	}
	if !training {
		return l.op.Forward(x, l.Gamma.Value, l.Beta.Value, l.RunningMean.Value, l.RunningVar.Value, false)
	}
	var (
		y   Tensor
		err error
	)
	n, _, hw := planes(x.Shape())
	cnt := float32(n * hw)
	l.synced = l.Sync != nil
	if l.synced {
		sop, ok := l.op.(SyncBatchNormOp)
		if !ok {
			return nil, fmt.Errorf("batchnorm: %T has no synchronised statistics: %w", l.op, ErrUnsupported)
		}
		var global int
		y, global, err = sop.ForwardSync(x, l.Gamma.Value, l.Beta.Value, l.batchMean, l.batchVar, l.Sync)
		cnt = float32(global)
	} else {
		y, err = l.op.Forward(x, l.Gamma.Value, l.Beta.Value, l.batchMean, l.batchVar, true)
	}
	if err != nil {
		return nil, err
	}
	unbias := cnt / max(cnt-1, 1)
	m := l.Momentum
	for i := range l.C {
		l.RunningMean.Value[i] = (1-m)*l.RunningMean.Value[i] + m*l.batchMean[i]
		l.RunningVar.Value[i] = (1-m)*l.RunningVar.Value[i] + m*l.batchVar[i]*unbias
	}
	return y, nil
}

// forwardSum is Forward with a residual block's sum and ReLU folded in,
// ReLU(Forward(x) + s), by op (SumReLUBatchNormOp), where the parameters
// live on the device; ok false where it cannot (nothing ran).
func (l *BatchNorm2D) forwardSum(op SumReLUBatchNormOp, x, s Tensor, training bool) (y Tensor, ok bool, err error) {
	if !bound(l.Gamma) || l.Sync != nil {
		return nil, false, nil
	}
	return op.ForwardBatchNormSum(l.op, x, s, l.Gamma.dv, l.Beta.dv, l.RunningMean.dv, l.RunningVar.dv, l.Momentum, training)
}

func (l *BatchNorm2D) Backward(dy Tensor, needDX bool) (Tensor, error) {
	if bound(l.Gamma) {
		d, ok := l.op.(DeviceBatchNormOp)
		if !ok {
			return nil, errNoDeviceOp(l.op)
		}
		return d.BackwardDevice(dy, l.Gamma.dv, l.Beta.dv, l.Gamma.dg, l.Beta.dg)
	}
	if l.synced {
		return l.op.(SyncBatchNormOp).BackwardSync(dy, l.Gamma.Value, l.Beta.Value, l.Gamma.Grad, l.Beta.Grad, l.Sync)
	}
	return l.op.Backward(dy, l.Gamma.Value, l.Beta.Value, l.Gamma.Grad, l.Beta.Grad)
}

// SyncBatchNorm sets (or, with nil, clears) the Sync function of every
// BatchNorm2D in net, like torch.nn.SyncBatchNorm.convert_sync_batchnorm,
// and returns how many it set.
func SyncBatchNorm(net Layer, reduce func([]float64) error) int {
	n := 0
	Walk(net, func(l Layer) {
		if bn, ok := l.(*BatchNorm2D); ok {
			bn.Sync = reduce
			n++
		}
	})
	return n
}

// Container is a layer made of other layers.
type Container interface {
	Children() []Layer
}

// Walk calls fn for net and, depth first in forward order, every layer
// inside it.
func Walk(net Layer, fn func(Layer)) {
	if net == nil {
		return
	}
	fn(net)
	if c, ok := net.(Container); ok {
		for _, l := range c.Children() {
			Walk(l, fn)
		}
	}
}

func (l *BatchNorm2D) Params() []*Param  { return []*Param{l.Gamma, l.Beta} }
func (l *BatchNorm2D) Buffers() []*Param { return []*Param{l.RunningMean, l.RunningVar} }
func (l *BatchNorm2D) Close()            { l.op.Close() }

// ReLU is max(x, 0).
type ReLU struct {
	op ReLUOp
	// folded: the BatchNorm before it applies it (ReLUOutputBatchNormOp,
	// Sequential.pair): Forward and Backward pass their tensor through.
	folded bool
}

// NewReLU makes a ReLU on b.
func NewReLU(b Backend) (*ReLU, error) {
	op, err := b.NewReLU()
	if err != nil {
		return nil, err
	}
	return &ReLU{op: op}, nil
}

func (r *ReLU) Forward(x Tensor, training bool) (Tensor, error) {
	if r.folded {
		return x, nil
	}
	return r.op.Forward(x)
}

func (r *ReLU) Backward(dy Tensor, needDX bool) (Tensor, error) {
	if r.folded {
		return dy, nil
	}
	return r.op.Backward(dy)
}

func (r *ReLU) Params() []*Param  { return nil }
func (r *ReLU) Buffers() []*Param { return nil }
func (r *ReLU) Close()            { r.op.Close() }

// Pool2D is max or average pooling over fixed windows.
type Pool2D struct {
	Spec PoolSpec
	op   PoolOp
}

// NewMaxPool2D makes max pooling with a k×k window.
func NewMaxPool2D(b Backend, k, stride, pad int) (*Pool2D, error) {
	return newPool(b, PoolSpec{Kind: MaxPool, KernelH: k, KernelW: k, StrideH: stride, StrideW: stride, PadH: pad, PadW: pad})
}

// NewAvgPool2D makes average pooling with a k×k window, padding counted in
// the divisor (PyTorch's default).
func NewAvgPool2D(b Backend, k, stride, pad int) (*Pool2D, error) {
	return newPool(b, PoolSpec{Kind: AvgPool, KernelH: k, KernelW: k, StrideH: stride, StrideW: stride, PadH: pad, PadW: pad})
}

func newPool(b Backend, s PoolSpec) (*Pool2D, error) {
	op, err := b.NewPool(s)
	if err != nil {
		return nil, err
	}
	return &Pool2D{Spec: s, op: op}, nil
}

func (p *Pool2D) Forward(x Tensor, training bool) (Tensor, error) { return p.op.Forward(x, training) }
func (p *Pool2D) Backward(dy Tensor, needDX bool) (Tensor, error) { return p.op.Backward(dy) }
func (p *Pool2D) Params() []*Param                                { return nil }
func (p *Pool2D) Buffers() []*Param                               { return nil }
func (p *Pool2D) Close()                                          { p.op.Close() }

// ErrUnsupported marks a shape or option a layer or backend does not handle.
var ErrUnsupported = errors.New("unsupported")

// AdaptiveAvgPool2D averages to a fixed output size (OutH×OutW). Like
// torch.nn.AdaptiveAvgPool2d when the input size is a multiple of the
// output size (windows of H/OutH × W/OutW); other sizes are not supported.
type AdaptiveAvgPool2D struct {
	OutH, OutW int
	b          Backend
	inH, inW   int
	op         PoolOp
}

// NewAdaptiveAvgPool2D makes an adaptive average pool to oh×ow.
func NewAdaptiveAvgPool2D(b Backend, oh, ow int) (*AdaptiveAvgPool2D, error) {
	if oh <= 0 || ow <= 0 {
		return nil, fmt.Errorf("adaptive pool %dx%d: invalid", oh, ow)
	}
	return &AdaptiveAvgPool2D{OutH: oh, OutW: ow, b: b}, nil
}

func (p *AdaptiveAvgPool2D) Forward(x Tensor, training bool) (Tensor, error) {
	s := x.Shape()
	if len(s) != 4 {
		return nil, fmt.Errorf("adaptive pool: input %v is not N×C×H×W", s)
	}
	h, w := s[2], s[3]
	if h%p.OutH != 0 || w%p.OutW != 0 {
		return nil, fmt.Errorf("adaptive pool %dx%d of %dx%d: %w (input must be a multiple of the output)", p.OutH, p.OutW, h, w, ErrUnsupported)
	}
	if p.op == nil || h != p.inH || w != p.inW {
		if p.op != nil {
			p.op.Close()
		}
		kh, kw := h/p.OutH, w/p.OutW
		op, err := p.b.NewPool(PoolSpec{Kind: AvgPool, KernelH: kh, KernelW: kw, StrideH: kh, StrideW: kw})
		if err != nil {
			return nil, err
		}
		p.op, p.inH, p.inW = op, h, w
	}
	return p.op.Forward(x, training)
}

func (p *AdaptiveAvgPool2D) Backward(dy Tensor, needDX bool) (Tensor, error) {
	if p.op == nil {
		return nil, fmt.Errorf("adaptive pool: Backward before Forward")
	}
	return p.op.Backward(dy)
}
func (p *AdaptiveAvgPool2D) Params() []*Param  { return nil }
func (p *AdaptiveAvgPool2D) Buffers() []*Param { return nil }
func (p *AdaptiveAvgPool2D) Close() {
	if p.op != nil {
		p.op.Close()
		p.op = nil
	}
}

// Linear is a fully connected layer with bias; it flattens its input per
// sample. Initialised like torch.nn.Linear (uniform in ±1/√in).
type Linear struct {
	Spec LinearSpec
	W, B *Param
	op   LinearOp
}

// NewLinear makes a fully connected layer on b.
func NewLinear(b Backend, name string, in, out int, rng *rand.Rand) (*Linear, error) {
	op, err := b.NewLinear(LinearSpec{In: in, Out: out})
	if err != nil {
		return nil, err
	}
	l := &Linear{Spec: LinearSpec{In: in, Out: out}, op: op,
		W: newParam(b, name+".weight", true, out, in), B: newParam(b, name+".bias", true, out)}
	bound := 1 / math.Sqrt(float64(in))
	uniform(l.W.Value, bound, rng)
	uniform(l.B.Value, bound, rng)
	return l, nil
}

func (l *Linear) Forward(x Tensor, training bool) (Tensor, error) {
	if bound(l.W) {
		d, ok := l.op.(DeviceLinearOp)
		if !ok {
			return nil, errNoDeviceOp(l.op)
		}
		return d.ForwardDevice(x, l.W.dv, l.B.dv)
	}
	return l.op.Forward(x, l.W.Value, l.B.Value)
}
func (l *Linear) Backward(dy Tensor, needDX bool) (Tensor, error) {
	if bound(l.W) {
		d, ok := l.op.(DeviceLinearOp)
		if !ok {
			return nil, errNoDeviceOp(l.op)
		}
		return d.BackwardDevice(dy, l.W.dv, l.W.dg, l.B.dg, needDX)
	}
	return l.op.Backward(dy, l.W.Value, l.W.Grad, l.B.Grad, needDX)
}
func (l *Linear) Params() []*Param  { return []*Param{l.W, l.B} }
func (l *Linear) Buffers() []*Param { return nil }
func (l *Linear) Close()            { l.op.Close() }

// Sequential chains layers.
type Sequential struct {
	Layers []Layer
	// GradsReady, when set, is called during Backward as soon as a layer's
	// parameter gradients are final, with those parameters (data-parallel
	// training starts their all-reduce while the backward pass goes on).
	GradsReady func([]*Param)
	fused      bool // pair ran
}

// pair joins a Conv2D, a BatchNorm2D (without Sync) and a ReLU right
// after each other, and two Residuals, where the ops can, so the activations between them are
// passed over fewer times and the bits stay the same:
//   - a convolution's fused ReLU goes to the BatchNorm after it
//     (ReLUDeferringConvOp, ReLUInputBatchNormOp): the BatchNorm reads
//     ReLU(x) as it reads x, and its backward masks as the ReLU's would;
//   - a ReLU layer after a BatchNorm goes into it (ReLUOutputBatchNormOp):
//     the BatchNorm writes ReLU(y), its backward masks dy as the ReLU's
//     would, and the ReLU layer passes its tensor through;
//   - under bf16 and fp16 the 16-bit values go from one to the other as
//     they are (LowOutputOp, LowInputOp), a convolution's output to the
//     BatchNorm after it and a BatchNorm's (and its folded ReLU's) to the
//     convolution after it: no cast between them either way;
//   - two residual blocks: the second's gradient add (its main path's and
//     shortcut's input gradients) and the first's ReLU backward in one
//     pass (ReLUSumBackwardOp), the gradients of the second's first
//     convolutions added as those wrote them in 16 bits (LowGradSumOp,
//     LowGradOp), and the first's output rounded for those convolutions
//     as it is written (LowCopyOp).
//
// The cuda backend's ops can; others are left as they are. It runs once,
// at the first Forward.
func (s *Sequential) pair() {
	s.fused = true
	for i := 0; i+1 < len(s.Layers); i++ {
		a, b := s.Layers[i], s.Layers[i+1]
		var from, to any
		switch x := a.(type) {
		case *Residual:
			if next, ok := b.(*Residual); ok {
				x.pairWith(next)
			}
			continue
		case *Conv2D:
			bn, ok := b.(*BatchNorm2D)
			if !ok || bn.Sync != nil {
				continue
			}
			if x.Spec.ReLU {
				dc, ok := x.op.(ReLUDeferringConvOp)
				rb, ok2 := bn.op.(ReLUInputBatchNormOp)
				if ok && ok2 {
					dc.DeferReLU(true)
					rb.ReLUInput(true)
				}
			}
			from, to = x.op, bn.op
		case *BatchNorm2D:
			if x.Sync != nil {
				continue
			}
			if r, ok := b.(*ReLU); ok {
				ro, ok := x.op.(ReLUOutputBatchNormOp)
				if !ok {
					continue
				}
				ro.ReLUOutput(true)
				r.folded = true
				if i+2 == len(s.Layers) {
					continue
				}
				b = s.Layers[i+2]
			}
			conv, ok := b.(*Conv2D)
			if !ok {
				continue
			}
			from, to = x.op, conv.op
		default:
			continue
		}
		lo, ok := from.(LowOutputOp)
		li, ok2 := to.(LowInputOp)
		if ok && ok2 {
			lo.KeepLowOutput(true)
			li.LowInput(true)
		}
	}
}

// firstConv is l when it is a Conv2D, or the first layer of l's
// Sequentials when that is one; else nil: the layer whose input gradient
// l's backward returns.
func firstConv(l Layer) *Conv2D {
	for {
		switch x := l.(type) {
		case *Conv2D:
			return x
		case *Sequential:
			if len(x.Layers) == 0 {
				return nil
			}
			l = x.Layers[0]
		default:
			return nil
		}
	}
}

func (s *Sequential) Children() []Layer { return s.Layers }

var _ Layer = (*Sequential)(nil)

func (s *Sequential) Forward(x Tensor, training bool) (Tensor, error) {
	return s.forwardTo(x, training, len(s.Layers))
}

// forwardTo is Forward through the first end layers.
func (s *Sequential) forwardTo(x Tensor, training bool, end int) (Tensor, error) {
	var err error
	if !s.fused {
		s.pair()
	}
	for i, l := range s.Layers[:end] {
		if x, err = l.Forward(x, training); err != nil {
			return nil, fmt.Errorf("layer %d (%T) forward: %w", i, l, err)
		}
	}
	return x, nil
}

func (s *Sequential) Backward(dy Tensor, needDX bool) (Tensor, error) {
	var err error
	for i := len(s.Layers) - 1; i >= 0; i-- {
		need := needDX || i > 0
		if dy, err = s.Layers[i].Backward(dy, need); err != nil {
			return nil, fmt.Errorf("layer %d (%T) backward: %w", i, s.Layers[i], err)
		}
		if s.GradsReady != nil {
			if ps := s.Layers[i].Params(); len(ps) > 0 {
				s.GradsReady(ps)
			}
		}
	}
	return dy, nil
}

func (s *Sequential) Params() []*Param {
	var ps []*Param
	for _, l := range s.Layers {
		ps = append(ps, l.Params()...)
	}
	return ps
}

func (s *Sequential) Buffers() []*Param {
	var ps []*Param
	for _, l := range s.Layers {
		ps = append(ps, l.Buffers()...)
	}
	return ps
}

func (s *Sequential) Close() {
	for _, l := range s.Layers {
		l.Close()
	}
}
