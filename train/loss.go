package train

import (
	"fmt"
	"math"
	"slices"
)

// CrossEntropy is softmax cross-entropy averaged over the batch (PyTorch's
// nn.CrossEntropyLoss), computed on the host from the logits.
type CrossEntropy struct {
	// LabelSmoothing ε in [0, 1] mixes the one-hot target with the uniform
	// distribution, as nn.CrossEntropyLoss(label_smoothing=ε): the target
	// of class j is (1−ε)·[j = label] + ε/K, and the loss of a sample
	// (1−ε)·(−log p_label) + ε/K·Σ_j (−log p_j).
	LabelSmoothing float64
	// GradScale multiplies the gradient Forward returns (0 means 1): loss
	// scaling, and the weight of one device's share of a batch.
	GradScale float64
	b         Backend
	logits    []float32
	grad      []float32
	dx        Tensor
}

// NewCrossEntropy makes the loss on backend b.
func NewCrossEntropy(b Backend) *CrossEntropy { return &CrossEntropy{b: b} }

// Result is the loss and accuracy counts of one batch.
type Result struct {
	Loss     float64 // mean over the batch
	Correct1 int     // samples whose label is the top prediction
	Correct5 int     // samples whose label is among the top five
	Samples  int
}

// Forward computes the loss of logits (N×K) against labels. With grad it
// also returns dL/dlogits (owned by the loss, valid until the next call).
func (c *CrossEntropy) Forward(logits Tensor, labels []int, grad bool) (Result, Tensor, error) {
	s := logits.Shape()
	if len(s) != 2 || s[0] != len(labels) {
		return Result{}, nil, fmt.Errorf("cross-entropy: logits %v for %d labels", s, len(labels))
	}
	n, k := s[0], s[1]
	c.logits = slices.Grow(c.logits[:0], n*k)[:n*k]
	if err := logits.Read(c.logits); err != nil {
		return Result{}, nil, err
	}
	c.grad = slices.Grow(c.grad[:0], n*k)[:n*k]
	var r Result
	r.Samples = n
	for i, y := range labels {
		if y < 0 || y >= k {
			return Result{}, nil, fmt.Errorf("cross-entropy: label %d out of range [0,%d)", y, k)
		}
		row := c.logits[i*k : (i+1)*k]
		m := float64(slices.Max(row))
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(float64(v) - m)
		}
		lse := m + math.Log(sum)
		if eps := c.LabelSmoothing; eps != 0 {
			all := 0.0
			for _, v := range row {
				all += lse - float64(v)
			}
			r.Loss += (1-eps)*(lse-float64(row[y])) + eps/float64(k)*all
		} else {
			r.Loss += lse - float64(row[y])
		}
		// The label's rank among the logits. A NaN ranks above every
		// number (torch.topk's order), so a NaN logit of the label is
		// never correct, and a NaN elsewhere pushes the label down.
		rank := 0
		ly := row[y]
		if ly != ly {
			rank = math.MaxInt32 // neither top-1 nor top-5
		}
		for j, v := range row {
			if v > ly || (v == ly && j < y) || (v != v && j != y) {
				rank++
			}
			c.grad[i*k+j] = float32(math.Exp(float64(v)-lse) / float64(n))
		}
		if eps := c.LabelSmoothing; eps != 0 {
			for j := range row {
				c.grad[i*k+j] -= float32(eps / float64(k) / float64(n))
			}
			c.grad[i*k+y] -= float32((1 - eps) / float64(n))
		} else {
			c.grad[i*k+y] -= 1 / float32(n)
		}
		if rank == 0 {
			r.Correct1++
		}
		if rank < 5 {
			r.Correct5++
		}
	}
	r.Loss /= float64(n)
	if !grad {
		return r, nil, nil
	}
	if g := float32(c.GradScale); g != 0 && g != 1 {
		for i := range c.grad {
			c.grad[i] *= g
		}
	}
	if c.dx == nil || !slices.Equal(c.dx.Shape(), s) {
		if c.dx != nil {
			c.dx.Release()
		}
		dx, err := c.b.NewTensor(s...)
		if err != nil {
			return Result{}, nil, err
		}
		c.dx = dx
	}
	if err := c.dx.Write(c.grad); err != nil {
		return Result{}, nil, err
	}
	return r, c.dx, nil
}

// Close releases the gradient tensor.
func (c *CrossEntropy) Close() {
	if c.dx != nil {
		c.dx.Release()
		c.dx = nil
	}
}
