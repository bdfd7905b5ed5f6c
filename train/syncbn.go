package train

import (
	"fmt"
	"math"
)

var _ SyncBatchNormOp = (*refBN)(nil)

// ForwardSync implements SyncBatchNormOp.
func (b *refBN) ForwardSync(xt Tensor, gamma, beta, mean, variance []float32, reduce func([]float64) error) (Tensor, int, error) {
	x, err := b.input(xt)
	if err != nil {
		return nil, 0, err
	}
	n, c, hw := planes(x.shape)
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
	// Normalise with the global statistics in float64, as Forward does
	// with a batch's own: rounding them to float32 first would move
	// activations near a following ReLU's kink across it.
	cnt, eps := sums[2*c], float64(b.s.eps())
	for ch := range c {
		m := sums[ch] / cnt
		v := max(sums[c+ch]/cnt-m*m, 0)
		mean[ch], variance[ch] = float32(m), float32(v)
		b.mean[ch], b.invSD[ch] = m, 1/math.Sqrt(v+eps)
	}
	b.x, b.trained, b.count = x, true, cnt
	return b.normalize(gamma, beta), int(cnt), nil
}

// BackwardSync implements SyncBatchNormOp.
func (b *refBN) BackwardSync(dyt Tensor, gamma, beta, dgamma, dbeta []float32, reduce func([]float64) error) (Tensor, error) {
	if b.x == nil || !b.trained || b.count == 0 {
		return nil, fmt.Errorf("batchnorm: BackwardSync needs a ForwardSync first")
	}
	return b.backward(dyt, gamma, dgamma, dbeta, reduce, b.count)
}
