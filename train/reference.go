package train

import (
	"fmt"
	"math"
	"runtime"
	"slices"
)

// Reference is the pure-Go backend: plain NCHW float32 tensors, loops that
// accumulate in float64. It is slow and exact, for CGO_ENABLED=0 builds and
// as the yardstick of the gradient checks.
//
// With BFloat16 or Float16 precision, convolutions and linear layers round
// their input, weights and output gradient to that format (emulation, as
// the oneDNN backend does on CPUs without bf16 instructions) and compute
// as in float32 from the rounded values. It does not autotune: Autotune is
// accepted and TuneChoices is empty.
type Reference struct {
	threads int
	prec    Precision
}

var (
	_ Backend           = (*Reference)(nil)
	_ PrecisionReporter = (*Reference)(nil)
	_ Tuner             = (*Reference)(nil)
)

// NewReference returns the pure-Go backend. It runs on one goroutine;
// Threads is recorded for reporting only.
func NewReference(o BackendOptions) *Reference {
	t := o.Threads
	if t <= 0 {
		t = runtime.NumCPU()
	}
	return &Reference{threads: t, prec: o.Precision}
}

// Precision implements PrecisionReporter: reduced precision is always
// emulated.
func (r *Reference) Precision() (Precision, bool) { return r.prec, false }

// TuneChoices implements Tuner: the reference backend has one
// implementation of each op.
func (r *Reference) TuneChoices() []TuneChoice { return nil }

// roundTo writes src rounded to p into dst, grown to len(src), and
// returns it.
func roundTo(p Precision, dst, src []float32) []float32 {
	dst = slices.Grow(dst[:0], len(src))[:len(src)]
	round := roundBF16
	if p == Float16 {
		round = roundF16
	}
	for i, v := range src {
		dst[i] = round(v)
	}
	return dst
}

// roundBF16 rounds f to the nearest bfloat16 (ties to even).
func roundBF16(f float32) float32 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN
		return math.Float32frombits((b | 0x00400000) &^ 0xffff)
	}
	return math.Float32frombits((b + 0x7fff + (b>>16)&1) &^ 0xffff)
}

// roundF16 rounds f to the nearest IEEE half (ties to even): beyond
// ±65504 (from 65520 up) to ±Inf, below 2^-14 to a multiple of 2^-24.
func roundF16(f float32) float32 {
	b := math.Float32bits(f)
	sign, a := b&0x80000000, b&0x7fffffff
	switch {
	case a >= 0x7f800000: // Inf, NaN
		return f
	case a < 0x38800000: // subnormal in half: float's spacing in [0.5, 1) is 2^-24
		return math.Float32frombits(math.Float32bits((math.Float32frombits(a)+0.5)-0.5) | sign)
	}
	a += 0xfff + (a>>13)&1
	a &^= 0x1fff
	if a >= 0x47800000 {
		a = 0x7f800000
	}
	return math.Float32frombits(a | sign)
}

func (r *Reference) Name() string { return "reference" }
func (r *Reference) Threads() int { return r.threads }
func (r *Reference) Close() error { return nil }

// refTensor is a plain row-major tensor in Go memory.
type refTensor struct {
	shape []int
	data  []float32
}

func (t *refTensor) Shape() []int { return t.shape }
func (t *refTensor) Release()     {}
func (t *refTensor) Read(dst []float32) error {
	if len(dst) != len(t.data) {
		return fmt.Errorf("tensor %v: read into %d values", t.shape, len(dst))
	}
	copy(dst, t.data)
	return nil
}
func (t *refTensor) Write(src []float32) error {
	if len(src) != len(t.data) {
		return fmt.Errorf("tensor %v: write of %d values", t.shape, len(src))
	}
	copy(t.data, src)
	return nil
}

func (r *Reference) NewTensor(shape ...int) (Tensor, error) {
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("tensor shape %v: dimensions must be positive", shape)
		}
	}
	return &refTensor{shape: slices.Clone(shape), data: make([]float32, numel(shape))}, nil
}

// ensure returns t if it has shape, else a new tensor of that shape.
func ensure(t *refTensor, shape ...int) *refTensor {
	if t != nil && slices.Equal(t.shape, shape) {
		return t
	}
	return &refTensor{shape: slices.Clone(shape), data: make([]float32, numel(shape))}
}

