package cuda

import (
	"fmt"
	"slices"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
)

// The layers' ops. Each owns its outputs (reused while the shape holds)
// and, for the host paths that take weights as slices, device copies of
// them; Close frees both.

// ---- convolution: cuDNN (or the twin's loops), then bias_act ----

type convOp struct {
	b          *Backend
	s          train.ConvSpec
	shape      convShape
	x          *tensor // the input of the last Forward
	out        *tensor // its output: y, or yl
	y, dx, dym *tensor
	yl         *tensor // the 16-bit output handed on (lowOut)
	dxl        *tensor // the 16-bit input gradient handed back (a 16-bit x)
	xin        uint64  // the 16-bit input of the last Forward: xh, or a 16-bit x
	hw, hb     *tensor // host path: weights and bias
	hdw, hdb   *tensor // host path: their gradients
	// bf16/fp16: the 16-bit input (kept for backward filter), weights
	// (host path), output, output gradient and the gradients cuDNN
	// writes; dyr is the output gradient rounded, in float32, for the
	// bias gradient.
	xh, wh, yh, dyh, dxh, dwh buf16
	dyr                       *tensor
	// deferReLU: the fused ReLU is the next op's (train.Sequential's
	// pair): Forward returns the values before it, Backward takes a
	// gradient it already masked.
	deferReLU bool
	// win: the 16-bit weights the last Forward used, of a State's values
	// at generation wgen (the backward's too while they are unchanged:
	// under ChannelsLast a cast each way fewer).
	win, wgen uint64
	wst       *state
	// lowOut: the BatchNorm after it reads the 16-bit output as it is
	// (train.LowOutputOp); taken under bf16 and fp16 (channels-last too,
	// as cuDNN wrote it), when no bias or ReLU is left to add in float32.
	// lowIn: the input
	// may be the BatchNorm before it's 16-bit output (train.LowInputOp).
	lowOut, lowIn bool
	// lowGrad: the input gradient goes back in 16 bits as cuDNN wrote
	// it, a float32 input's too (train.LowGradOp: a residual block's
	// first convolutions, their gradients summed by the block before's
	// ReLU as they are).
	lowGrad bool
}

// KeepLowGrad hands the input gradient back in 16 bits as cuDNN wrote it
// (train.LowGradOp).
func (c *convOp) KeepLowGrad(on bool) { c.lowGrad = on }

// KeepLowOutput hands the convolution's 16-bit output to the BatchNorm
// after it without the cast to float32, and takes its gradient back in
// 16 bits (train.LowOutputOp).
func (c *convOp) KeepLowOutput(on bool) { c.lowOut = on }

// LowInput lets the convolution take the BatchNorm before it's 16-bit
// output as its 16-bit operand, and hand its input gradient back as
// cuDNN wrote it (train.LowInputOp).
func (c *convOp) LowInput(on bool) { c.lowIn = on }

// input16 is the convolution's 16-bit operand for input x: x itself
// when it is 16-bit, the 16-bit copy written with it (tensor.lowCopy),
// else x cast into xh.
func (c *convOp) input16(x *tensor) (uint64, error) {
	if x.low {
		return x.p, nil
	}
	if x.lowCopy != nil {
		return x.lowCopy.p, nil
	}
	n, ci, hw := planes(x.shape)
	return c.b.to16(&c.xh, x.p, n, ci, hw)
}

// handsLow reports whether a Forward with bias bp hands its output on in
// 16 bits: the backend's precision is 16-bit and nothing is left to do
// in float32. Under ChannelsLast the values stay channels-last: the
// BatchNorm reads them so, and writes channels-last where it hands its
// output to a convolution too, float32 channels-first where it does not
// (kernels.BNLaunches).
func (c *convOp) handsLow(bp uint64) bool {
	return c.lowOut && c.b.reduced() && bp == 0 && !c.relu() && !c.b.noLowHandOff
}

// DeferReLU leaves the convolution's fused ReLU to the BatchNorm after it
// (train.ReLUDeferringConvOp).
func (c *convOp) DeferReLU(on bool) { c.deferReLU = on }

// relu reports whether the convolution applies its ReLU itself.
func (c *convOp) relu() bool { return c.s.ReLU && !c.deferReLU }

func (b *Backend) NewConv(s train.ConvSpec) (train.ConvOp, error) {
	if s.In <= 0 || s.Out <= 0 || s.Kernel <= 0 || s.Pad < 0 || s.Stride < 0 {
		return nil, fmt.Errorf("cuda: conv %+v: invalid", s)
	}
	return &convOp{b: b, s: s}, nil
}

func (c *convOp) Close() {
	c.shape.release()
	for _, t := range []*tensor{c.y, c.yl, c.dx, c.dxl, c.dym, c.hw, c.hb, c.hdw, c.hdb, c.dyr} {
		t.free()
	}
	for _, h := range []*buf16{&c.xh, &c.wh, &c.yh, &c.dyh, &c.dxh, &c.dwh} {
		c.b.free16(h)
	}
	*c = convOp{b: c.b, s: c.s, deferReLU: c.deferReLU, lowOut: c.lowOut, lowIn: c.lowIn, lowGrad: c.lowGrad}
}

