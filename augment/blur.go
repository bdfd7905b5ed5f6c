package augment

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/faster-training/faster/imgcodec"
)

// GaussianKernel1D is torchvision's _get_gaussian_kernel1d in float32:
// exp(-(x/sigma)^2/2) at the integer offsets of a size-tap window,
// normalised to sum 1.
func GaussianKernel1D(size int, sigma float64) []float32 {
	k := make([]float32, size)
	half := float32(size-1) * 0.5
	sg := float32(sigma)
	var sum float32
	for i := range k {
		x := -half + float32(i)
		q := x / sg
		k[i] = float32(math.Exp(float64(float32(-0.5 * float32(q*q)))))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}

// GaussianBlur blurs m in place with a kw x kh Gaussian (odd sizes, each
// smaller than twice the image side) of standard deviations sigmaX and
// sigmaY, as torchvision's gaussian_blur on a uint8 tensor: reflect
// padding, the outer product of the two float32 kernels, the sum rounded
// half to even. It filters separably (a horizontal then a vertical pass in
// float32), which is the same sum up to float32 rounding.
func (s *Scratch) GaussianBlur(m *imgcodec.Image, kw, kh int, sigmaX, sigmaY float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	if kw <= 0 || kh <= 0 || kw%2 == 0 || kh%2 == 0 || kw/2 >= m.Width || kh/2 >= m.Height || sigmaX <= 0 || sigmaY <= 0 {
		return fmt.Errorf("augment: Gaussian blur %dx%d, sigma %g,%g on a %dx%d image", kw, kh, sigmaX, sigmaY, m.Width, m.Height)
	}
	kx, ky := GaussianKernel1D(kw, sigmaX), GaussianKernel1D(kh, sigmaY)
	w, h, ch := m.Width, m.Height, m.Channels
	rowLen := w * ch
	// Horizontal pass into float32, every row, through a reflect-padded
	// copy of the row.
	rx, ry := kw/2, kh/2
	s.f32 = grow(s.f32, rowLen*h+(w+2*rx)*ch+rowLen)
	tmp := s.f32[:rowLen*h]
	pad := s.f32[rowLen*h:][:(w+2*rx)*ch]
	acc := s.f32[rowLen*h+(w+2*rx)*ch:][:rowLen]
	for y := 0; y < h; y++ {
		row := m.Pix[y*m.Stride:][:rowLen]
		for px := -rx; px < w+rx; px++ {
			sx := reflect(px, w)
			for c := 0; c < ch; c++ {
				pad[(px+rx)*ch+c] = float32(row[sx*ch+c])
			}
		}
		out := tmp[y*rowLen:][:rowLen]
		for i := range out {
			var a float32
			p := pad[i:]
			for t, kv := range kx {
				a += float32(kv * p[t*ch])
			}
			out[i] = a
		}
	}
	// Vertical pass back into m, a row of sums at a time.
	for y := 0; y < h; y++ {
		clear(acc)
		for t, kv := range ky {
			src := tmp[reflect(y+t-ry, h)*rowLen:][:rowLen]
			for i, v := range src {
				acc[i] += float32(kv * v)
			}
		}
		out := m.Pix[y*m.Stride:][:rowLen]
		for i, v := range acc {
			out[i] = round8(v)
		}
	}
	return nil
}

// reflect maps i into [0, n) as torch's reflect padding (the edge pixel
// is not repeated).
func reflect(i, n int) int {
	if i < 0 {
		return -i
	}
	if i >= n {
		return 2*(n-1) - i
	}
	return i
}

// GaussianBlurOp is torchvision's GaussianBlur(kernel_size, sigma): sigma
// uniform in Sigma (torchvision's default (0.1, 2.0)), the same on both
// axes.
type GaussianBlurOp struct {
	KernelW, KernelH int
	Sigma            [2]float64
}

// Draw draws sigma.
func (g *GaussianBlurOp) Draw(rng *rand.Rand) float64 {
	lo, hi := g.Sigma[0], g.Sigma[1]
	if g.Sigma == ([2]float64{}) {
		lo, hi = 0.1, 2.0
	}
	return lo + (hi-lo)*rng.Float64()
}