func asRef(x Tensor, rank ...int) (*refTensor, error) {
	t, ok := x.(*refTensor)
	if !ok {
		return nil, fmt.Errorf("reference backend: tensor of another backend (%T)", x)
	}
	if len(rank) > 0 && !slices.Contains(rank, len(t.shape)) {
		return nil, fmt.Errorf("reference backend: tensor of shape %v: want rank %v", t.shape, rank)
	}
	return t, nil
}

// ---- convolution ----

type refConv struct {
	s     ConvSpec
	prec  Precision
	x     *refTensor // the input of the last Forward (rounded: xr)
	y, dx *refTensor
	acc   []float64
	// Reduced precision: rounded input, weights, output gradient.
	xr, dyr *refTensor
	wr      []float32
	dym     *refTensor // ConvSpec.ReLU: the output gradient masked by y > 0
}

func (r *Reference) NewConv(s ConvSpec) (ConvOp, error) {
	if s.In <= 0 || s.Out <= 0 || s.Kernel <= 0 || s.Pad < 0 || s.Stride < 0 {
		return nil, fmt.Errorf("conv %+v: invalid", s)
	}
	return &refConv{s: s, prec: r.prec}, nil
}

func (c *refConv) Close() {}

func (c *refConv) dims() (n, ci, h, w, co, k, st, p, oh, ow int) {
	n, ci, h, w = c.x.shape[0], c.x.shape[1], c.x.shape[2], c.x.shape[3]
	co, k, st, p = c.s.Out, c.s.Kernel, c.s.stride(), c.s.Pad
	return n, ci, h, w, co, k, st, p, ConvOut(h, k, st, p), ConvOut(w, k, st, p)
}

func (c *refConv) Forward(xt Tensor, wt, b []float32) (Tensor, error) {
	x, err := asRef(xt, 4)
	if err != nil {
		return nil, err
	}
	if x.shape[1] != c.s.In {
		return nil, fmt.Errorf("conv: input %v has %d channels, want %d", x.shape, x.shape[1], c.s.In)
	}
	if c.prec != Float32 {
		c.xr = ensure(c.xr, x.shape...)
		roundTo(c.prec, c.xr.data, x.data)
		c.wr = roundTo(c.prec, c.wr, wt)
		x, wt = c.xr, c.wr
	}
	c.x = x
	n, ci, h, w, co, k, st, p, oh, ow := c.dims()
	if oh <= 0 || ow <= 0 {
		return nil, fmt.Errorf("conv: input %v too small for kernel %d", x.shape, k)
	}
	c.y = ensure(c.y, n, co, oh, ow)
	if cap(c.acc) < oh*ow {
		c.acc = make([]float64, oh*ow)
	}
	acc := c.acc[:oh*ow]
	for in := range n {
		for o := range co {
			bias := 0.0
			if b != nil {
				bias = float64(b[o])
			}
			for i := range acc {
				acc[i] = bias
			}
			for i := range ci {
				plane := x.data[(in*ci+i)*h*w : (in*ci+i+1)*h*w]
				for kh := range k {
					for kw := range k {
						wv := float64(wt[((o*ci+i)*k+kh)*k+kw])
						for y := range oh {
							iy := y*st - p + kh
							if iy < 0 || iy >= h {
								continue
							}
							row := plane[iy*w : (iy+1)*w]
							out := acc[y*ow : (y+1)*ow]
							for xo := range ow {
								ix := xo*st - p + kw
								if ix >= 0 && ix < w {
									out[xo] += wv * float64(row[ix])
								}
							}
						}
					}
				}
			}
			dst := c.y.data[(in*co+o)*oh*ow : (in*co+o+1)*oh*ow]
			for i, v := range acc {
				dst[i] = float32(v)
				if c.s.ReLU {
					dst[i] = max(dst[i], 0)
				}
			}
		}
	}
	return c.y, nil
}