func (c *convOp) ForwardDevice(xt, wt, bt train.Tensor) (train.Tensor, error) {
	x, err := asAny(xt, 4)
	if err != nil {
		return nil, err
	}
	if x.low && (!c.lowIn || !c.b.reduced()) {
		return nil, fmt.Errorf("cuda: conv: a 16-bit input %v without LowInput", x.shape)
	}
	s := c.s
	if x.shape[1] != s.In {
		return nil, fmt.Errorf("cuda: conv: input %v has %d channels, want %d", x.shape, x.shape[1], s.In)
	}
	n, h, w, st := x.shape[0], x.shape[2], x.shape[3], max(s.Stride, 1)
	oh, ow := train.ConvOut(h, s.Kernel, st, s.Pad), train.ConvOut(w, s.Kernel, st, s.Pad)
	if oh <= 0 || ow <= 0 {
		return nil, fmt.Errorf("cuda: conv: input %v too small for kernel %d", x.shape, s.Kernel)
	}
	wp, err := ptrOf("conv weights", wt, s.Out*s.In*s.Kernel*s.Kernel)
	if err != nil {
		return nil, err
	}
	bp, err := ptrOf("conv bias", bt, s.Out)
	if err != nil {
		return nil, err
	}
	want := convShape{N: n, C: s.In, H: h, W: w, K: s.Out, R: s.Kernel, Pad: s.Pad, Stride: st, OH: oh, OW: ow, Dtype: c.b.low, NHWC: c.b.nhwc}
	if c.shape.N != n || c.shape.H != h || c.shape.W != w {
		c.shape.release()
		c.shape = want
	}
	if c.handsLow(bp) {
		// cuDNN's 16-bit output is the result: the BatchNorm reads it.
		if err := c.b.ensureLow(&c.yl, n, s.Out, oh, ow); err != nil {
			return nil, err
		}
		xh, err := c.input16(x)
		if err != nil {
			return nil, err
		}
		wh, err := c.weights(wt, wp, true)
		if err != nil {
			return nil, err
		}
		if err := c.b.m.conv(&c.shape, convFwd, xh, wh, c.yl.p); err != nil {
			return nil, err
		}
		c.x, c.out, c.xin = x, c.yl, xh
		return c.yl, nil
	}
	if err := c.b.ensure(&c.y, n, s.Out, oh, ow); err != nil {
		return nil, err
	}
	if c.b.reduced() {
		// 16-bit x and w, a 16-bit y cast back to float32 for the ops
		// after it (channels-last around cuDNN under ChannelsLast).
		xh, err := c.input16(x)
		if err != nil {
			return nil, err
		}
		c.xin = xh
		wh, err := c.weights(wt, wp, true)
		if err != nil {
			return nil, err
		}
		if err := c.b.grow16(&c.yh, c.y.n); err != nil {
			return nil, err
		}
		if err := c.b.m.conv(&c.shape, convFwd, xh, wh, c.yh.p); err != nil {
			return nil, err
		}
		if err := c.b.from16(c.y.p, c.yh.p, n, s.Out, oh*ow); err != nil {
			return nil, err
		}
	} else if err := c.b.m.conv(&c.shape, convFwd, x.p, wp, c.y.p); err != nil {
		return nil, err
	}
	if bp != 0 || c.relu() {
		if err := c.b.run("bias_act", kernels.Elementwise, c.y.n, 0, c.y.p, bp, i64(c.y.n), i32(s.Out), i32(oh*ow), flag(c.relu())); err != nil {
			return nil, err
		}
	}
	c.x, c.out = x, c.y
	return c.y, nil
}

func (c *convOp) BackwardDevice(dyt, wt, dwt, dbt train.Tensor, needDX bool) (train.Tensor, error) {
	if c.x == nil {
		return nil, fmt.Errorf("cuda: conv: Backward before Forward")
	}
	dy, err := asAny(dyt, 4)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(dy.shape, c.out.shape) {
		return nil, fmt.Errorf("cuda: conv: gradient %v, want %v", dy.shape, c.out.shape)
	}
	if dy.low != c.out.low {
		return nil, fmt.Errorf("cuda: conv: gradient %v in 16 bits: %v, the output: %v", dy.shape, dy.low, c.out.low)
	}
	s := c.s
	nw := s.Out * s.In * s.Kernel * s.Kernel
	wp, err := ptrOf("conv weights", wt, nw)
	if err != nil {
		return nil, err
	}
	dwp, err := ptrOf("conv weight gradient", dwt, nw)
	if err != nil {
		return nil, err
	}
	dbp, err := ptrOf("conv bias gradient", dbt, s.Out)
	if err != nil {
		return nil, err
	}
	g := dy
	if c.relu() {
		if err := c.b.ensure(&c.dym, dy.shape...); err != nil {
			return nil, err
		}
		if err := c.b.run("relu_bwd", kernels.Elementwise, dy.n, 0, dy.p, c.y.p, c.dym.p, i64(dy.n)); err != nil {
			return nil, err
		}
		g = c.dym
	}
	if c.b.reduced() {
		return c.backwardLow(g, wt, wp, dwp, dbp, needDX)
	}
	n, k, hw := planes(g.shape)
	if dbp != 0 {
		if err := c.b.run("bias_grad", kernels.PerChannel, k, n*hw, g.p, dbp, i32(n), i32(k), i32(hw)); err != nil {
			return nil, err
		}
	}
	if dwp != 0 {
		if err := c.b.m.conv(&c.shape, convBwdFilter, c.x.p, g.p, dwp); err != nil {
			return nil, err
		}
	}
	if !needDX {
		return nil, nil
	}
	if err := c.b.ensure(&c.dx, c.x.shape...); err != nil {
		return nil, err
	}
	if err := c.b.m.conv(&c.shape, convBwdData, wp, g.p, c.dx.p); err != nil {
		return nil, err
	}
	return c.dx, nil
}

// backwardLow is Backward under bf16 and fp16: the output gradient g cast
// to 16 bits; cuDNN's backward filter (16-bit x kept by Forward) and data
// write 16-bit gradients, cast to float32 into dw and dx; the bias
// gradient sums the rounded g in float (the rounded g cast back: the
// float32 op on rounded operands, as the reference emulates).
func (c *convOp) backwardLow(g *tensor, wt train.Tensor, wp, dwp, dbp uint64, needDX bool) (train.Tensor, error) {
	s := c.s
	n, k, ohw := planes(g.shape)
	rr := s.Kernel * s.Kernel
	dyh := g.p // the BatchNorm's 16-bit gradient (handsLow), or:
	if !g.low {
		var err error
		if dyh, err = c.b.to16(&c.dyh, g.p, n, k, ohw); err != nil {
			return nil, err
		}
	}
	if dbp != 0 {
		if err := c.b.ensure(&c.dyr, g.shape...); err != nil {
			return nil, err
		}
		if err := c.b.from16(c.dyr.p, dyh, n, k, ohw); err != nil {
			return nil, err
		}
		if err := c.b.run("bias_grad", kernels.PerChannel, k, n*ohw, c.dyr.p, dbp, i32(n), i32(k), i32(ohw)); err != nil {
			return nil, err
		}
	}
	if dwp != 0 {
		if err := c.b.grow16(&c.dwh, s.Out*s.In*rr); err != nil {
			return nil, err
		}
		if err := c.b.m.conv(&c.shape, convBwdFilter, c.xin, dyh, c.dwh.p); err != nil {
			return nil, err
		}
		if err := c.b.from16(dwp, c.dwh.p, s.Out, s.In, rr); err != nil {
			return nil, err
		}
	}
	if !needDX {
		return nil, nil
	}
	wh, err := c.weights(wt, wp, false)
	if err != nil {
		return nil, err
	}
	if c.x.low || c.lowGrad && !c.b.noLowHandOff {
		// The 16-bit input's gradient goes back as cuDNN writes it (a
		// float32 input's too, to a sum that takes it so).
		if err := c.b.ensureLow(&c.dxl, c.x.shape...); err != nil {
			return nil, err
		}
		if err := c.b.m.conv(&c.shape, convBwdData, wh, dyh, c.dxl.p); err != nil {
			return nil, err
		}
		return c.dxl, nil
	}
	if err := c.b.ensure(&c.dx, c.x.shape...); err != nil {
		return nil, err
	}
	if err := c.b.grow16(&c.dxh, c.dx.n); err != nil {
		return nil, err
	}
	if err := c.b.m.conv(&c.shape, convBwdData, wh, dyh, c.dxh.p); err != nil {
		return nil, err
	}
	_, ci, hw := planes(c.x.shape)
	if err := c.b.from16(c.dx.p, c.dxh.p, n, ci, hw); err != nil {
		return nil, err
	}
	return c.dx, nil
}

