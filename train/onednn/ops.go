//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn

// #include "shim.h"
import "C"

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/faster-training/faster/train"
)

// ---- convolution ----

type conv struct {
	s        *stream
	spec     train.ConvSpec
	num      numerics
	algo     convAlgo
	winograd bool   // BackendOptions.Winograd
	tune     *tuner // nil: no autotuning (algo stays the default)
	inShape  []int
	inMD     memDesc

	fwd, bwdD, bwdW            *prim
	wUser, bias, dwUser, dbias *mem
	wFwd, wBwd, dwMem          *mem // nil when the user layout serves
	wFwdR, wBwdR, dwR          *prim
	srcFwd, srcBwd, dyW, dyD   slot
	xR, dyR                    rounder // emulated reduced precision
	src                        *mem    // the source used by the last Forward
	y, dx                      *tensor
	// ConvSpec.ReLU: the ReLU's backward pass (from the output y, oneDNN's
	// relu_use_dst_for_bwd; reluHint is the forward it needs as a hint)
	// into dyMasked, the gradient the convolution's backward takes.
	reluHint, reluBwd *prim
	dyRelu            slot
	dyMasked          *mem
}

func (b *Backend) NewConv(s train.ConvSpec) (train.ConvOp, error) {
	if s.In <= 0 || s.Out <= 0 || s.Kernel <= 0 || s.Pad < 0 || s.Stride < 0 {
		return nil, fmt.Errorf("conv %+v: invalid", s)
	}
	c := &conv{s: b.s, spec: s, num: b.num, tune: b.tune, winograd: b.winograd}
	c.algo = c.defaultAlgo()
	return c, nil
}

// defaultAlgo is the algorithm a convolution runs without autotuning:
// Winograd F(4×4, 3×3) for float32 3×3 convolutions of stride 1 whose
// channel counts are multiples of 16 (oneDNN's jit_wino_4x3 kernels, which
// cover forward, backward data and backward weights; about twice as fast
// as direct ones on ThinNet's layers), direct otherwise, and always without
// BackendOptions.Winograd.
func (c *conv) defaultAlgo() convAlgo {
	s := c.spec
	if c.winograd && c.num.dt == C.dnnl_f32 && c.num.emulate == train.Float32 &&
		s.Kernel == 3 && max(s.Stride, 1) == 1 && s.In%16 == 0 && s.Out%16 == 0 {
		return winogradConvAlgo
	}
	return defaultConvAlgo
}

func (c *conv) Close() {
	freePrims(&c.fwd, &c.bwdD, &c.bwdW, &c.wFwdR, &c.wBwdR, &c.dwR, &c.reluHint, &c.reluBwd)
	freeMems(&c.wUser, &c.bias, &c.dwUser, &c.dbias, &c.wFwd, &c.wBwd, &c.dwMem, &c.dyMasked)
	freeSlots(&c.srcFwd, &c.srcBwd, &c.dyW, &c.dyD, &c.dyRelu)
	freeRounders(&c.xR, &c.dyR)
	release(c.y, c.dx)
	c.y, c.dx, c.inShape, c.src = nil, nil, nil, nil
}

func (c *conv) geometry() (strides, pads C.dnnl_dims_t) {
	st := max(c.spec.Stride, 1)
	return dims([]int{st, st}), dims([]int{c.spec.Pad, c.spec.Pad})
}

// mds describes the convolution's tensors for c.algo and c.num: the
// source, weights and output gradient in the compute type, the rest f32.
func (c *conv) mds(in, out []int) (src, wei, dst, diffSrc, diffWei, diffDst memDesc, err error) {
	wShape := []int{c.spec.Out, c.spec.In, c.spec.Kernel, c.spec.Kernel}
	if src, err = newMDOf(in, c.num.dt, c.algo.tag); err != nil {
		return
	}
	wei, _ = newMDOf(wShape, c.num.dt, C.dnnl_format_tag_any)
	dst, _ = newMDOf(out, C.dnnl_f32, c.algo.tag)
	diffSrc, _ = newMDOf(in, C.dnnl_f32, c.algo.tag)
	diffWei, _ = newMDOf(wShape, C.dnnl_f32, C.dnnl_format_tag_any)
	diffDst, _ = newMDOf(out, c.num.dt, c.algo.tag)
	return
}

func (c *conv) setup(x *tensor) error {
	err := c.setupAlgo(x)
	if err != nil && c.algo == winogradConvAlgo && c.tune == nil {
		// Not implemented for this shape after all: direct it is.
		c.algo = defaultConvAlgo
		err = c.setupAlgo(x)
	}
	return err
}