func (c *refConv) Backward(dyt Tensor, wt, dw, db []float32, needDX bool) (Tensor, error) {
	if c.x == nil {
		return nil, fmt.Errorf("conv: Backward before Forward")
	}
	dy, err := asRef(dyt, 4)
	if err != nil {
		return nil, err
	}
	n, ci, h, w, co, k, st, p, oh, ow := c.dims()
	if !slices.Equal(dy.shape, []int{n, co, oh, ow}) {
		return nil, fmt.Errorf("conv: gradient %v, want %v", dy.shape, []int{n, co, oh, ow})
	}
	if c.s.ReLU {
		c.dym = ensure(c.dym, dy.shape...)
		for i, g := range dy.data {
			if c.y.data[i] > 0 {
				c.dym.data[i] = g
			} else {
				c.dym.data[i] = 0
			}
		}
		dy = c.dym
	}
	if c.prec != Float32 {
		c.dyr = ensure(c.dyr, dy.shape...)
		roundTo(c.prec, c.dyr.data, dy.data)
		c.wr = roundTo(c.prec, c.wr, wt)
		dy, wt = c.dyr, c.wr
	}
	x := c.x
	// Weights and bias.
	for o := range co {
		if db != nil {
			s := 0.0
			for in := range n {
				for _, v := range dy.data[(in*co+o)*oh*ow : (in*co+o+1)*oh*ow] {
					s += float64(v)
				}
			}
			db[o] = float32(s)
		}
		for i := range ci {
			for kh := range k {
				for kw := range k {
					s := 0.0
					for in := range n {
						g := dy.data[(in*co+o)*oh*ow:]
						plane := x.data[(in*ci+i)*h*w:]
						for y := range oh {
							iy := y*st - p + kh
							if iy < 0 || iy >= h {
								continue
							}
							for xo := range ow {
								ix := xo*st - p + kw
								if ix >= 0 && ix < w {
									s += float64(g[y*ow+xo]) * float64(plane[iy*w+ix])
								}
							}
						}
					}
					dw[((o*ci+i)*k+kh)*k+kw] = float32(s)
				}
			}
		}
	}
	if !needDX {
		return nil, nil
	}
	c.dx = ensure(c.dx, n, ci, h, w)
	acc := make([]float64, h*w)
	for in := range n {
		for i := range ci {
			clear(acc)
			for o := range co {
				g := dy.data[(in*co+o)*oh*ow : (in*co+o+1)*oh*ow]
				for kh := range k {
					for kw := range k {
						wv := float64(wt[((o*ci+i)*k+kh)*k+kw])
						for y := range oh {
							iy := y*st - p + kh
							if iy < 0 || iy >= h {
								continue
							}
							for xo := range ow {
								ix := xo*st - p + kw
								if ix >= 0 && ix < w {
									acc[iy*w+ix] += wv * float64(g[y*ow+xo])
								}
							}
						}
					}
				}
			}
			dst := c.dx.data[(in*ci+i)*h*w : (in*ci+i+1)*h*w]
			for j, v := range acc {
				dst[j] = float32(v)
			}
		}
	}
	return c.dx, nil
}

// ---- batch normalisation ----

type refBN struct {
	s           BatchNormSpec
	x, y, dx    *refTensor
	mean, invSD []float64
	trained     bool
	count       float64 // global elements per channel of the last ForwardSync
	// batchMean, batchVar: ForwardDevice's batch statistics.
	batchMean, batchVar []float32
}

func (r *Reference) NewBatchNorm(s BatchNormSpec) (BatchNormOp, error) {
	if s.C <= 0 {
		return nil, fmt.Errorf("batchnorm %+v: invalid", s)
	}
	return &refBN{s: s, mean: make([]float64, s.C), invSD: make([]float64, s.C)}, nil
}

func (b *refBN) Close() {}

// planes returns N, C and the size of one channel's plane.
func planes(shape []int) (n, c, hw int) {
	n, c, hw = shape[0], shape[1], 1
	for _, d := range shape[2:] {
		hw *= d
	}
	return
}