// weights are the 16-bit filter (weights16) at wp of wt: in a backward
// the last Forward's, while they are a State's values it has not changed
// since (the optimizer changes them after the backward), else cast again.
func (c *convOp) weights(wt train.Tensor, wp uint64, forward bool) (uint64, error) {
	t, _ := wt.(*tensor)
	if !forward && c.win != 0 && t != nil && t.st != nil && t.st == c.wst && t.st.gen == c.wgen && t.p == wp {
		return c.win, nil
	}
	s := c.s
	wh, err := c.b.weights16(wt, wp, s.Out, s.In, s.Kernel*s.Kernel, &c.wh)
	if err != nil {
		return 0, err
	}
	c.win, c.wst = 0, nil
	if forward && t != nil && t.st != nil && t.p == wp {
		c.win, c.wst, c.wgen = wh, t.st, t.st.gen
	}
	return wh, nil
}

func (c *convOp) Forward(x train.Tensor, w, bias []float32) (train.Tensor, error) {
	wt, err := c.b.hostTensor(&c.hw, w)
	if err != nil {
		return nil, err
	}
	var bt train.Tensor
	if bias != nil {
		t, err := c.b.hostTensor(&c.hb, bias)
		if err != nil {
			return nil, err
		}
		bt = t
	}
	return c.ForwardDevice(x, wt, bt)
}

func (c *convOp) Backward(dy train.Tensor, w, dw, db []float32, needDX bool) (train.Tensor, error) {
	wt, err := c.b.hostTensor(&c.hw, w)
	if err != nil {
		return nil, err
	}
	if err := c.b.ensure(&c.hdw, len(dw)); err != nil {
		return nil, err
	}
	var dbt train.Tensor
	if db != nil {
		if err := c.b.ensure(&c.hdb, len(db)); err != nil {
			return nil, err
		}
		dbt = c.hdb
	}
	dx, err := c.BackwardDevice(dy, wt, c.hdw, dbt, needDX)
	if err != nil {
		return nil, err
	}
	if err := c.hdw.Read(dw); err != nil {
		return nil, err
	}
	if db != nil {
		if err := c.hdb.Read(db); err != nil {
			return nil, err
		}
	}
	return dx, nil
}

// ---- batch normalisation: bn_plane_sum … bn_apply / bn_eval / bn_bwd_sum … bn_bwd_apply ----

type bnOp struct {
	b                  *Backend
	s                  train.BatchNormSpec
	x, y, dx           *tensor
	dxl                *tensor // dx in 16 bits, for a 16-bit x (lowIn)
	yl                 *tensor // y in 16 bits, for the convolution after it (lowOut)
	out                *tensor // the last Forward's output: y or yl
	bmean, bvar        *tensor // the last training Forward's statistics (biased variance)
	part, stat         *tensor // doubles: the planes' partial sums (2·n·c), the channels' statistics (2·c forward, 2·c backward, c: the backward's 1/σ channels-last)
	reluIn             bool    // x is read as ReLU(x) (train.ReLUInputBatchNormOp)
	lowIn              bool    // x may be the convolution's 16-bit output (train.LowInputOp)
	lowOut             bool    // y goes to the convolution after it in 16 bits (train.LowOutputOp)
	reluOut            bool    // y is ReLU(y): the ReLU layer after it folded in (train.ReLUOutputBatchNormOp)
	trained            bool
	hg, hb, hrm, hrv   *tensor // host path: scale, shift, running statistics
	hdg, hdb           *tensor
	scratchM, scratchV *tensor // host path, training: running statistics nobody reads
}

func (b *Backend) NewBatchNorm(s train.BatchNormSpec) (train.BatchNormOp, error) {
	if s.C <= 0 {
		return nil, fmt.Errorf("cuda: batchnorm %+v: invalid", s)
	}
	return &bnOp{b: b, s: s}, nil
}

func (o *bnOp) eps() float32 {
	if o.s.Eps == 0 {
		return 1e-5
	}
	return o.s.Eps
}

func (o *bnOp) Close() {
	for _, t := range []*tensor{o.y, o.yl, o.dx, o.dxl, o.bmean, o.bvar, o.part, o.stat, o.hg, o.hb, o.hrm, o.hrv, o.hdg, o.hdb, o.scratchM, o.scratchV} {
		t.free()
	}
	*o = bnOp{b: o.b, s: o.s, reluIn: o.reluIn, lowIn: o.lowIn, lowOut: o.lowOut, reluOut: o.reluOut}
}

// flags are the BatchNorm kernels' flags: x (and dx) 16-bit when x16, y
// (and dy) when y16, all channels-last when nhwc.
func (o *bnOp) flags(x16, y16, nhwc bool) uint64 {
	var fl int32
	for _, f := range []struct {
		on   bool
		flag int32
	}{{o.reluIn, kernels.BNReLU}, {o.reluOut, kernels.BNReLUOut}, {x16, kernels.BNX16}, {y16, kernels.BNY16}, {nhwc, kernels.BNNHWC}} {
		if f.on {
			fl |= f.flag
		}
	}
	if x16 || y16 {
		fl |= o.b.format().BNFlag()
	}
	return uint64(fl)
}

// handsLow reports whether the output goes to the convolution after it in
// 16 bits, as its operand: asked for, under bf16 or fp16; under
// ChannelsLast only from a channels-last 16-bit x (the kernels read and
// write one layout).
func (o *bnOp) handsLow(x *tensor) bool {
	return o.lowOut && o.b.reduced() && len(x.shape) == 4 && !o.b.noLowHandOff && (!o.b.nhwc || x.low)
}

func (o *bnOp) ForwardDevice(xt, gamma, beta, runMean, runVar train.Tensor, momentum float32, training bool) (train.Tensor, error) {
	return o.forward(xt, gamma, beta, runMean, runVar, momentum, training, nil)
}

