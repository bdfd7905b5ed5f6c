//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn

// #include "shim.h"
import "C"

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/faster-training/faster/train"
)

var _ train.SyncBatchNormOp = (*batchNorm)(nil)

// syncState is what a batchNorm keeps for synchronised BatchNorm.
//
// ForwardSync takes the local statistics from oneDNN's training forward,
// sums [m·mean, m·(var+mean²), m] over the replicas, and normalises with
// the global mean and variance (the inference primitive, which uses the
// statistics it is given). BackwardSync runs oneDNN's backward with the
// global statistics, which gives, with the local count m and sums
// S1 = Σdy, S2 = Σdy·x̂,
//
//	dx_local = γ/σ·(dy − S1/m − x̂·S2/m),
//
// sums [S1, S2] over the replicas into G1, G2 (global count M) and adds
//
//	γ/σ·((S1/m − G1/M) + x̂·(S2/m − G2/M))
//
// which is a BatchNorm of x with the global statistics and per-channel
// scale γ/σ·(S2/m − G2/M) and shift γ/σ·(S1/m − G1/M): the inference
// primitive again, into corr, then a binary add into dx. Only per-channel
// values are computed in Go.
type syncState struct {
	count, local   int // global and local elements per channel of the last ForwardSync (0: none)
	sums           []float64
	cscale, cshift *mem    // correction coefficients
	corr           *tensor // the correction, in the inference primitive's layout
	add            *prim   // dx += corr
}

func (st *syncState) free() {
	freeMems(&st.cscale, &st.cshift)
	freePrims(&st.add)
	release(st.corr)
	st.corr, st.count = nil, 0
}

func (st *syncState) buf(n int) []float64 {
	st.sums = slices.Grow(st.sums[:0], n)[:n]
	return st.sums
}

// perChannel is the number of elements per channel of x (N·H·W).
func perChannel(shape []int) int { return train.Numel(shape) / shape[1] }

// ForwardSync implements train.SyncBatchNormOp.
func (n *batchNorm) ForwardSync(xt train.Tensor, gamma, beta, mean, variance []float32, reduce func([]float64) error) (train.Tensor, int, error) {
	x, err := n.prepare(xt)
	if err != nil {
		return nil, 0, err
	}
	c := n.spec.C
	copy(n.scale.floats(c), gamma)
	copy(n.shift.floats(c), beta)
	n.x, n.trained, n.sync.count = x, false, 0
	args := []execArg{arg(argSrc, x.m), arg(argScale, n.scale), arg(argShift, n.shift), arg(argDst, n.y.m),
		arg(argMean, n.mean), arg(argVariance, n.variance)}
	if n.ws != nil {
		args = append(args, arg(argWorkspace, n.ws))
	}
	if err := n.s.execThreads("batchnorm forward", n.fwdT, n.s.bnThreads, args...); err != nil {
		return nil, 0, err
	}
	m := perChannel(x.shape)
	lm, lv := n.mean.floats(c), n.variance.floats(c)
	sums := n.sync.buf(2*c + 1)
	for ch := range c {
		mu := float64(lm[ch])
		sums[ch], sums[c+ch] = float64(m)*mu, float64(m)*(float64(lv[ch])+mu*mu)
	}
	sums[2*c] = float64(m)
	if err := reduce(sums); err != nil {
		return nil, 0, fmt.Errorf("batchnorm: reduce statistics: %w", err)
	}
	total := sums[2*c]
	if total < float64(m) || total != math.Trunc(total) {
		return nil, 0, fmt.Errorf("batchnorm: reduced element count %g (local %d)", total, m)
	}
	for ch := range c {
		mu := sums[ch] / total
		lm[ch], lv[ch] = float32(mu), float32(max(sums[c+ch]/total-mu*mu, 0))
	}
	copy(mean, lm)
	copy(variance, lv)
	err = n.s.execThreads("batchnorm forward (global statistics)", n.fwdI, n.s.bnThreads, arg(argSrc, x.m), arg(argMean, n.mean),
		arg(argVariance, n.variance), arg(argScale, n.scale), arg(argShift, n.shift), arg(argDst, n.y.m))
	if err != nil {
		return nil, 0, err
	}
	n.trained, n.sync.count, n.sync.local = true, int(total), m
	return n.y, int(total), nil
}

// BackwardSync implements train.SyncBatchNormOp.
func (n *batchNorm) BackwardSync(dyt train.Tensor, gamma, beta, dgamma, dbeta []float32, reduce func([]float64) error) (train.Tensor, error) {
	if n.x == nil || !n.trained || n.sync.count == 0 {
		return nil, fmt.Errorf("batchnorm: BackwardSync needs a ForwardSync first")
	}
	// The local backward pass, with the global statistics ForwardSync left
	// in n.mean and n.variance.
	dx, err := n.backward(dyt, gamma, beta, dgamma, dbeta, false) // the correction below is not masked
	if err != nil {
		return nil, err
	}
	c := n.spec.C
	sums := n.sync.buf(2 * c)
	for ch := range c {
		sums[ch], sums[c+ch] = float64(dbeta[ch]), float64(dgamma[ch])
	}
	if err := reduce(sums); err != nil {
		return nil, fmt.Errorf("batchnorm: reduce gradients: %w", err)
	}
	if err := n.setupSync(); err != nil {
		return nil, err
	}
	m, total := float64(n.sync.local), float64(n.sync.count)
	variance, cs, csh := n.variance.floats(c), n.sync.cscale.floats(c), n.sync.cshift.floats(c)
	for ch := range c {
		k := float64(gamma[ch]) / math.Sqrt(float64(variance[ch])+float64(n.spec.Eps))
		cs[ch] = float32(k * (float64(dgamma[ch])/m - sums[c+ch]/total))
		csh[ch] = float32(k * (float64(dbeta[ch])/m - sums[ch]/total))
	}
	err = n.s.execThreads("batchnorm gradient correction", n.fwdI, n.s.bnThreads, arg(argSrc, n.x.m), arg(argMean, n.mean),
		arg(argVariance, n.variance), arg(argScale, n.sync.cscale), arg(argShift, n.sync.cshift), arg(argDst, n.sync.corr.m))
	if err != nil {
		return nil, err
	}
	if err := n.s.exec("batchnorm gradient correction add", n.sync.add, arg(argSrc, n.dx.m), arg(argSrc1, n.sync.corr.m), arg(argDst, n.dx.m)); err != nil {
		return nil, err
	}
	return dx, nil
}

// setupSync makes the correction's buffers and add primitive on first
// need (setup, on a new shape, frees them).
func (n *batchNorm) setupSync() error {
	n.s.bind(n.s.threads)
	if n.sync.add != nil {
		return nil
	}
	cs := []int{n.spec.C}
	if err := load(&n.sync.cscale, cs, nil); err != nil {
		return err
	}
	if err := load(&n.sync.cshift, cs, nil); err != nil {
		return err
	}
	if err := reset(n.s, &n.sync.corr, n.inShape, n.fwdI.md(argDst)); err != nil {
		return err
	}
	dxMD, corrMD := n.dx.m.md, n.sync.corr.m.md
	var d C.dnnl_binary_desc_t
	if err := check("binary add", C.dnnl_binary_desc_init(&d, C.dnnl_binary_add, &dxMD, &corrMD, &dxMD)); err != nil {
		return err
	}
	p, err := newPrim("binary add", unsafe.Pointer(&d), nil)
	if err != nil {
		return err
	}
	n.sync.add = p
	return nil
}