func (b *refBN) Forward(xt Tensor, gamma, beta, mean, variance []float32, training bool) (Tensor, error) {
	x, err := b.input(xt)
	if err != nil {
		return nil, err
	}
	n, c, hw := planes(x.shape)
	b.x, b.trained, b.count = x, training, 0 // count: set by ForwardSync only
	eps := float64(b.s.eps())
	cnt := float64(n * hw)
	for ch := range c {
		var m, v float64
		if training {
			for in := range n {
				for _, e := range x.data[(in*c+ch)*hw : (in*c+ch+1)*hw] {
					m += float64(e)
				}
			}
			m /= cnt
			for in := range n {
				for _, e := range x.data[(in*c+ch)*hw : (in*c+ch+1)*hw] {
					d := float64(e) - m
					v += d * d
				}
			}
			v /= cnt
			mean[ch], variance[ch] = float32(m), float32(v)
		} else {
			m, v = float64(mean[ch]), float64(variance[ch])
		}
		b.mean[ch], b.invSD[ch] = m, 1/math.Sqrt(v+eps)
	}
	return b.normalize(gamma, beta), nil
}

// input checks that xt is a batch of b's channels.
func (b *refBN) input(xt Tensor) (*refTensor, error) {
	x, err := asRef(xt, 2, 4)
	if err != nil {
		return nil, err
	}
	if x.shape[1] != b.s.C {
		return nil, fmt.Errorf("batchnorm: input %v has %d channels, want %d", x.shape, x.shape[1], b.s.C)
	}
	return x, nil
}

// normalize computes y = γ·(x − mean)·invSD + β for b.x with b.mean and
// b.invSD (float64, as computed).
func (b *refBN) normalize(gamma, beta []float32) Tensor {
	x := b.x
	n, c, hw := planes(x.shape)
	b.y = ensure(b.y, x.shape...)
	for ch := range c {
		m, inv := b.mean[ch], b.invSD[ch]
		g, be := float64(gamma[ch]), float64(beta[ch])
		for in := range n {
			src := x.data[(in*c+ch)*hw : (in*c+ch+1)*hw]
			dst := b.y.data[(in*c+ch)*hw : (in*c+ch+1)*hw]
			for i, e := range src {
				dst[i] = float32(g*(float64(e)-m)*inv + be)
			}
		}
	}
	return b.y
}

func (b *refBN) Backward(dyt Tensor, gamma, beta, dgamma, dbeta []float32) (Tensor, error) {
	if b.x == nil || !b.trained {
		return nil, fmt.Errorf("batchnorm: Backward needs a training Forward first")
	}
	n, _, hw := planes(b.x.shape)
	return b.backward(dyt, gamma, dgamma, dbeta, nil, float64(n*hw))
}