// bnSum is a residual block's sum and ReLU folded into its main path's
// last BatchNorm (reluOp.ForwardBatchNormSum): y = ReLU(BatchNorm(x) + s),
// float32, into the ReLU op's y, and when y16 is not nil rounded into it
// too, in the convolutions' operand layout (kernels.cu's BN_ADD,
// BN_COPY16).
type bnSum struct{ s, y, y16 *tensor }

// forward is ForwardDevice, into sum's tensors when sum is not nil.
func (o *bnOp) forward(xt, gamma, beta, runMean, runVar train.Tensor, momentum float32, training bool, sum *bnSum) (train.Tensor, error) {
	x, err := asAny(xt, 2, 4)
	if err != nil {
		return nil, err
	}
	if x.low && !o.lowIn {
		return nil, fmt.Errorf("cuda: batchnorm: a 16-bit input %v without LowInput", x.shape)
	}
	c := o.s.C
	if x.shape[1] != c {
		return nil, fmt.Errorf("cuda: batchnorm: input %v has %d channels, want %d", x.shape, x.shape[1], c)
	}
	var p [4]uint64
	for i, t := range []train.Tensor{gamma, beta, runMean, runVar} {
		if p[i], err = ptrOf("batchnorm "+[]string{"scale", "shift", "running mean", "running variance"}[i], t, c); err != nil {
			return nil, err
		}
		if p[i] == 0 {
			return nil, fmt.Errorf("cuda: batchnorm: tensor %d missing", i)
		}
	}
	n, _, hw := planes(x.shape)
	// Channels-last values in (a channels-last convolution's 16-bit
	// output): out so to a convolution after it, or as float32
	// channels-first to any other op, the layout changed in the passes
	// (kernels.BNLaunches).
	nhwc := x.low && o.b.nhwc
	y := &o.y
	var sp, y16p uint64 // the sum's s and 16-bit copy (BN_ADD, BN_COPY16)
	switch {
	case sum != nil:
		y, sp = &sum.y, sum.s.p
	case o.handsLow(x):
		y = &o.yl
		err = o.b.ensureLow(y, x.shape...)
	default:
		err = o.b.ensure(y, x.shape...)
	}
	if err != nil {
		return nil, err
	}
	fl := o.flags(x.low, (*y).low, nhwc)
	if sum != nil {
		fl |= kernels.BNAdd
		if sum.y16 != nil {
			fl |= kernels.BNCopy16 | uint64(o.b.format().BNFlag())
			y16p = sum.y16.p
		}
	}
	if training {
		if err := o.b.ensure(&o.bmean, c); err != nil {
			return nil, err
		}
		if err := o.b.ensure(&o.bvar, c); err != nil {
			return nil, err
		}
		err = o.train(x, *y, p, n, c, hw, momentum, fl, sp, y16p)
	} else {
		k := kernels.BNLaunches(int32(fl), n, c, hw)
		err = o.b.run(k.Eval, kernels.PerRow, k.Rows, k.RowSize, x.p, (*y).p, p[0], p[1], p[2], p[3], sp, y16p,
			i32(n), i32(c), i32(hw), f32(o.eps()), fl)
	}
	if err != nil {
		return nil, err
	}
	o.x, o.out, o.trained = x, *y, training
	return *y, nil
}

// ReLUInput makes the op read ReLU(x), forward and backward
// (train.ReLUInputBatchNormOp).
func (o *bnOp) ReLUInput(on bool) { o.reluIn = on }

// LowInput lets the op take a convolution's 16-bit output as its input,
// read as it is, and hand that input's gradient back in 16 bits
// (train.LowInputOp).
func (o *bnOp) LowInput(on bool) { o.lowIn = on }

// ReLUOutput makes the op write ReLU(y) and take the gradient of ReLU(y)
// (train.ReLUOutputBatchNormOp).
func (o *bnOp) ReLUOutput(on bool) { o.reluOut = on }

// KeepLowOutput writes the output in 16 bits for the convolution after
// it to read as its operand, and takes that convolution's 16-bit input
// gradient back (train.LowOutputOp).
func (o *bnOp) KeepLowOutput(on bool) { o.lowOut = on }

// scratch makes the doubles the statistics are reduced in: 2·n·c partial
// sums (two per plane, forward and backward, one allocation so a step's
// record names the same addresses in both) and 5·c statistics, the
// forward's 2·c (mean, 1/σ; kept for the backward's ReLUOutput mask),
// the backward's 2·c after them (bwdStat), and channels-last the
// backward's 1/σ from the float32 variance (bn_stats writes it).
func (o *bnOp) scratch(n, c int) error {
	if err := o.b.ensure(&o.part, 4*n*c); err != nil { // 2·n·c doubles
		return err
	}
	return o.b.ensure(&o.stat, 10*c) // 5·c doubles
}

// bwdStat is the address of the backward's 2·c statistics in o.stat.
func (o *bnOp) bwdStat() uint64 { return o.stat.p + 16*uint64(o.s.C) }

// train is BatchNorm's training forward of x into y (kernels.cu: a
// block per plane for the sums and the output, a block per channel for
// the statistics): the planes' sums and sums of squares, the statistics
// (batch and running), the output. p: scale, shift, running
// mean, running variance; sp, y16p: the sum's s and 16-bit copy (0 for
// none).
func (o *bnOp) train(x, y *tensor, p [4]uint64, n, c, hw int, momentum float32, fl, sp, y16p uint64) error {
	if err := o.scratch(n, c); err != nil {
		return err
	}
	N, C, HW := i32(n), i32(c), i32(hw)
	k := kernels.BNLaunches(int32(fl), n, c, hw)
	if err := o.b.run(k.Sum, kernels.PerRow, k.Sums, k.SumSize, x.p, o.part.p, N, C, HW, fl); err != nil {
		return err
	}
	if err := o.b.run("bn_stats", kernels.PerRow, c, n, x.p, o.part.p, o.stat.p, o.bmean.p, o.bvar.p, p[2], p[3],
		N, C, HW, f32(o.eps()), f32(momentum), fl); err != nil {
		return err
	}
	return o.b.run(k.Apply, kernels.PerRow, k.Rows, k.RowSize, x.p, y.p, p[0], p[1], o.stat.p, sp, y16p, N, C, HW, fl)
}