func (c *conv) setupAlgo(x *tensor) error {
	c.s.bind(c.s.threads)
	c.Close()
	n, h, w := x.shape[0], x.shape[2], x.shape[3]
	k, st := c.spec.Kernel, max(c.spec.Stride, 1)
	oh, ow := train.ConvOut(h, k, st, c.spec.Pad), train.ConvOut(w, k, st, c.spec.Pad)
	if oh <= 0 || ow <= 0 {
		return fmt.Errorf("conv: input %v too small for kernel %d", x.shape, k)
	}
	outShape := []int{n, c.spec.Out, oh, ow}
	srcMD, wMD, dstMD, _, dwMD, ddstMD, err := c.mds(x.shape, outShape)
	if err != nil {
		return err
	}
	wShape := []int{c.spec.Out, c.spec.In, k, k}
	var bMD *memDesc
	if c.spec.Bias {
		md, _ := newMD([]int{c.spec.Out}, false)
		bMD = &md
	}
	strides, pads := c.geometry()
	var d C.dnnl_convolution_desc_t
	if err := check("convolution forward", C.dnnl_convolution_forward_desc_init(&d, C.dnnl_forward_training, c.algo.alg,
		&srcMD, &wMD, bMD, &dstMD, dimsPtr(&strides), dimsPtr(&pads), dimsPtr(&pads))); err != nil {
		return err
	}
	newFwd := newPrim
	if c.spec.ReLU {
		newFwd = newPrimReLU
	}
	if c.fwd, err = newFwd("convolution forward", unsafe.Pointer(&d), nil); err != nil {
		return err
	}
	if err := check("convolution backward weights", C.dnnl_convolution_backward_weights_desc_init(&d, c.algo.alg,
		&srcMD, &dwMD, bMD, &ddstMD, dimsPtr(&strides), dimsPtr(&pads), dimsPtr(&pads))); err != nil {
		return err
	}
	if c.bwdW, err = newPrim("convolution backward weights", unsafe.Pointer(&d), c.fwd); err != nil {
		return err
	}
	if err := reset(c.s, &c.y, outShape, c.fwd.md(argDst)); err != nil {
		return err
	}
	c.y.nonNeg = c.spec.ReLU
	if c.spec.ReLU {
		yMD := c.y.m.md
		var e C.dnnl_eltwise_desc_t
		if err := check("relu forward", C.dnnl_eltwise_forward_desc_init(&e, C.dnnl_forward_training, C.dnnl_eltwise_relu_use_dst_for_bwd, &yMD, 0, 0)); err != nil {
			return err
		}
		if c.reluHint, err = newPrim("relu forward", unsafe.Pointer(&e), nil); err != nil {
			return err
		}
		if err := check("relu backward", C.dnnl_eltwise_backward_desc_init(&e, C.dnnl_eltwise_relu_use_dst_for_bwd, &yMD, &yMD, 0, 0)); err != nil {
			return err
		}
		if c.reluBwd, err = newPrim("relu backward", unsafe.Pointer(&e), c.reluHint); err != nil {
			return err
		}
		if c.dyMasked, err = newMem(c.reluBwd.md(argDiffSrc)); err != nil {
			return err
		}
	}
	userMD, _ := newMD(wShape, false)
	if c.wUser, err = newMem(userMD); err != nil {
		return err
	}
	if c.dwUser, err = newMem(userMD); err != nil {
		return err
	}
	if md := c.fwd.md(argWeights); !mdEqual(&md, &userMD) {
		if c.wFwd, err = newMem(md); err != nil {
			return err
		}
		if c.wFwdR, err = newReorder(&userMD, &md); err != nil {
			return err
		}
	}
	if md := c.bwdW.md(argDiffWeights); !mdEqual(&md, &userMD) {
		if c.dwMem, err = newMem(md); err != nil {
			return err
		}
		if c.dwR, err = newReorder(&md, &userMD); err != nil {
			return err
		}
	}
	if c.spec.Bias {
		if c.bias, err = newMem(*bMD); err != nil {
			return err
		}
		if c.dbias, err = newMem(*bMD); err != nil {
			return err
		}
	}
	c.inShape, c.inMD = slices.Clone(x.shape), x.m.md
	return nil
}

// setupBackwardData creates the data-gradient primitive on first need.
func (c *conv) setupBackwardData() error {
	c.s.bind(c.s.threads)
	_, wMD, _, dsrcMD, _, ddstMD, err := c.mds(c.inShape, c.y.shape)
	if err != nil {
		return err
	}
	strides, pads := c.geometry()
	var d C.dnnl_convolution_desc_t
	if err := check("convolution backward data", C.dnnl_convolution_backward_data_desc_init(&d, c.algo.alg,
		&dsrcMD, &wMD, &ddstMD, dimsPtr(&strides), dimsPtr(&pads), dimsPtr(&pads))); err != nil {
		return err
	}
	if c.bwdD, err = newPrim("convolution backward data", unsafe.Pointer(&d), c.fwd); err != nil {
		return err
	}
	fwdW := c.fwd.md(argWeights)
	if md := c.bwdD.md(argWeights); !mdEqual(&md, &fwdW) && !mdEqual(&md, &c.wUser.md) {
		if c.wBwd, err = newMem(md); err != nil {
			return err
		}
		if c.wBwdR, err = newReorder(&c.wUser.md, &md); err != nil {
			return err
		}
	}
	return reset(c.s, &c.dx, c.inShape, c.bwdD.md(argDiffSrc))
}

// loadWeights copies w into the op's plain weight buffer, rounded when
// reduced precision is emulated (w itself, the master copy, is untouched).
func (c *conv) loadWeights(w []float32) {
	copy(c.wUser.floats(len(w)), w)
	if c.num.emulate != train.Float32 {
		roundMem(c.s, c.num.emulate, c.wUser, c.wUser)
	}
}

