package train

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Residual is ResNet's block joint: y = ReLU(Main(x) + Shortcut(x)), a nil
// Shortcut being the identity.
type Residual struct {
	Main, Shortcut Layer
	add, gradAdd   AddOp
	relu           ReLUOp
	// gradSum: the block before's ReLU, which adds this block's input
	// gradients and masks the sum in one pass; masked: the block after
	// did this block's ReLU backward so (Sequential's pair).
	gradSum ReLUSumBackwardOp
	masked  bool
}

var _ Layer = (*Residual)(nil)

func (r *Residual) Children() []Layer {
	if r.Shortcut == nil {
		return []Layer{r.Main}
	}
	return []Layer{r.Main, r.Shortcut}
}

// NewResidual joins main and shortcut (nil: identity) on b.
func NewResidual(b Backend, main, shortcut Layer) (*Residual, error) {
	r := &Residual{Main: main, Shortcut: shortcut}
	var err error
	if r.add, err = b.NewAdd(); err != nil {
		return nil, err
	}
	if r.gradAdd, err = b.NewAdd(); err != nil {
		return nil, err
	}
	if r.relu, err = b.NewReLU(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Residual) Forward(x Tensor, training bool) (Tensor, error) {
	if sr, ok := r.relu.(SumReLUBatchNormOp); ok {
		if main, bn := endsInBatchNorm(r.Main); bn != nil {
			return r.forwardIntoBatchNorm(sr, main, bn, x, training)
		}
	}
	m, err := r.Main.Forward(x, training)
	if err != nil {
		return nil, err
	}
	s := x
	if r.Shortcut != nil {
		if s, err = r.Shortcut.Forward(x, training); err != nil {
			return nil, fmt.Errorf("shortcut: %w", err)
		}
	}
	if ar, ok := r.relu.(AddReLUOp); ok {
		return ar.ForwardSum(m, s)
	}
	sum, err := r.add.Forward(m, s)
	if err != nil {
		return nil, err
	}
	return r.relu.Forward(sum)
}

// endsInBatchNorm is main as a Sequential and its last layer when that
// is a BatchNorm2D without Sync; else nil, nil.
func endsInBatchNorm(main Layer) (*Sequential, *BatchNorm2D) {
	s, ok := main.(*Sequential)
	if !ok || len(s.Layers) == 0 {
		return nil, nil
	}
	bn, ok := s.Layers[len(s.Layers)-1].(*BatchNorm2D)
	if !ok || bn.Sync != nil {
		return nil, nil
	}
	return s, bn
}

// forwardIntoBatchNorm is Forward with the block's sum and ReLU folded
// into main's last BatchNorm, bn (SumReLUBatchNormOp): the shortcut
// first, then main up to bn, then bn writing ReLU(BatchNorm + shortcut);
// where the op cannot, bn, then ForwardSum. The same values as Forward's
// order: each op's output depends on its inputs alone.
func (r *Residual) forwardIntoBatchNorm(sr SumReLUBatchNormOp, main *Sequential, bn *BatchNorm2D, x Tensor, training bool) (Tensor, error) {
	s := x
	if r.Shortcut != nil {
		var err error
		if s, err = r.Shortcut.Forward(x, training); err != nil {
			return nil, fmt.Errorf("shortcut: %w", err)
		}
	}
	last := len(main.Layers) - 1
	m, err := main.forwardTo(x, training, last)
	if err != nil {
		return nil, err
	}
	y, ok, err := bn.forwardSum(sr, m, s, training)
	if err != nil || ok {
		if err != nil {
			err = fmt.Errorf("layer %d (%T) forward with the block's sum: %w", last, bn, err)
		}
		return y, err
	}
	if m, err = bn.Forward(m, training); err != nil {
		return nil, fmt.Errorf("layer %d (%T) forward: %w", last, bn, err)
	}
	return sr.ForwardSum(m, s)
}

func (r *Residual) Backward(dy Tensor, needDX bool) (Tensor, error) {
	d := dy
	if !r.masked {
		var err error
		if d, err = r.relu.Backward(dy); err != nil {
			return nil, err
		}
	}
	dm, err := r.Main.Backward(d, true)
	if err != nil {
		return nil, err
	}
	ds := d
	if r.Shortcut != nil {
		if ds, err = r.Shortcut.Backward(d, true); err != nil {
			return nil, fmt.Errorf("shortcut: %w", err)
		}
	}
	if !needDX {
		return nil, nil
	}
	if r.gradSum != nil {
		return r.gradSum.BackwardSum(dm, ds)
	}
	return r.gradAdd.Forward(dm, ds)
}

// pairWith joins r to next, the block right after it (Sequential's pair):
// r's output, next's input, is also rounded for next's first
// convolutions as it is written (LowCopyOp); next's gradient add and r's
// ReLU backward are one pass (ReLUSumBackwardOp), taking next's first
// convolutions' 16-bit input gradients as they are (LowGradSumOp,
// LowGradOp).
func (r *Residual) pairWith(next *Residual) {
	if lc, ok := r.relu.(LowCopyOp); ok && firstConv(next.Main) != nil {
		lc.KeepLowCopy(true)
	}
	rs, ok := r.relu.(ReLUSumBackwardOp)
	if !ok || next.gradSum != nil {
		return
	}
	next.gradSum, r.masked = rs, true
	if ls, ok := rs.(LowGradSumOp); !ok || !ls.SumsLowGrads() {
		return
	}
	for _, l := range []Layer{next.Main, next.Shortcut} {
		if c := firstConv(l); c != nil {
			if lg, ok := c.op.(LowGradOp); ok {
				lg.KeepLowGrad(true)
			}
		}
	}
}

func (r *Residual) Params() []*Param {
	ps := r.Main.Params()
	if r.Shortcut != nil {
		ps = append(ps, r.Shortcut.Params()...)
	}
	return ps
}

func (r *Residual) Buffers() []*Param {
	ps := r.Main.Buffers()
	if r.Shortcut != nil {
		ps = append(ps, r.Shortcut.Buffers()...)
	}
	return ps
}

func (r *Residual) Close() {
	r.Main.Close()
	if r.Shortcut != nil {
		r.Shortcut.Close()
	}
	r.add.Close()
	r.gradAdd.Close()
	r.relu.Close()
}

// ResNetConfig configures NewResNet18.
type ResNetConfig struct {
	InChannels int // 0: 3
	Classes    int // 0: 1000
	// SmallInput replaces the ImageNet stem (7×7 stride-2 convolution and
	// 3×3 stride-2 max pooling) by a 3×3 stride-1 convolution, the usual
	// variant for 28–32 pixel images.
	SmallInput bool
	// Widths of the four stages; nil: 64, 128, 256, 512.
	Widths []int
}

// NewResNet18 builds ResNet-18 as torchvision does (BasicBlocks [2,2,2,2],
// 1×1 stride-2 projection shortcuts, BatchNorm after every convolution,
// adaptive average pooling to 1×1, linear), with torchvision's
// initialisation (convolutions normal with std √(2/fan_out)). Parameters
// are in torchvision's state_dict order.
func NewResNet18(b Backend, cfg ResNetConfig, seed uint64) (*Sequential, error) {
	if cfg.InChannels == 0 {
		cfg.InChannels = 3
	}
	if cfg.Classes == 0 {
		cfg.Classes = 1000
	}
	if len(cfg.Widths) == 0 {
		cfg.Widths = []int{64, 128, 256, 512}
	}
	if len(cfg.Widths) != 4 {
		return nil, fmt.Errorf("resnet18: %d stage widths, want 4", len(cfg.Widths))
	}
	rng := rand.New(rand.NewPCG(seed, 0x7265736e6574))
	net := &Sequential{}
	fail := func(err error) (*Sequential, error) { net.Close(); return nil, err }
	conv := func(name string, in, out, k, stride, pad int) (*Conv2D, error) {
		c, err := NewConv2D(b, name, ConvSpec{In: in, Out: out, Kernel: k, Stride: stride, Pad: pad}, rng)
		if err != nil {
			return nil, err
		}
		std := math.Sqrt(2 / float64(out*k*k))
		for i := range c.W.Value {
			c.W.Value[i] = float32(rng.NormFloat64() * std)
		}
		return c, nil
	}
	w0 := cfg.Widths[0]
	k, s, p := 7, 2, 3
	if cfg.SmallInput {
		k, s, p = 3, 1, 1
	}
	c1, err := conv("conv1", cfg.InChannels, w0, k, s, p)
	if err != nil {
		return fail(err)
	}
	bn1, err := NewBatchNorm2D(b, "bn1", w0)
	if err != nil {
		return fail(err)
	}
	relu, err := NewReLU(b)
	if err != nil {
		return fail(err)
	}
	net.Layers = append(net.Layers, c1, bn1, relu)
	if !cfg.SmallInput {
		mp, err := NewMaxPool2D(b, 3, 2, 1)
		if err != nil {
			return fail(err)
		}
		net.Layers = append(net.Layers, mp)
	}
	in := w0
	for stage, w := range cfg.Widths {
		for blk := range 2 {
			name := fmt.Sprintf("layer%d.%d", stage+1, blk)
			stride := 1
			if stage > 0 && blk == 0 {
				stride = 2
			}
			blkLayers := []Layer{}
			ca, err := conv(name+".conv1", in, w, 3, stride, 1)
			if err != nil {
				return fail(err)
			}
			ba, err := NewBatchNorm2D(b, name+".bn1", w)
			if err != nil {
				return fail(err)
			}
			r, err := NewReLU(b)
			if err != nil {
				return fail(err)
			}
			cb, err := conv(name+".conv2", w, w, 3, 1, 1)
			if err != nil {
				return fail(err)
			}
			bb, err := NewBatchNorm2D(b, name+".bn2", w)
			if err != nil {
				return fail(err)
			}
			blkLayers = append(blkLayers, ca, ba, r, cb, bb)
			var short Layer
			if stride != 1 || in != w {
				cd, err := conv(name+".downsample.0", in, w, 1, stride, 0)
				if err != nil {
					return fail(err)
				}
				bd, err := NewBatchNorm2D(b, name+".downsample.1", w)
				if err != nil {
					return fail(err)
				}
				short = &Sequential{Layers: []Layer{cd, bd}}
			}
			res, err := NewResidual(b, &Sequential{Layers: blkLayers}, short)
			if err != nil {
				return fail(err)
			}
			net.Layers = append(net.Layers, res)
			in = w
		}
	}
	pool, err := NewAdaptiveAvgPool2D(b, 1, 1)
	if err != nil {
		return fail(err)
	}
	fc, err := NewLinear(b, "fc", in, cfg.Classes, rng)
	if err != nil {
		return fail(err)
	}
	net.Layers = append(net.Layers, pool, fc)
	return net, nil
}