func (o *bnOp) BackwardDevice(dyt, gamma, beta, dgamma, dbeta train.Tensor) (train.Tensor, error) {
	if o.x == nil || !o.trained {
		return nil, fmt.Errorf("cuda: batchnorm: Backward needs a training Forward first")
	}
	dy, err := asAny(dyt, 2, 4)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(dy.shape, o.x.shape) {
		return nil, fmt.Errorf("cuda: batchnorm: gradient %v, want %v", dy.shape, o.x.shape)
	}
	if dy.low != o.out.low {
		return nil, fmt.Errorf("cuda: batchnorm: gradient %v in 16 bits: %v, the output: %v", dy.shape, dy.low, o.out.low)
	}
	c := o.s.C
	gp, err := ptrOf("batchnorm scale", gamma, c)
	if err != nil {
		return nil, err
	}
	dgp, err := ptrOf("batchnorm scale gradient", dgamma, c)
	if err != nil {
		return nil, err
	}
	dbp, err := ptrOf("batchnorm shift gradient", dbeta, c)
	if err != nil {
		return nil, err
	}
	bp, err := ptrOf("batchnorm shift", beta, c)
	if err != nil {
		return nil, err
	}
	if gp == 0 || dgp == 0 || dbp == 0 {
		return nil, fmt.Errorf("cuda: batchnorm: Backward without the scale or the gradients")
	}
	if o.reluOut && bp == 0 {
		return nil, fmt.Errorf("cuda: batchnorm: Backward through the ReLU after it without the shift")
	}
	dx := &o.dx
	if o.x.low { // dx in 16 bits for the convolution's backward
		dx = &o.dxl
		err = o.b.ensureLow(dx, o.x.shape...)
	} else {
		err = o.b.ensure(dx, o.x.shape...)
	}
	if err != nil {
		return nil, err
	}
	n, _, hw := planes(o.x.shape)
	if err := o.scratch(n, c); err != nil {
		return nil, err
	}
	nhwc := o.x.low && o.b.nhwc
	N, C, HW, eps, fl := i32(n), i32(c), i32(hw), f32(o.eps()), o.flags(o.x.low, dy.low, nhwc)
	k := kernels.BNLaunches(int32(fl), n, c, hw)
	if nhwc {
		err = o.b.run(k.BwdSum, kernels.PerRow, k.Sums, k.SumSize, dy.p, o.x.p, gp, bp, o.stat.p, o.bmean.p, o.part.p,
			N, C, HW, fl)
	} else {
		err = o.b.run(k.BwdSum, kernels.PerRow, k.Sums, k.SumSize, dy.p, o.x.p, gp, bp, o.stat.p, o.bmean.p, o.bvar.p, o.part.p,
			N, C, HW, eps, fl)
	}
	if err != nil {
		return nil, err
	}
	if err := o.b.run("bn_bwd_stats", kernels.PerRow, c, n, o.part.p, o.bwdStat(), dgp, dbp, N, C, HW); err != nil {
		return nil, err
	}
	if nhwc {
		err = o.b.run(k.BwdApply, kernels.PerRow, k.Rows, k.RowSize, dy.p, o.x.p, gp, bp, o.stat.p, o.bmean.p, o.bwdStat(), (*dx).p,
			N, C, HW, fl)
	} else {
		err = o.b.run(k.BwdApply, kernels.PerRow, k.Rows, k.RowSize, dy.p, o.x.p, gp, bp, o.stat.p, o.bmean.p, o.bvar.p, o.bwdStat(), (*dx).p,
			N, C, HW, eps, fl)
	}
	if err != nil {
		return nil, err
	}
	return *dx, nil
}

func (o *bnOp) Forward(x train.Tensor, gamma, beta, mean, variance []float32, training bool) (train.Tensor, error) {
	g, err := o.b.hostTensor(&o.hg, gamma)
	if err != nil {
		return nil, err
	}
	be, err := o.b.hostTensor(&o.hb, beta)
	if err != nil {
		return nil, err
	}
	if !training {
		rm, err := o.b.hostTensor(&o.hrm, mean)
		if err != nil {
			return nil, err
		}
		rv, err := o.b.hostTensor(&o.hrv, variance)
		if err != nil {
			return nil, err
		}
		return o.ForwardDevice(x, g, be, rm, rv, 0, false)
	}
	if err := o.b.ensure(&o.scratchM, o.s.C); err != nil {
		return nil, err
	}
	if err := o.b.ensure(&o.scratchV, o.s.C); err != nil {
		return nil, err
	}
	y, err := o.ForwardDevice(x, g, be, o.scratchM, o.scratchV, 0, true)
	if err != nil {
		return nil, err
	}
	if err := o.bmean.Read(mean); err != nil {
		return nil, err
	}
	return y, o.bvar.Read(variance)
}

func (o *bnOp) Backward(dy train.Tensor, gamma, beta, dgamma, dbeta []float32) (train.Tensor, error) {
	g, err := o.b.hostTensor(&o.hg, gamma)
	if err != nil {
		return nil, err
	}
	if err := o.b.ensure(&o.hdg, len(dgamma)); err != nil {
		return nil, err
	}
	if err := o.b.ensure(&o.hdb, len(dbeta)); err != nil {
		return nil, err
	}
	var be train.Tensor
	if o.reluOut { // the ReLU's mask computes y again
		if be, err = o.b.hostTensor(&o.hb, beta); err != nil {
			return nil, err
		}
	}
	dx, err := o.BackwardDevice(dy, g, be, o.hdg, o.hdb)
	if err != nil {
		return nil, err
	}
	if err := o.hdg.Read(dgamma); err != nil {
		return nil, err
	}
	return dx, o.hdb.Read(dbeta)
}

// ---- ReLU ----

type reluOp struct {
	b        *Backend
	y, dx    *tensor
	y16      *tensor // ForwardSum's output rounded for the convolutions after it (keepLow; y.lowCopy)
	keepLow  bool    // train.LowCopyOp
	forwared bool
}

func (b *Backend) NewReLU() (train.ReLUOp, error) { return &reluOp{b: b}, nil }

func (u *reluOp) Close() {
	for _, t := range []*tensor{u.y, u.y16, u.dx} {
		t.free()
	}
	*u = reluOp{b: u.b, keepLow: u.keepLow}
}

// KeepLowCopy makes ForwardSum write its output rounded to 16 bits too,
// in the convolutions' operand layout, for the convolutions after it to
// read instead of casting it (train.LowCopyOp).
func (u *reluOp) KeepLowCopy(on bool) { u.keepLow = on }

// SumsLowGrads reports whether BackwardSum takes 16-bit convolution input
// gradients as they are (train.LowGradSumOp): under bf16 and fp16.
func (u *reluOp) SumsLowGrads() bool { return u.b.reduced() }

