package train

import (
	"fmt"
	"math"
)

// Memory is what a network needs to train on batches of one shape,
// estimated from the shapes alone (nothing is allocated).
type Memory struct {
	// Activations is the bytes of the tensors the layers own during a
	// training step: each layer's output (kept for its backward) and the
	// gradient it returns, at 4 bytes an element.
	Activations int64
	// Params is the bytes of the parameters with their gradients and the
	// optimiser's momentum (three copies of each).
	Params int64
}

// Total is Activations + Params.
func (m Memory) Total() int64 { return m.Activations + m.Params }

// EstimateMemory walks net for batches of n×c×h×w and returns what a
// training step keeps allocated. It errors when a layer cannot take the
// shape (a convolution whose window is larger than its input) or when the
// count overflows, which callers treat as "too large". The estimate
// counts what every backend holds (an output and an input gradient per
// op); a backend's scratch space comes on top, so callers budget it with
// a margin.
func EstimateMemory(net Layer, n, c, h, w int) (Memory, error) {
	e := estimator{}
	if _, err := e.walk(net, shape4{n, c, h, w}); err != nil {
		return Memory{}, err
	}
	for _, p := range net.Params() {
		n := 1.0 // from the shape: a model built on Shapes holds no values
		for _, d := range p.Shape {
			n *= float64(d)
		}
		e.params += 3 * n
	}
	if e.elems*4 > math.MaxInt64/2 || e.params*4 > math.MaxInt64/2 {
		return Memory{}, fmt.Errorf("batch %d×%d×%d×%d: the activations' size overflows", n, c, h, w)
	}
	return Memory{Activations: int64(e.elems * 4), Params: int64(e.params * 4)}, nil
}

type shape4 struct{ n, c, h, w int }

func (s shape4) elems() float64 { return float64(s.n) * float64(s.c) * float64(s.h) * float64(s.w) }

type estimator struct {
	elems  float64 // activation elements held (float64: the count may overflow int64 before it is refused)
	params float64
}

// hold counts a layer's output and the gradient it returns for its input.
func (e *estimator) hold(in, out shape4) { e.elems += out.elems() + in.elems() }

func (e *estimator) walk(l Layer, in shape4) (shape4, error) {
	switch l := l.(type) {
	case *Sequential:
		var err error
		for i, c := range l.Layers {
			if in, err = e.walk(c, in); err != nil {
				return in, fmt.Errorf("layer %d (%T): %w", i, c, err)
			}
		}
		return in, nil
	case *Residual:
		m, err := e.walk(l.Main, in)
		if err != nil {
			return m, err
		}
		if l.Shortcut != nil {
			s, err := e.walk(l.Shortcut, in)
			if err != nil {
				return s, fmt.Errorf("shortcut: %w", err)
			}
			if s != m {
				return m, fmt.Errorf("shortcut %v and main path %v differ", s, m)
			}
		}
		e.elems += 4 * m.elems() // the sum, its ReLU, the ReLU's gradient, the gradients' sum
		return m, nil
	case *Conv2D:
		s := l.Spec
		if in.c != s.In {
			return in, fmt.Errorf("%d input channels, the convolution takes %d", in.c, s.In)
		}
		out, err := window(in, s.Kernel, s.Kernel, s.stride(), s.stride(), s.Pad, s.Pad)
		out.c = s.Out
		if err != nil {
			return out, err
		}
		e.hold(in, out)
		if s.ReLU {
			e.elems += out.elems() // the fused ReLU's own tensor (its output, or the mask its backward takes)
		}
		return out, nil
	case *BatchNorm2D, *ReLU:
		e.hold(in, in)
		return in, nil
	case *Pool2D:
		s := l.Spec
		out, err := window(in, s.KernelH, s.KernelW, max(s.StrideH, 1), max(s.StrideW, 1), s.PadH, s.PadW)
		if err != nil {
			return out, err
		}
		e.hold(in, out)
		return out, nil
	case *AdaptiveAvgPool2D:
		out := shape4{in.n, in.c, l.OutH, l.OutW}
		e.hold(in, out)
		return out, nil
	case *Linear:
		if got := in.c * in.h * in.w; got != l.Spec.In {
			return in, fmt.Errorf("%d features (%d×%d×%d), the linear layer takes %d", got, in.c, in.h, in.w, l.Spec.In)
		}
		out := shape4{in.n, l.Spec.Out, 1, 1}
		e.hold(in, out)
		return out, nil
	}
	return in, fmt.Errorf("%T: %w (no memory estimate)", l, ErrUnsupported)
}

// window is the output shape of a k×k window moved by stride over the
// padded input.
func window(in shape4, kh, kw, sh, sw, ph, pw int) (shape4, error) {
	oh, ow := (in.h+2*ph-kh)/sh+1, (in.w+2*pw-kw)/sw+1
	if in.h+2*ph < kh || in.w+2*pw < kw || oh < 1 || ow < 1 {
		return in, fmt.Errorf("a %d×%d window does not fit a %d×%d input", kh, kw, in.h, in.w)
	}
	return shape4{in.n, in.c, oh, ow}, nil
}
