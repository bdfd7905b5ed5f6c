package train

import (
	"fmt"
	"math"
	"slices"
)

var _ SyncBatchNormOp = (*refBN)(nil)

// ForwardSync implements SyncBatchNormOp.
func (b *refBN) ForwardSync(xt Tensor, gamma, beta, mean, variance []float32, reduce func([]float64) error) (Tensor, int, error) {
	x, err := asRef(xt, 2, 4)
	if err != nil {
		return nil, 0, err
	}
	n, c, hw := planes(x.shape)
	if c != b.s.C {
		return nil, 0, fmt.Errorf("batchnorm: input %v has %d channels, want %d", x.shape, c, b.s.C)
	}
	sums := make([]float64, 2*c+1)
	for ch := range c {
		var s, ss float64
		for in := range n {
			for _, e := range x.data[(in*c+ch)*hw : (in*c+ch+1)*hw] {
				s += float64(e)
				ss += float64(e) * float64(e)
			}
		}
		sums[ch], sums[c+ch] = s, ss
	}
	sums[2*c] = float64(n * hw)
	if err := reduce(sums); err != nil {
		return nil, 0, fmt.Errorf("batchnorm: reduce statistics: %w", err)
	}
	cnt := sums[2*c]
	for ch := range c {
		m := sums[ch] / cnt
		mean[ch], variance[ch] = float32(m), float32(max(sums[c+ch]/cnt-m*m, 0))
	}
	// Normalise with the global statistics in float64, as Forward does
	// with a batch's own: rounding them to float32 first would move
	// activations near a following ReLU's kink across it.
	b.x, b.trained, b.count = x, true, cnt
	b.y = ensure(b.y, x.shape...)
	eps := float64(b.s.eps())
	for ch := range c {
		m := sums[ch] / cnt
		inv := 1 / math.Sqrt(max(sums[c+ch]/cnt-m*m, 0)+eps)
		b.mean[ch], b.invSD[ch] = m, inv
		g, be := float64(gamma[ch]), float64(beta[ch])
		for in := range n {
			src := x.data[(in*c+ch)*hw : (in*c+ch+1)*hw]
			dst := b.y.data[(in*c+ch)*hw : (in*c+ch+1)*hw]
			for i, e := range src {
				dst[i] = float32(g*(float64(e)-m)*inv + be)
			}
		}
	}
	return b.y, int(cnt), nil
}

// BackwardSync implements SyncBatchNormOp.
func (b *refBN) BackwardSync(dyt Tensor, gamma, beta, dgamma, dbeta []float32, reduce func([]float64) error) (Tensor, error) {
	if b.x == nil || !b.trained || b.count == 0 {
		return nil, fmt.Errorf("batchnorm: BackwardSync needs a ForwardSync first")
	}
	dy, err := asRef(dyt, 2, 4)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(dy.shape, b.x.shape) {
		return nil, fmt.Errorf("batchnorm: gradient %v, want %v", dy.shape, b.x.shape)
	}
	n, c, hw := planes(b.x.shape)
	sums := make([]float64, 2*c)
	for ch := range c {
		m, inv := b.mean[ch], b.invSD[ch]
		var sdy, sdyx float64
		for in := range n {
			xs := b.x.data[(in*c+ch)*hw : (in*c+ch+1)*hw]
			for i, g := range dy.data[(in*c+ch)*hw : (in*c+ch+1)*hw] {
				sdy += float64(g)
				sdyx += float64(g) * (float64(xs[i]) - m) * inv
			}
		}
		sums[ch], sums[c+ch] = sdy, sdyx
		dbeta[ch], dgamma[ch] = float32(sdy), float32(sdyx)
	}
	if err := reduce(sums); err != nil {
		return nil, fmt.Errorf("batchnorm: reduce gradients: %w", err)
	}
	b.dx = ensure(b.dx, b.x.shape...)
	for ch := range c {
		m, inv := b.mean[ch], b.invSD[ch]
		g1, g2 := sums[ch]/b.count, sums[c+ch]/b.count
		k := float64(gamma[ch]) * inv
		for in := range n {
			xs := b.x.data[(in*c+ch)*hw : (in*c+ch+1)*hw]
			dst := b.dx.data[(in*c+ch)*hw : (in*c+ch+1)*hw]
			for i, g := range dy.data[(in*c+ch)*hw : (in*c+ch+1)*hw] {
				xh := (float64(xs[i]) - m) * inv
				dst[i] = float32(k * (float64(g) - g1 - xh*g2))
			}
		}
	}
	return b.dx, nil
}