func (u *reluOp) Forward(xt train.Tensor) (train.Tensor, error) {
	x, err := asT(xt)
	if err != nil {
		return nil, err
	}
	if err := u.b.ensure(&u.y, x.shape...); err != nil {
		return nil, err
	}
	u.y.lowCopy = nil // ForwardSum's copy, now stale
	if err := u.b.run("relu_fwd", kernels.Elementwise, x.n, 0, x.p, u.y.p, i64(x.n)); err != nil {
		return nil, err
	}
	u.forwared = true
	return u.y, nil
}

// ForwardSum is Forward(a + b) in one pass, add_relu
// (train.AddReLUOp); with Backend.noAddReLU add, then relu_fwd.
func (u *reluOp) ForwardSum(at, bt train.Tensor) (train.Tensor, error) {
	a, err := asT(at)
	if err != nil {
		return nil, err
	}
	b, err := asT(bt)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(a.shape, b.shape) {
		return nil, fmt.Errorf("cuda: relu of a sum: shapes %v and %v", a.shape, b.shape)
	}
	if err := u.b.ensure(&u.y, a.shape...); err != nil {
		return nil, err
	}
	u.y.lowCopy = nil
	if u.keepLow && u.b.reduced() && !u.b.noLowHandOff && !u.b.noAddReLU && len(a.shape) == 4 {
		// The next block's convolutions' operand beside the output.
		if err := u.b.ensureLow(&u.y16, a.shape...); err != nil {
			return nil, err
		}
		fl := uint64(u.b.format().SumFlag())
		n, c, hw := planes(a.shape)
		if u.b.nhwc {
			err = u.b.run("add_relu_tiles", kernels.PerRow, kernels.CastTiles(n, c, hw), kernels.TileValues, a.p, b.p, u.y.p, u.y16.p,
				i32(n), i32(c), i32(hw), fl)
		} else {
			err = u.b.run("add_relu_low", kernels.Elementwise, a.n, 0, a.p, b.p, u.y.p, u.y16.p, i64(a.n), fl)
		}
		if err != nil {
			return nil, err
		}
		u.y.lowCopy, u.forwared = u.y16, true
		return u.y, nil
	}
	if u.b.noAddReLU {
		if err := u.b.run("add", kernels.Elementwise, a.n, 0, a.p, b.p, u.y.p, i64(a.n)); err != nil {
			return nil, err
		}
		err = u.b.run("relu_fwd", kernels.Elementwise, a.n, 0, u.y.p, u.y.p, i64(a.n))
	} else {
		err = u.b.run("add_relu", kernels.Elementwise, a.n, 0, a.p, b.p, u.y.p, i64(a.n))
	}
	if err != nil {
		return nil, err
	}
	u.forwared = true
	return u.y, nil
}

// ForwardBatchNormSum is ForwardSum(bn's output, s) in bn's own pass
// over its output (train.SumReLUBatchNormOp; kernels.cu's BN_ADD): ReLU(
// BatchNorm(x) + s) into the op's y, and with KeepLowCopy rounded into
// its 16-bit copy too (BN_COPY16, in the convolutions' operand layout:
// channels-last from the bn_tiles kernels). Not with another backend's
// BatchNorm, one that hands its output on in 16 bits or rectifies it
// itself, a tensor other than N×C×H×W, or Backend.noBNSum.
func (u *reluOp) ForwardBatchNormSum(bn train.BatchNormOp, xt, st, gamma, beta, runMean, runVar train.Tensor, momentum float32,
	training bool) (train.Tensor, bool, error) {
	o, ok := bn.(*bnOp)
	if !ok || o.b != u.b || u.b.noBNSum || u.b.noAddReLU || o.lowOut || o.reluOut {
		return nil, false, nil
	}
	x, err := asAny(xt)
	if err != nil || len(x.shape) != 4 {
		return nil, false, err
	}
	s, err := asT(st, 4)
	if err != nil {
		return nil, false, err
	}
	if !slices.Equal(s.shape, x.shape) {
		return nil, false, fmt.Errorf("cuda: relu of a BatchNorm's sum: shapes %v and %v", x.shape, s.shape)
	}
	if err := u.b.ensure(&u.y, x.shape...); err != nil {
		return nil, false, err
	}
	u.y.lowCopy, u.forwared = nil, false
	sum := &bnSum{s: s, y: u.y}
	// The copy in the next convolutions' layout: channels-last only from
	// the bn_tiles kernels (a channels-last 16-bit x).
	if u.keepLow && u.b.reduced() && !u.b.noLowHandOff && (!u.b.nhwc || x.low) {
		if err := u.b.ensureLow(&u.y16, x.shape...); err != nil {
			return nil, false, err
		}
		sum.y16 = u.y16
	}
	if _, err := o.forward(x, gamma, beta, runMean, runVar, momentum, training, sum); err != nil {
		return nil, false, err
	}
	u.y.lowCopy, u.forwared = sum.y16, true
	return u.y, true, nil
}

// BackwardSum is Backward(a + b) in one pass, add_relu_bwd
// (train.ReLUSumBackwardOp); with Backend.noAddReLU add, then relu_bwd.
func (u *reluOp) BackwardSum(at, bt train.Tensor) (train.Tensor, error) {
	a, err := asAny(at)
	if err != nil {
		return nil, err
	}
	b, err := asAny(bt)
	if err != nil {
		return nil, err
	}
	if !u.forwared || !slices.Equal(a.shape, u.y.shape) || !slices.Equal(b.shape, u.y.shape) {
		return nil, fmt.Errorf("cuda: relu: gradients %v and %v do not match the last Forward", a.shape, b.shape)
	}
	if err := u.b.ensure(&u.dx, a.shape...); err != nil {
		return nil, err
	}
	if a.low || b.low {
		// 16-bit convolution input gradients (train.LowGradOp; apart,
		// Backend.noLowHandOff, they come cast) read as they are:
		// add_relu_bwd's bits without the casts.
		if len(a.shape) != 4 {
			return nil, fmt.Errorf("cuda: relu: a 16-bit gradient of shape %v", a.shape)
		}
		fl := kernels.SumGrad{Format: u.b.format(), NHWC: u.b.nhwc}.Flags()
		if a.low {
			fl |= kernels.SumA16
		}
		if b.low {
			fl |= kernels.SumB16
		}
		n, c, hw := planes(a.shape)
		if u.b.nhwc {
			return u.dx, u.b.run("add_relu_bwd_tiles", kernels.PerRow, kernels.CastTiles(n, c, hw), kernels.TileValues,
				a.p, b.p, u.y.p, u.dx.p, i32(n), i32(c), i32(hw), uint64(fl))
		}
		return u.dx, u.b.run("add_relu_bwd_low", kernels.Elementwise, a.n, 0, a.p, b.p, u.y.p, u.dx.p, i64(a.n), uint64(fl))
	}
	if u.b.noAddReLU {
		if err := u.b.run("add", kernels.Elementwise, a.n, 0, a.p, b.p, u.dx.p, i64(a.n)); err != nil {
			return nil, err
		}
		return u.dx, u.b.run("relu_bwd", kernels.Elementwise, a.n, 0, u.dx.p, u.y.p, u.dx.p, i64(a.n))
	}
	return u.dx, u.b.run("add_relu_bwd", kernels.Elementwise, a.n, 0, a.p, b.p, u.y.p, u.dx.p, i64(a.n))
}