// backward computes this batch's sums Σdy and Σdy·x̂ per channel (written
// to dbeta and dgamma), sums them over the replicas with reduce when not
// nil, and returns dx = γ·invSD·(dy − Σdy/count − x̂·Σdy·x̂/count).
func (b *refBN) backward(dyt Tensor, gamma, dgamma, dbeta []float32, reduce func([]float64) error, count float64) (Tensor, error) {
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
	if reduce != nil {
		if err := reduce(sums); err != nil {
			return nil, fmt.Errorf("batchnorm: reduce gradients: %w", err)
		}
	}
	b.dx = ensure(b.dx, b.x.shape...)
	for ch := range c {
		m, inv := b.mean[ch], b.invSD[ch]
		g1, g2 := sums[ch]/count, sums[c+ch]/count
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

// ---- ReLU ----

type refReLU struct{ x, y, dx *refTensor }

func (r *Reference) NewReLU() (ReLUOp, error) { return &refReLU{}, nil }
func (u *refReLU) Close()                     {}

func (u *refReLU) Forward(xt Tensor) (Tensor, error) {
	x, err := asRef(xt)
	if err != nil {
		return nil, err
	}
	u.x = x
	u.y = ensure(u.y, x.shape...)
	for i, v := range x.data {
		u.y.data[i] = max(v, 0)
	}
	return u.y, nil
}

func (u *refReLU) Backward(dyt Tensor) (Tensor, error) {
	dy, err := asRef(dyt)
	if err != nil {
		return nil, err
	}
	if u.x == nil || !slices.Equal(dy.shape, u.x.shape) {
		return nil, fmt.Errorf("relu: gradient does not match the last Forward")
	}
	u.dx = ensure(u.dx, dy.shape...)
	for i, g := range dy.data {
		if u.x.data[i] > 0 {
			u.dx.data[i] = g
		} else {
			u.dx.data[i] = 0
		}
	}
	return u.dx, nil
}

// ---- pooling ----

type refPool struct {
	s      PoolSpec
	x      *refTensor
	y, dx  *refTensor
	argmax []int32 // max pooling: the input index (within the plane) of each output
}

func (s PoolSpec) valid() error {
	if s.KernelH <= 0 || s.KernelW <= 0 || s.StrideH <= 0 || s.StrideW <= 0 || s.PadH < 0 || s.PadW < 0 ||
		s.PadH*2 > s.KernelH || s.PadW*2 > s.KernelW {
		return fmt.Errorf("pool %+v: invalid", s)
	}
	return nil
}

func (r *Reference) NewPool(s PoolSpec) (PoolOp, error) {
	if err := s.valid(); err != nil {
		return nil, err
	}
	return &refPool{s: s}, nil
}

func (p *refPool) Close() {}

func (p *refPool) Forward(xt Tensor, training bool) (Tensor, error) {
	x, err := asRef(xt, 4)
	if err != nil {
		return nil, err
	}
	s := p.s
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	oh, ow := ConvOut(h, s.KernelH, s.StrideH, s.PadH), ConvOut(w, s.KernelW, s.StrideW, s.PadW)
	if oh <= 0 || ow <= 0 {
		return nil, fmt.Errorf("pool: input %v too small", x.shape)
	}
	p.x = x
	p.y = ensure(p.y, n, c, oh, ow)
	if s.Kind == MaxPool {
		p.argmax = slices.Grow(p.argmax[:0], n*c*oh*ow)[:n*c*oh*ow]
	}
	for pl := range n * c {
		src := x.data[pl*h*w : (pl+1)*h*w]
		for y := range oh {
			for xo := range ow {
				y0, x0 := y*s.StrideH-s.PadH, xo*s.StrideW-s.PadW
				best, arg, sum, cnt := float32(math.Inf(-1)), int32(-1), 0.0, 0
				for ky := y0; ky < y0+s.KernelH; ky++ {
					for kx := x0; kx < x0+s.KernelW; kx++ {
						if ky < 0 || ky >= h || kx < 0 || kx >= w {
							continue
						}
						v := src[ky*w+kx]
						if arg < 0 || v > best {
							best, arg = v, int32(ky*w+kx)
						}
						sum += float64(v)
						cnt++
					}
				}
				o := pl*oh*ow + y*ow + xo
				if s.Kind == MaxPool {
					p.y.data[o], p.argmax[o] = best, arg
				} else {
					div := s.KernelH * s.KernelW
					if s.ExcludePad {
						div = cnt
					}
					p.y.data[o] = float32(sum / float64(div))
				}
			}
		}
	}
	return p.y, nil
}

func (p *refPool) Backward(dyt Tensor) (Tensor, error) {
	dy, err := asRef(dyt, 4)
	if err != nil {
		return nil, err
	}
	if p.x == nil || !slices.Equal(dy.shape, p.y.shape) {
		return nil, fmt.Errorf("pool: gradient does not match the last Forward")
	}
	s := p.s
	n, c, h, w := p.x.shape[0], p.x.shape[1], p.x.shape[2], p.x.shape[3]
	oh, ow := dy.shape[2], dy.shape[3]
	p.dx = ensure(p.dx, p.x.shape...)
	clear(p.dx.data)
	for pl := range n * c {
		dst := p.dx.data[pl*h*w : (pl+1)*h*w]
		for y := range oh {
			for xo := range ow {
				o := pl*oh*ow + y*ow + xo
				g := dy.data[o]
				if s.Kind == MaxPool {
					dst[p.argmax[o]] += g
					continue
				}
				y0, x0 := y*s.StrideH-s.PadH, xo*s.StrideW-s.PadW
				cnt := 0
				for ky := max(y0, 0); ky < min(y0+s.KernelH, h); ky++ {
					cnt += min(x0+s.KernelW, w) - max(x0, 0)
				}
				div := s.KernelH * s.KernelW
				if s.ExcludePad {
					div = cnt
				}
				gv := g / float32(div)
				for ky := max(y0, 0); ky < min(y0+s.KernelH, h); ky++ {
					for kx := max(x0, 0); kx < min(x0+s.KernelW, w); kx++ {
						dst[ky*w+kx] += gv
					}
				}
			}
		}
	}
	return p.dx, nil
}

// ---- linear ----

type refLinear struct {
	s     LinearSpec
	prec  Precision
	x     *refTensor // the input of the last Forward (rounded: xr)
	y, dx *refTensor
	// Reduced precision: rounded input, weights, output gradient.
	xr, dyr *refTensor
	wr      []float32
}

func (r *Reference) NewLinear(s LinearSpec) (LinearOp, error) {
	if s.In <= 0 || s.Out <= 0 {
		return nil, fmt.Errorf("linear %+v: invalid", s)
	}
	return &refLinear{s: s, prec: r.prec}, nil
}

func (l *refLinear) Close() {}

func (l *refLinear) Forward(xt Tensor, w, b []float32) (Tensor, error) {
	x, err := asRef(xt)
	if err != nil {
		return nil, err
	}
	n := x.shape[0]
	if numel(x.shape) != n*l.s.In {
		return nil, fmt.Errorf("linear: input %v does not flatten to %d features", x.shape, l.s.In)
	}
	if l.prec != Float32 {
		l.xr = ensure(l.xr, x.shape...)
		roundTo(l.prec, l.xr.data, x.data)
		l.wr = roundTo(l.prec, l.wr, w)
		x, w = l.xr, l.wr
	}
	l.x = x
	l.y = ensure(l.y, n, l.s.Out)
	in := l.s.In
	for r := range n {
		row := x.data[r*in : (r+1)*in]
		for o := range l.s.Out {
			s := float64(b[o])
			for i, v := range row {
				s += float64(v) * float64(w[o*in+i])
			}
			l.y.data[r*l.s.Out+o] = float32(s)
		}
	}
	return l.y, nil
}

func (l *refLinear) Backward(dyt Tensor, w, dw, db []float32, needDX bool) (Tensor, error) {
	dy, err := asRef(dyt, 2)
	if err != nil {
		return nil, err
	}
	if l.x == nil || !slices.Equal(dy.shape, l.y.shape) {
		return nil, fmt.Errorf("linear: gradient does not match the last Forward")
	}
	if l.prec != Float32 {
		l.dyr = ensure(l.dyr, dy.shape...)
		roundTo(l.prec, l.dyr.data, dy.data)
		l.wr = roundTo(l.prec, l.wr, w)
		dy, w = l.dyr, l.wr
	}
	n, in, out := dy.shape[0], l.s.In, l.s.Out
	for o := range out {
		s := 0.0
		for r := range n {
			s += float64(dy.data[r*out+o])
		}
		db[o] = float32(s)
		for i := range in {
			s := 0.0
			for r := range n {
				s += float64(dy.data[r*out+o]) * float64(l.x.data[r*in+i])
			}
			dw[o*in+i] = float32(s)
		}
	}
	if !needDX {
		return nil, nil
	}
	l.dx = ensure(l.dx, l.x.shape...)
	for r := range n {
		for i := range in {
			s := 0.0
			for o := range out {
				s += float64(dy.data[r*out+o]) * float64(w[o*in+i])
			}
			l.dx.data[r*in+i] = float32(s)
		}
	}
	return l.dx, nil
}

// ---- add ----

type refAdd struct{ y *refTensor }

func (r *Reference) NewAdd() (AddOp, error) { return &refAdd{}, nil }
func (a *refAdd) Close()                    {}

func (a *refAdd) Forward(at, bt Tensor) (Tensor, error) {
	x, err := asRef(at)
	if err != nil {
		return nil, err
	}
	y, err := asRef(bt)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(x.shape, y.shape) {
		return nil, fmt.Errorf("add: shapes %v and %v differ", x.shape, y.shape)
	}
	a.y = ensure(a.y, x.shape...)
	for i := range x.data {
		a.y.data[i] = x.data[i] + y.data[i]
	}
	return a.y, nil
}