func (c *conv) Forward(xt train.Tensor, w, b []float32) (train.Tensor, error) {
	x, err := asTensor(xt, 4)
	if err != nil {
		return nil, err
	}
	if x.shape[1] != c.spec.In {
		return nil, fmt.Errorf("conv: input %v has %d channels, want %d", x.shape, x.shape[1], c.spec.In)
	}
	if !slices.Equal(x.shape, c.inShape) || !mdEqual(&x.m.md, &c.inMD) {
		if c.tune != nil {
			c.algo = c.tune.conv(c, x, w, b)
		}
		if err := c.setup(x); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.loadWeights(w)
	wm := c.wUser
	if c.wFwd != nil {
		if err := c.s.exec("reorder weights", c.wFwdR, arg(argSrc, c.wUser), arg(argDst, c.wFwd)); err != nil {
			return nil, err
		}
		wm = c.wFwd
	}
	src, err := c.srcFwd.get(c.s, x.m, c.fwd.md(argSrc))
	if err != nil {
		return nil, err
	}
	if p := c.num.emulate; p != train.Float32 {
		if src == x.m { // x belongs to the layer before
			if src, err = c.xR.round(c.s, p, src); err != nil {
				return nil, err
			}
		} else {
			roundMem(c.s, p, src, src)
		}
	}
	args := []execArg{arg(argSrc, src), arg(argWeights, wm), arg(argDst, c.y.m)}
	if c.spec.Bias {
		copy(c.bias.floats(len(b)), b)
		args = append(args, arg(argBias, c.bias))
	}
	if err := c.s.exec("convolution forward", c.fwd, args...); err != nil {
		return nil, err
	}
	c.src = src
	return c.y, nil
}

func (c *conv) Backward(dyt train.Tensor, w, dw, db []float32, needDX bool) (train.Tensor, error) {
	if c.src == nil {
		return nil, fmt.Errorf("conv: Backward before Forward")
	}
	dy, err := asTensor(dyt, 4)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(dy.shape, c.y.shape) {
		return nil, fmt.Errorf("conv: gradient %v, want %v", dy.shape, c.y.shape)
	}
	dym := dy.m
	if c.spec.ReLU && (dy.maskedBy != c.y.m || !mdEqual(&dym.md, &c.y.m.md)) {
		if dym, err = c.dyRelu.get(c.s, dym, c.reluBwd.md(argDiffDst)); err != nil {
			return nil, err
		}
		if err := c.s.exec("relu backward", c.reluBwd, arg(argDst, c.y.m), arg(argDiffDst, dym), arg(argDiffSrc, c.dyMasked)); err != nil {
			return nil, err
		}
		dym = c.dyMasked
	}
	if p := c.num.emulate; p != train.Float32 {
		if dym, err = c.dyR.round(c.s, p, dym); err != nil {
			return nil, err
		}
	}
	src, err := c.srcBwd.get(c.s, c.src, c.bwdW.md(argSrc))
	if err != nil {
		return nil, err
	}
	ddst, err := c.dyW.get(c.s, dym, c.bwdW.md(argDiffDst))
	if err != nil {
		return nil, err
	}
	dwm := c.dwUser
	if c.dwMem != nil {
		dwm = c.dwMem
	}
	args := []execArg{arg(argSrc, src), arg(argDiffDst, ddst), arg(argDiffWeights, dwm)}
	if c.spec.Bias {
		args = append(args, arg(argDiffBias, c.dbias))
	}
	if err := c.s.exec("convolution backward weights", c.bwdW, args...); err != nil {
		return nil, err
	}
	if c.dwMem != nil {
		if err := c.s.exec("reorder weight gradient", c.dwR, arg(argSrc, c.dwMem), arg(argDst, c.dwUser)); err != nil {
			return nil, err
		}
	}
	copy(dw, c.dwUser.floats(len(dw)))
	if c.spec.Bias && db != nil {
		copy(db, c.dbias.floats(len(db)))
	}
	if !needDX {
		return nil, nil
	}
	if c.bwdD == nil {
		if err := c.setupBackwardData(); err != nil {
			return nil, err
		}
	}
	wm := c.wUser
	switch {
	case c.wBwd != nil:
		c.loadWeights(w)
		if err := c.s.exec("reorder weights", c.wBwdR, arg(argSrc, c.wUser), arg(argDst, c.wBwd)); err != nil {
			return nil, err
		}
		wm = c.wBwd
	case c.wFwd != nil && func() bool { md := c.bwdD.md(argWeights); return mdEqual(&md, &c.wFwd.md) }():
		wm = c.wFwd
	}
	ddst, err = c.dyD.get(c.s, dym, c.bwdD.md(argDiffDst))
	if err != nil {
		return nil, err
	}
	if err := c.s.exec("convolution backward data", c.bwdD, arg(argDiffDst, ddst), arg(argWeights, wm), arg(argDiffSrc, c.dx.m)); err != nil {
		return nil, err
	}
	return c.dx, nil
}

// ---- batch normalisation ----

type batchNorm struct {
	s       *stream
	spec    train.BatchNormSpec
	inShape []int
	inMD    memDesc

	fwdT, fwdI, bwd                              *prim
	scale, shift, mean, variance, dscale, dshift *mem
	ws                                           *mem
	dyS                                          slot
	x                                            *tensor
	trained                                      bool
	y, dx                                        *tensor
	// relu16: x is a fused ReLU's output in aBcd16b layout, with y, dx
	// and the output gradient in the same: a training Forward runs
	// shim_bn_fwd16 (two passes over x where oneDNN makes three) and
	// Backward shim_bn_bwd16, the ReLU's backward pass fused in (see
	// tensor.maskedBy).
	relu16 bool
	sync   syncState // SyncBN (syncbn.go)
}

const bnFlags = C.dnnl_use_scale | C.dnnl_use_shift

func (b *Backend) NewBatchNorm(s train.BatchNormSpec) (train.BatchNormOp, error) {
	if s.C <= 0 {
		return nil, fmt.Errorf("batchnorm %+v: invalid", s)
	}
	if s.Eps == 0 {
		s.Eps = 1e-5
	}
	return &batchNorm{s: b.s, spec: s}, nil
}

func (n *batchNorm) Close() {
	freePrims(&n.fwdT, &n.fwdI, &n.bwd)
	freeMems(&n.scale, &n.shift, &n.mean, &n.variance, &n.dscale, &n.dshift, &n.ws)
	freeSlots(&n.dyS)
	n.sync.free()
	release(n.y, n.dx)
	n.y, n.dx, n.inShape, n.x = nil, nil, nil, nil
}

func (n *batchNorm) setup(x *tensor) error {
	n.s.bind(n.s.bnThreads)
	n.Close()
	md := x.m.md
	eps := C.float(n.spec.Eps)
	var d C.dnnl_batch_normalization_desc_t
	var err error
	if err = check("batchnorm forward", C.dnnl_batch_normalization_forward_desc_init(&d, C.dnnl_forward_training, &md, eps, bnFlags)); err != nil {
		return err
	}
	if n.fwdT, err = newPrim("batchnorm forward", unsafe.Pointer(&d), nil); err != nil {
		return err
	}
	if err = check("batchnorm inference", C.dnnl_batch_normalization_forward_desc_init(&d, C.dnnl_forward_inference, &md, eps, bnFlags|C.dnnl_use_global_stats)); err != nil {
		return err
	}
	if n.fwdI, err = newPrim("batchnorm inference", unsafe.Pointer(&d), nil); err != nil {
		return err
	}
	if err = check("batchnorm backward", C.dnnl_batch_normalization_backward_desc_init(&d, C.dnnl_backward, &md, &md, eps, bnFlags)); err != nil {
		return err
	}
	if n.bwd, err = newPrim("batchnorm backward", unsafe.Pointer(&d), n.fwdT); err != nil {
		return err
	}
	cs := []int{n.spec.C}
	for _, p := range []**mem{&n.scale, &n.shift, &n.dscale, &n.dshift} {
		if err = load(p, cs, nil); err != nil {
			return err
		}
	}
	if n.mean, err = newMem(n.fwdT.md(argMean)); err != nil {
		return err
	}
	if n.variance, err = newMem(n.fwdT.md(argVariance)); err != nil {
		return err
	}
	if n.ws, err = workspace(n.fwdT); err != nil {
		return err
	}
	if err = reset(n.s, &n.y, x.shape, n.fwdT.md(argDst)); err != nil {
		return err
	}
	if err = reset(n.s, &n.dx, x.shape, n.bwd.md(argDiffSrc)); err != nil {
		return err
	}
	n.relu16 = false
	if len(x.shape) == 4 && x.nonNeg && n.spec.C%16 == 0 {
		b16, _ := newMDOf(x.shape, C.dnnl_f32, C.dnnl_aBcd16b)
		ddst := n.bwd.md(argDiffDst)
		n.relu16 = mdEqual(&md, &b16) && mdEqual(&n.y.m.md, &b16) && mdEqual(&n.dx.m.md, &b16) && mdEqual(&ddst, &b16)
	}
	n.inShape, n.inMD = slices.Clone(x.shape), md
	return nil
}

// prepare checks x and specialises the op to its shape and layout.
func (n *batchNorm) prepare(xt train.Tensor) (*tensor, error) {
	x, err := asTensor(xt, 2, 4)
	if err != nil {
		return nil, err
	}
	if x.shape[1] != n.spec.C {
		return nil, fmt.Errorf("batchnorm: input %v has %d channels, want %d", x.shape, x.shape[1], n.spec.C)
	}
	if !slices.Equal(x.shape, n.inShape) || !mdEqual(&x.m.md, &n.inMD) {
		if err := n.setup(x); err != nil {
			n.Close()
			return nil, err
		}
	}
	return x, nil
}

func (n *batchNorm) Forward(xt train.Tensor, gamma, beta, mean, variance []float32, training bool) (train.Tensor, error) {
	x, err := n.prepare(xt)
	if err != nil {
		return nil, err
	}
	c := n.spec.C
	copy(n.scale.floats(c), gamma)
	copy(n.shift.floats(c), beta)
	n.x, n.trained, n.sync.count = x, training, 0
	if !training {
		copy(n.mean.floats(c), mean)
		copy(n.variance.floats(c), variance)
		err := n.s.execThreads("batchnorm inference", n.fwdI, n.s.bnThreads, arg(argSrc, x.m), arg(argMean, n.mean), arg(argVariance, n.variance),
			arg(argScale, n.scale), arg(argShift, n.shift), arg(argDst, n.y.m))
		if err != nil {
			return nil, err
		}
		return n.y, nil
	}
	if n.relu16 && x.nonNeg && len(gamma) >= c && len(beta) >= c {
		s := n.inShape
		f := func(m *mem) *C.float { return (*C.float)(C.shim_data(m.m)) }
		C.shim_bn_fwd16(f(x.m), f(n.y.m), f(n.scale), f(n.shift), C.float(n.spec.Eps), f(n.mean), f(n.variance),
			C.int(s[0]), C.int(c), C.int(s[2]*s[3]), C.int(n.s.bnThreads))
		copy(mean, n.mean.floats(c))
		copy(variance, n.variance.floats(c))
		return n.y, nil
	}
	args := []execArg{arg(argSrc, x.m), arg(argScale, n.scale), arg(argShift, n.shift), arg(argDst, n.y.m),
		arg(argMean, n.mean), arg(argVariance, n.variance)}
	if n.ws != nil {
		args = append(args, arg(argWorkspace, n.ws))
	}
	if err := n.s.execThreads("batchnorm forward", n.fwdT, n.s.bnThreads, args...); err != nil {
		return nil, err
	}
	copy(mean, n.mean.floats(c))
	copy(variance, n.variance.floats(c))
	return n.y, nil
}

func (n *batchNorm) Backward(dyt train.Tensor, gamma, beta, dgamma, dbeta []float32) (train.Tensor, error) {
	return n.backward(dyt, gamma, beta, dgamma, dbeta, n.relu16 && n.x != nil && n.x.nonNeg)
}

// backward is Backward, with the ReLU before the layer fused in when
// relu16 (then dx is masked where x is 0 and says so in maskedBy).
func (n *batchNorm) backward(dyt train.Tensor, gamma, beta, dgamma, dbeta []float32, relu16 bool) (train.Tensor, error) {
	if n.x == nil || !n.trained {
		return nil, fmt.Errorf("batchnorm: Backward needs a training Forward first")
	}
	dy, err := asTensor(dyt, 2, 4)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(dy.shape, n.inShape) {
		return nil, fmt.Errorf("batchnorm: gradient %v, want %v", dy.shape, n.inShape)
	}
	ddst, err := n.dyS.get(n.s, dy.m, n.bwd.md(argDiffDst))
	if err != nil {
		return nil, err
	}
	c := n.spec.C
	n.dx.maskedBy = nil
	if relu16 {
		if len(dgamma) < c || len(dbeta) < c || len(gamma) < c {
			return nil, fmt.Errorf("batchnorm: %d channels, parameters of %d, %d, %d", c, len(gamma), len(dgamma), len(dbeta))
		}
		s := n.inShape
		f := func(m *mem) *C.float { return (*C.float)(C.shim_data(m.m)) }
		C.shim_bn_bwd16(f(n.x.m), f(ddst), f(n.dx.m), f(n.mean), f(n.variance), (*C.float)(unsafe.Pointer(&gamma[0])), C.float(n.spec.Eps),
			(*C.float)(unsafe.Pointer(&dgamma[0])), (*C.float)(unsafe.Pointer(&dbeta[0])), C.int(s[0]), C.int(c), C.int(s[2]*s[3]), C.int(n.s.bnThreads))
		n.dx.maskedBy = n.x.m
		return n.dx, nil
	}
	// oneDNN 2.6 rejects the backward pass without the shift argument even
	// though the gradient does not depend on it.
	args := []execArg{arg(argSrc, n.x.m), arg(argMean, n.mean), arg(argVariance, n.variance), arg(argDiffDst, ddst),
		arg(argScale, n.scale), arg(argShift, n.shift), arg(argDiffSrc, n.dx.m), arg(argDiffScale, n.dscale), arg(argDiffShift, n.dshift)}
	if n.ws != nil {
		args = append(args, arg(argWorkspace, n.ws))
	}
	if err := n.s.execThreads("batchnorm backward", n.bwd, n.s.bnThreads, args...); err != nil {
		return nil, err
	}
	copy(dgamma, n.dscale.floats(c))
	copy(dbeta, n.dshift.floats(c))
	return n.dx, nil
}

// ---- ReLU ----

type relu struct {
	s       *stream
	inShape []int
	inMD    memDesc
	fwd     *prim
	bwd     *prim
	dyS     slot
	x       *tensor
	y, dx   *tensor
}

func (b *Backend) NewReLU() (train.ReLUOp, error) { return &relu{s: b.s}, nil }

func (r *relu) Close() {
	freePrims(&r.fwd, &r.bwd)
	freeSlots(&r.dyS)
	release(r.y, r.dx)
	r.y, r.dx, r.inShape, r.x = nil, nil, nil, nil
}

func (r *relu) setup(x *tensor) error {
	r.s.bind(r.s.threads)
	r.Close()
	md := x.m.md
	var d C.dnnl_eltwise_desc_t
	var err error
	if err = check("relu forward", C.dnnl_eltwise_forward_desc_init(&d, C.dnnl_forward_training, C.dnnl_eltwise_relu, &md, 0, 0)); err != nil {
		return err
	}
	if r.fwd, err = newPrim("relu forward", unsafe.Pointer(&d), nil); err != nil {
		return err
	}
	if err = check("relu backward", C.dnnl_eltwise_backward_desc_init(&d, C.dnnl_eltwise_relu, &md, &md, 0, 0)); err != nil {
		return err
	}
	if r.bwd, err = newPrim("relu backward", unsafe.Pointer(&d), r.fwd); err != nil {
		return err
	}
	if err = reset(r.s, &r.y, x.shape, r.fwd.md(argDst)); err != nil {
		return err
	}
	if err = reset(r.s, &r.dx, x.shape, r.bwd.md(argDiffSrc)); err != nil {
		return err
	}
	r.inShape, r.inMD = slices.Clone(x.shape), md
	return nil
}

func (r *relu) Forward(xt train.Tensor) (train.Tensor, error) {
	x, err := asTensor(xt)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(x.shape, r.inShape) || !mdEqual(&x.m.md, &r.inMD) {
		if err := r.setup(x); err != nil {
			r.Close()
			return nil, err
		}
	}
	if err := r.s.exec("relu forward", r.fwd, arg(argSrc, x.m), arg(argDst, r.y.m)); err != nil {
		return nil, err
	}
	r.x = x
	return r.y, nil
}

func (r *relu) Backward(dyt train.Tensor) (train.Tensor, error) {
	dy, err := asTensor(dyt)
	if err != nil {
		return nil, err
	}
	if r.x == nil || !slices.Equal(dy.shape, r.inShape) {
		return nil, fmt.Errorf("relu: gradient does not match the last Forward")
	}
	ddst, err := r.dyS.get(r.s, dy.m, r.bwd.md(argDiffDst))
	if err != nil {
		return nil, err
	}
	if err := r.s.exec("relu backward", r.bwd, arg(argSrc, r.x.m), arg(argDiffDst, ddst), arg(argDiffSrc, r.dx.m)); err != nil {
		return nil, err
	}
	return r.dx, nil
}

// ---- pooling ----

type pool struct {
	s       *stream
	spec    train.PoolSpec
	inShape []int
	inMD    memDesc
	fwd     *prim
	bwd     *prim
	ws      *mem
	dyS     slot
	y, dx   *tensor
	ran     bool
}

func (b *Backend) NewPool(s train.PoolSpec) (train.PoolOp, error) {
	if s.KernelH <= 0 || s.KernelW <= 0 || s.StrideH <= 0 || s.StrideW <= 0 || s.PadH < 0 || s.PadW < 0 ||
		s.PadH*2 > s.KernelH || s.PadW*2 > s.KernelW {
		return nil, fmt.Errorf("pool %+v: invalid", s)
	}
	return &pool{s: b.s, spec: s}, nil
}

func (p *pool) Close() {
	freePrims(&p.fwd, &p.bwd)
	freeMems(&p.ws)
	freeSlots(&p.dyS)
	release(p.y, p.dx)
	p.y, p.dx, p.inShape, p.ran = nil, nil, nil, false
}

func (p *pool) setup(x *tensor) error {
	p.s.bind(p.s.threads)
	p.Close()
	s := p.spec
	oh, ow := train.ConvOut(x.shape[2], s.KernelH, s.StrideH, s.PadH), train.ConvOut(x.shape[3], s.KernelW, s.StrideW, s.PadW)
	if oh <= 0 || ow <= 0 {
		return fmt.Errorf("pool: input %v too small", x.shape)
	}
	alg := C.dnnl_alg_kind_t(C.dnnl_pooling_max)
	if s.Kind == train.AvgPool {
		alg = C.dnnl_pooling_avg_include_padding
		if s.ExcludePad {
			alg = C.dnnl_pooling_avg_exclude_padding
		}
	}
	src := x.m.md
	outShape := []int{x.shape[0], x.shape[1], oh, ow}
	dstAny, _ := newMD(outShape, true)
	strides, kernel, dil, pads := dims([]int{s.StrideH, s.StrideW}), dims([]int{s.KernelH, s.KernelW}), dims([]int{0, 0}), dims([]int{s.PadH, s.PadW})
	var d C.dnnl_pooling_v2_desc_t
	var err error
	if err = check("pooling forward", C.dnnl_pooling_v2_forward_desc_init(&d, C.dnnl_forward_training, alg, &src, &dstAny,
		dimsPtr(&strides), dimsPtr(&kernel), dimsPtr(&dil), dimsPtr(&pads), dimsPtr(&pads))); err != nil {
		return err
	}
	if p.fwd, err = newPrim("pooling forward", unsafe.Pointer(&d), nil); err != nil {
		return err
	}
	dst := p.fwd.md(argDst)
	if err = check("pooling backward", C.dnnl_pooling_v2_backward_desc_init(&d, alg, &src, &dst,
		dimsPtr(&strides), dimsPtr(&kernel), dimsPtr(&dil), dimsPtr(&pads), dimsPtr(&pads))); err != nil {
		return err
	}
	if p.bwd, err = newPrim("pooling backward", unsafe.Pointer(&d), p.fwd); err != nil {
		return err
	}
	if p.ws, err = workspace(p.fwd); err != nil {
		return err
	}
	if err = reset(p.s, &p.y, outShape, dst); err != nil {
		return err
	}
	if err = reset(p.s, &p.dx, x.shape, p.bwd.md(argDiffSrc)); err != nil {
		return err
	}
	p.inShape, p.inMD = slices.Clone(x.shape), src
	return nil
}

func (p *pool) Forward(xt train.Tensor, training bool) (train.Tensor, error) {
	x, err := asTensor(xt, 4)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(x.shape, p.inShape) || !mdEqual(&x.m.md, &p.inMD) {
		if err := p.setup(x); err != nil {
			p.Close()
			return nil, err
		}
	}
	args := []execArg{arg(argSrc, x.m), arg(argDst, p.y.m)}
	if p.ws != nil {
		args = append(args, arg(argWorkspace, p.ws))
	}
	if err := p.s.exec("pooling forward", p.fwd, args...); err != nil {
		return nil, err
	}
	p.ran = true
	return p.y, nil
}

func (p *pool) Backward(dyt train.Tensor) (train.Tensor, error) {
	dy, err := asTensor(dyt, 4)
	if err != nil {
		return nil, err
	}
	if !p.ran || !slices.Equal(dy.shape, p.y.shape) {
		return nil, fmt.Errorf("pool: gradient does not match the last Forward")
	}
	ddst, err := p.dyS.get(p.s, dy.m, p.bwd.md(argDiffDst))
	if err != nil {
		return nil, err
	}
	args := []execArg{arg(argDiffDst, ddst), arg(argDiffSrc, p.dx.m)}
	if p.ws != nil {
		args = append(args, arg(argWorkspace, p.ws))
	}
	if err := p.s.exec("pooling backward", p.bwd, args...); err != nil {
		return nil, err
	}
	return p.dx, nil
}

// ---- linear (inner product) ----

type linear struct {
	s       *stream
	spec    train.LinearSpec
	num     numerics
	inShape []int
	inMD    memDesc

	fwd, bwdD, bwdW            *prim
	wUser, bias, dwUser, dbias *mem
	wFwd, wBwd, dwMem          *mem
	wFwdR, wBwdR, dwR          *prim
	srcFwd, srcBwd, dyD        slot
	xR, dyR                    rounder // emulated reduced precision
	src                        *mem
	y, dx                      *tensor
}

func (b *Backend) NewLinear(s train.LinearSpec) (train.LinearOp, error) {
	if s.In <= 0 || s.Out <= 0 {
		return nil, fmt.Errorf("linear %+v: invalid", s)
	}
	return &linear{s: b.s, spec: s, num: b.num}, nil
}

func (l *linear) Close() {
	freePrims(&l.fwd, &l.bwdD, &l.bwdW, &l.wFwdR, &l.wBwdR, &l.dwR)
	freeMems(&l.wUser, &l.bias, &l.dwUser, &l.dbias, &l.wFwd, &l.wBwd, &l.dwMem)
	freeSlots(&l.srcFwd, &l.srcBwd, &l.dyD)
	freeRounders(&l.xR, &l.dyR)
	release(l.y, l.dx)
	l.y, l.dx, l.inShape, l.src = nil, nil, nil, nil
}

func (l *linear) setup(x *tensor) error {
	l.s.bind(l.s.threads)
	l.Close()
	n := x.shape[0]
	wShape := append([]int{l.spec.Out}, x.shape[1:]...)
	// The source, weights and output gradient in the compute type, the
	// rest f32.
	any := C.dnnl_format_tag_t(C.dnnl_format_tag_any)
	srcAny, err := newMDOf(x.shape, l.num.dt, any)
	if err != nil {
		return err
	}
	wAny, _ := newMDOf(wShape, l.num.dt, any)
	dsrcAny, _ := newMD(x.shape, true)
	dwAny, _ := newMD(wShape, true)
	bMD, _ := newMD([]int{l.spec.Out}, false)
	dstMD, _ := newMD([]int{n, l.spec.Out}, false)
	ddstMD, _ := newMDOf([]int{n, l.spec.Out}, l.num.dt, C.dnnl_ab)
	var d C.dnnl_inner_product_desc_t
	if err = check("inner product forward", C.dnnl_inner_product_forward_desc_init(&d, C.dnnl_forward_training, &srcAny, &wAny, &bMD, &dstMD)); err != nil {
		return err
	}
	if l.fwd, err = newPrim("inner product forward", unsafe.Pointer(&d), nil); err != nil {
		return err
	}
	if err = check("inner product backward data", C.dnnl_inner_product_backward_data_desc_init(&d, &dsrcAny, &wAny, &ddstMD)); err != nil {
		return err
	}
	if l.bwdD, err = newPrim("inner product backward data", unsafe.Pointer(&d), l.fwd); err != nil {
		return err
	}
	if err = check("inner product backward weights", C.dnnl_inner_product_backward_weights_desc_init(&d, &srcAny, &dwAny, &bMD, &ddstMD)); err != nil {
		return err
	}
	if l.bwdW, err = newPrim("inner product backward weights", unsafe.Pointer(&d), l.fwd); err != nil {
		return err
	}
	userMD, _ := newMD(wShape, false)
	for _, p := range []**mem{&l.wUser, &l.dwUser} {
		if *p, err = newMem(userMD); err != nil {
			return err
		}
	}
	for _, p := range []**mem{&l.bias, &l.dbias} {
		if *p, err = newMem(bMD); err != nil {
			return err
		}
	}
	if md := l.fwd.md(argWeights); !mdEqual(&md, &userMD) {
		if l.wFwd, err = newMem(md); err != nil {
			return err
		}
		if l.wFwdR, err = newReorder(&userMD, &md); err != nil {
			return err
		}
	}
	if md := l.bwdD.md(argWeights); !mdEqual(&md, &userMD) {
		if l.wBwd, err = newMem(md); err != nil {
			return err
		}
		if l.wBwdR, err = newReorder(&userMD, &md); err != nil {
			return err
		}
	}
	if md := l.bwdW.md(argDiffWeights); !mdEqual(&md, &userMD) {
		if l.dwMem, err = newMem(md); err != nil {
			return err
		}
		if l.dwR, err = newReorder(&md, &userMD); err != nil {
			return err
		}
	}
	if err = reset(l.s, &l.y, []int{n, l.spec.Out}, l.fwd.md(argDst)); err != nil {
		return err
	}
	if err = reset(l.s, &l.dx, x.shape, l.bwdD.md(argDiffSrc)); err != nil {
		return err
	}
	l.inShape, l.inMD = slices.Clone(x.shape), x.m.md
	return nil
}

// loadWeights copies w into the op's plain weight buffer, rounded when
// reduced precision is emulated.
func (l *linear) loadWeights(w []float32) {
	copy(l.wUser.floats(len(w)), w)
	if l.num.emulate != train.Float32 {
		roundMem(l.s, l.num.emulate, l.wUser, l.wUser)
	}
}

func (l *linear) Forward(xt train.Tensor, w, b []float32) (train.Tensor, error) {
	x, err := asTensor(xt)
	if err != nil {
		return nil, err
	}
	if train.Numel(x.shape) != x.shape[0]*l.spec.In {
		return nil, fmt.Errorf("linear: input %v does not flatten to %d features", x.shape, l.spec.In)
	}
	if !slices.Equal(x.shape, l.inShape) || !mdEqual(&x.m.md, &l.inMD) {
		if err := l.setup(x); err != nil {
			l.Close()
			return nil, err
		}
	}
	l.loadWeights(w)
	copy(l.bias.floats(len(b)), b)
	wm := l.wUser
	if l.wFwd != nil {
		if err := l.s.exec("reorder weights", l.wFwdR, arg(argSrc, l.wUser), arg(argDst, l.wFwd)); err != nil {
			return nil, err
		}
		wm = l.wFwd
	}
	src, err := l.srcFwd.get(l.s, x.m, l.fwd.md(argSrc))
	if err != nil {
		return nil, err
	}
	if p := l.num.emulate; p != train.Float32 {
		if src == x.m { // x belongs to the layer before
			if src, err = l.xR.round(l.s, p, src); err != nil {
				return nil, err
			}
		} else {
			roundMem(l.s, p, src, src)
		}
	}
	if err := l.s.exec("inner product forward", l.fwd, arg(argSrc, src), arg(argWeights, wm), arg(argBias, l.bias), arg(argDst, l.y.m)); err != nil {
		return nil, err
	}
	l.src = src
	return l.y, nil
}

func (l *linear) Backward(dyt train.Tensor, w, dw, db []float32, needDX bool) (train.Tensor, error) {
	if l.src == nil {
		return nil, fmt.Errorf("linear: Backward before Forward")
	}
	dy, err := asTensor(dyt, 2)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(dy.shape, l.y.shape) {
		return nil, fmt.Errorf("linear: gradient %v, want %v", dy.shape, l.y.shape)
	}
	dym := dy.m
	if p := l.num.emulate; p != train.Float32 {
		if dym, err = l.dyR.round(l.s, p, dym); err != nil {
			return nil, err
		}
	}
	ddst, err := l.dyD.get(l.s, dym, l.bwdW.md(argDiffDst))
	if err != nil {
		return nil, err
	}
	src, err := l.srcBwd.get(l.s, l.src, l.bwdW.md(argSrc))
	if err != nil {
		return nil, err
	}
	dwm := l.dwUser
	if l.dwMem != nil {
		dwm = l.dwMem
	}
	if err := l.s.exec("inner product backward weights", l.bwdW, arg(argSrc, src), arg(argDiffDst, ddst),
		arg(argDiffWeights, dwm), arg(argDiffBias, l.dbias)); err != nil {
		return nil, err
	}
	if l.dwMem != nil {
		if err := l.s.exec("reorder weight gradient", l.dwR, arg(argSrc, l.dwMem), arg(argDst, l.dwUser)); err != nil {
			return nil, err
		}
	}
	copy(dw, l.dwUser.floats(len(dw)))
	copy(db, l.dbias.floats(len(db)))
	if !needDX {
		return nil, nil
	}
	wm := l.wUser
	if l.wBwd != nil {
		l.loadWeights(w)
		if err := l.s.exec("reorder weights", l.wBwdR, arg(argSrc, l.wUser), arg(argDst, l.wBwd)); err != nil {
			return nil, err
		}
		wm = l.wBwd
	}
	if err := l.s.exec("inner product backward data", l.bwdD, arg(argDiffDst, ddst), arg(argWeights, wm), arg(argDiffSrc, l.dx.m)); err != nil {
		return nil, err
	}
	return l.dx, nil
}

// ---- add ----

type add struct {
	s     *stream
	shape []int
	aMD   memDesc
	p     *prim
	bS    slot
	y     *tensor
}

func (b *Backend) NewAdd() (train.AddOp, error) { return &add{s: b.s}, nil }

func (a *add) Close() {
	freePrims(&a.p)
	freeSlots(&a.bS)
	release(a.y)
	a.y, a.shape = nil, nil
}

func (a *add) Forward(at, bt train.Tensor) (train.Tensor, error) {
	x, err := asTensor(at)
	if err != nil {
		return nil, err
	}
	y, err := asTensor(bt)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(x.shape, y.shape) {
		return nil, fmt.Errorf("add: shapes %v and %v differ", x.shape, y.shape)
	}
	if !slices.Equal(x.shape, a.shape) || !mdEqual(&x.m.md, &a.aMD) {
		a.Close()
		md := x.m.md
		var d C.dnnl_binary_desc_t
		if err := check("binary add", C.dnnl_binary_desc_init(&d, C.dnnl_binary_add, &md, &md, &md)); err != nil {
			return nil, err
		}
		a.s.bind(a.s.threads)
		if a.p, err = newPrim("binary add", unsafe.Pointer(&d), nil); err != nil {
			return nil, err
		}
		if err := reset(a.s, &a.y, x.shape, a.p.md(argDst)); err != nil {
			return nil, err
		}
		a.shape, a.aMD = slices.Clone(x.shape), md
	}
	src1, err := a.bS.get(a.s, y.m, a.aMD)
	if err != nil {
		return nil, err
	}
	if err := a.s.exec("binary add", a.p, arg(argSrc, x.m), arg(argSrc1, src1), arg(argDst, a.y.m)); err != nil {
		return nil, err
	}
	return a.y, nil
}