func (u *reluOp) Backward(dyt train.Tensor) (train.Tensor, error) {
	dy, err := asT(dyt)
	if err != nil {
		return nil, err
	}
	if !u.forwared || !slices.Equal(dy.shape, u.y.shape) {
		return nil, fmt.Errorf("cuda: relu: gradient does not match the last Forward")
	}
	if err := u.b.ensure(&u.dx, dy.shape...); err != nil {
		return nil, err
	}
	return u.dx, u.b.run("relu_bwd", kernels.Elementwise, dy.n, 0, dy.p, u.y.p, u.dx.p, i64(dy.n))
}

// ---- pooling ----

type poolOp struct {
	b     *Backend
	s     train.PoolSpec
	x     *tensor
	y, dx *tensor
	arg   uint64 // max pooling: i32 per output
	nArg  int
}

func (b *Backend) NewPool(s train.PoolSpec) (train.PoolOp, error) {
	if s.KernelH <= 0 || s.KernelW <= 0 || s.StrideH <= 0 || s.StrideW <= 0 || s.PadH < 0 || s.PadW < 0 ||
		s.PadH*2 > s.KernelH || s.PadW*2 > s.KernelW {
		return nil, fmt.Errorf("cuda: pool %+v: invalid", s)
	}
	return &poolOp{b: b, s: s}, nil
}

func (p *poolOp) Close() {
	p.y.free()
	p.dx.free()
	if p.arg != 0 {
		p.b.m.free(p.arg)
	}
	*p = poolOp{b: p.b, s: p.s}
}

// dims are the 12 integers the pooling kernels take after their pointers.
func (p *poolOp) dims(x *tensor) []uint64 {
	s := p.s
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	oh, ow := train.ConvOut(h, s.KernelH, s.StrideH, s.PadH), train.ConvOut(w, s.KernelW, s.StrideW, s.PadW)
	return []uint64{i32(n), i32(c), i32(h), i32(w), i32(oh), i32(ow), i32(s.KernelH), i32(s.KernelW),
		i32(s.StrideH), i32(s.StrideW), i32(s.PadH), i32(s.PadW)}
}

func (p *poolOp) Forward(xt train.Tensor, training bool) (train.Tensor, error) {
	x, err := asT(xt, 4)
	if err != nil {
		return nil, err
	}
	s := p.s
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	oh, ow := train.ConvOut(h, s.KernelH, s.StrideH, s.PadH), train.ConvOut(w, s.KernelW, s.StrideW, s.PadW)
	if oh <= 0 || ow <= 0 {
		return nil, fmt.Errorf("cuda: pool: input %v too small", x.shape)
	}
	if err := p.b.ensure(&p.y, n, c, oh, ow); err != nil {
		return nil, err
	}
	d := p.dims(x)
	if s.Kind == train.MaxPool {
		if p.nArg < p.y.n {
			if p.arg != 0 {
				p.b.m.free(p.arg)
				p.arg, p.nArg = 0, 0
			}
			if p.arg, err = p.b.m.alloc(4 * p.y.n); err != nil {
				return nil, fmt.Errorf("cuda: pool indices: %w", err)
			}
			p.nArg = p.y.n
		}
		err = p.b.run("maxpool_fwd", kernels.PerRow, n*c, oh*ow, append([]uint64{x.p, p.y.p, p.arg}, d...)...)
	} else {
		err = p.b.run("avgpool_fwd", kernels.PerRow, n*c, oh*ow, append(append([]uint64{x.p, p.y.p}, d...), flag(s.ExcludePad))...)
	}
	if err != nil {
		return nil, err
	}
	p.x = x
	return p.y, nil
}

func (p *poolOp) Backward(dyt train.Tensor) (train.Tensor, error) {
	dy, err := asT(dyt, 4)
	if err != nil {
		return nil, err
	}
	if p.x == nil || !slices.Equal(dy.shape, p.y.shape) {
		return nil, fmt.Errorf("cuda: pool: gradient does not match the last Forward")
	}
	if err := p.b.ensure(&p.dx, p.x.shape...); err != nil {
		return nil, err
	}
	d := p.dims(p.x)
	n, c, h, w := p.x.shape[0], p.x.shape[1], p.x.shape[2], p.x.shape[3]
	if p.s.Kind == train.MaxPool {
		err = p.b.run("maxpool_bwd", kernels.PerRow, n*c, h*w, append([]uint64{dy.p, p.arg, p.dx.p}, d...)...)
	} else {
		err = p.b.run("avgpool_bwd", kernels.PerRow, n*c, h*w, append(append([]uint64{dy.p, p.dx.p}, d...), flag(p.s.ExcludePad))...)
	}
	if err != nil {
		return nil, err
	}
	return p.dx, nil
}

// ---- linear: sgemm, then bias_act; bias_grad ----

type linearOp struct {
	b        *Backend
	s        train.LinearSpec
	x        *tensor
	y, dx    *tensor
	hw, hb   *tensor
	hdw, hdb *tensor
	// bf16/fp16: the 16-bit input (kept for dw), weights (host path) and
	// output gradient; dyr the gradient rounded, in float32, for the bias.
	xh, wh, dyh buf16
	dyr         *tensor
}

func (b *Backend) NewLinear(s train.LinearSpec) (train.LinearOp, error) {
	if s.In <= 0 || s.Out <= 0 {
		return nil, fmt.Errorf("cuda: linear %+v: invalid", s)
	}
	return &linearOp{b: b, s: s}, nil
}

func (l *linearOp) Close() {
	for _, t := range []*tensor{l.y, l.dx, l.hw, l.hb, l.hdw, l.hdb, l.dyr} {
		t.free()
	}
	for _, h := range []*buf16{&l.xh, &l.wh, &l.dyh} {
		l.b.free16(h)
	}
	*l = linearOp{b: l.b, s: l.s}
}

// The products, row-major tensors seen column-major by sgemm (a row-major
// r×c matrix is a column-major c×r one):
//
//	y (N×Out)  = x·wᵀ:  yᵀ = (w as In×Out)ᵀ · (x as In×N)
//	dw (Out×In) = dyᵀ·x: dwᵀ = (x as In×N) · (dy as Out×N)ᵀ
//	dx (N×In)  = dy·w:  dxᵀ = (w as In×Out) · (dy as Out×N)
func (l *linearOp) ForwardDevice(xt, wt, bt train.Tensor) (train.Tensor, error) {
	x, err := asT(xt)
	if err != nil {
		return nil, err
	}
	n, in, out := x.shape[0], l.s.In, l.s.Out
	if x.n != n*in {
		return nil, fmt.Errorf("cuda: linear: input %v does not flatten to %d features", x.shape, in)
	}
	wp, err := ptrOf("linear weights", wt, out*in)
	if err != nil {
		return nil, err
	}
	bp, err := ptrOf("linear bias", bt, out)
	if err != nil {
		return nil, err
	}
	if err := l.b.ensure(&l.y, n, out); err != nil {
		return nil, err
	}
	xp := x.p
	if l.b.reduced() {
		// cublasGemmEx: 16-bit x and w, float accumulation and output.
		if xp, err = l.b.toLow(&l.xh, x.p, x.n); err != nil {
			return nil, err
		}
		if wp, err = l.b.lowWeights(wt, wp, out*in, &l.wh); err != nil {
			return nil, err
		}
	}
	if err := l.b.m.gemm(gemmArgs{In: l.b.low, TA: true, M: out, N: n, K: in, Alpha: 1, A: wp, LDA: in, B: xp, LDB: in, C: l.y.p, LDC: out}); err != nil {
		return nil, err
	}
	if bp != 0 {
		if err := l.b.run("bias_act", kernels.Elementwise, l.y.n, 0, l.y.p, bp, i64(l.y.n), i32(out), i32(1), i32(0)); err != nil {
			return nil, err
		}
	}
	l.x = x
	return l.y, nil
}

func (l *linearOp) BackwardDevice(dyt, wt, dwt, dbt train.Tensor, needDX bool) (train.Tensor, error) {
	dy, err := asT(dyt, 2)
	if err != nil {
		return nil, err
	}
	if l.x == nil || !slices.Equal(dy.shape, l.y.shape) {
		return nil, fmt.Errorf("cuda: linear: gradient does not match the last Forward")
	}
	n, in, out := dy.shape[0], l.s.In, l.s.Out
	wp, err := ptrOf("linear weights", wt, out*in)
	if err != nil {
		return nil, err
	}
	dwp, err := ptrOf("linear weight gradient", dwt, out*in)
	if err != nil {
		return nil, err
	}
	dbp, err := ptrOf("linear bias gradient", dbt, out)
	if err != nil {
		return nil, err
	}
	xp, dyp, gb := l.x.p, dy.p, dy
	if l.b.reduced() {
		if dyp, err = l.b.toLow(&l.dyh, dy.p, dy.n); err != nil {
			return nil, err
		}
		xp = l.xh.p
		if dbp != 0 {
			if err := l.b.ensure(&l.dyr, dy.shape...); err != nil {
				return nil, err
			}
			if err := l.b.fromLow(l.dyr.p, dyp, dy.n); err != nil {
				return nil, err
			}
			gb = l.dyr
		}
	}
	if dbp != 0 {
		if err := l.b.run("bias_grad", kernels.PerChannel, out, n, gb.p, dbp, i32(n), i32(out), i32(1)); err != nil {
			return nil, err
		}
	}
	if dwp != 0 {
		if err := l.b.m.gemm(gemmArgs{In: l.b.low, TB: true, M: in, N: out, K: n, Alpha: 1, A: xp, LDA: in, B: dyp, LDB: out, C: dwp, LDC: in}); err != nil {
			return nil, err
		}
	}
	if !needDX {
		return nil, nil
	}
	if err := l.b.ensure(&l.dx, l.x.shape...); err != nil {
		return nil, err
	}
	if l.b.reduced() {
		if wp, err = l.b.lowWeights(wt, wp, out*in, &l.wh); err != nil {
			return nil, err
		}
	}
	if err := l.b.m.gemm(gemmArgs{In: l.b.low, M: in, N: n, K: out, Alpha: 1, A: wp, LDA: in, B: dyp, LDB: out, C: l.dx.p, LDC: in}); err != nil {
		return nil, err
	}
	return l.dx, nil
}

func (l *linearOp) Forward(x train.Tensor, w, bias []float32) (train.Tensor, error) {
	wt, err := l.b.hostTensor(&l.hw, w)
	if err != nil {
		return nil, err
	}
	bt, err := l.b.hostTensor(&l.hb, bias)
	if err != nil {
		return nil, err
	}
	return l.ForwardDevice(x, wt, bt)
}

func (l *linearOp) Backward(dy train.Tensor, w, dw, db []float32, needDX bool) (train.Tensor, error) {
	wt, err := l.b.hostTensor(&l.hw, w)
	if err != nil {
		return nil, err
	}
	if err := l.b.ensure(&l.hdw, len(dw)); err != nil {
		return nil, err
	}
	if err := l.b.ensure(&l.hdb, len(db)); err != nil {
		return nil, err
	}
	dx, err := l.BackwardDevice(dy, wt, l.hdw, l.hdb, needDX)
	if err != nil {
		return nil, err
	}
	if err := l.hdw.Read(dw); err != nil {
		return nil, err
	}
	return dx, l.hdb.Read(db)
}

// ---- add ----

type addOp struct {
	b *Backend
	y *tensor
}

func (b *Backend) NewAdd() (train.AddOp, error) { return &addOp{b: b}, nil }
func (a *addOp) Close()                         { a.y.free(); a.y = nil }

func (a *addOp) Forward(at, bt train.Tensor) (train.Tensor, error) {
	x, err := asT(at)
	if err != nil {
		return nil, err
	}
	y, err := asT(bt)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(x.shape, y.shape) {
		return nil, fmt.Errorf("cuda: add: shapes %v and %v differ", x.shape, y.shape)
	}
	if err := a.b.ensure(&a.y, x.shape...); err != nil {
		return nil, err
	}
	return a.y, a.b.run("add", kernels.Elementwise, x.n, 0, x.p, y.p, a.y.p, i64(x.n))
}
