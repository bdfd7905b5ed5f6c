package augment

import (
	"errors"
	"fmt"
	"image"

	"github.com/faster-training/faster/augment/internal/simd"
	"github.com/faster-training/faster/imgcodec"
)

// Filter selects a resampling kernel.
type Filter uint8

const (
	// Triangle is an antialiased bilinear filter whose support widens with
	// the downscale factor: Pillow's Image.resize(BILINEAR), bit for bit,
	// and so what torchvision's transforms use on PIL images.
	Triangle Filter = iota
	// Area is the exact area average of OpenCV's cv2.resize(INTER_AREA),
	// including non-integer factors; when enlarging it behaves like
	// OpenCV's INTER_AREA does (bilinear with area-derived weights).
	Area
	// Bicubic is Pillow's Image.resize(BICUBIC), bit for bit: the cubic
	// convolution kernel with a = -0.5, support 2 widened by the
	// downscale factor (antialiased), so torchvision's BICUBIC on PIL
	// images. torch's antialiased bicubic (the tensor path with
	// antialias=True) uses the same kernel in floating point.
	Bicubic
	// Nearest is Pillow's Image.resize(NEAREST), bit for bit: output x
	// takes source sample floor(x0 + (x+0.5)*scale), no antialiasing.
	Nearest
)

func (f Filter) String() string {
	switch f {
	case Triangle:
		return "triangle"
	case Area:
		return "area"
	case Bicubic:
		return "bicubic"
	case Nearest:
		return "nearest"
	}
	return fmt.Sprintf("Filter(%d)", uint8(f))
}

// ParseFilter maps torchvision's interpolation names (InterpolationMode's
// values) onto filters: "bilinear" (Triangle), "bicubic", "nearest"; and
// "area" and "triangle" by their own names.
func ParseFilter(name string) (Filter, error) {
	switch name {
	case "bilinear", "triangle":
		return Triangle, nil
	case "bicubic":
		return Bicubic, nil
	case "nearest":
		return Nearest, nil
	case "area":
		return Area, nil
	}
	return 0, fmt.Errorf("augment: interpolation %q: want bilinear, bicubic or nearest (or area)", name)
}

// pillowKernel reports whether f runs on the triangle filter's kernels
// (22-bit weights, 8-bit intermediate): every filter but Area.
func (f Filter) pillowKernel() bool { return f != Area }

// Box is a region of a source image in pixel coordinates, possibly
// fractional: X0 <= x < X1, Y0 <= y < Y1, like Pillow's resize box.
type Box struct{ X0, Y0, X1, Y1 float64 }

// Dx and Dy are the box's width and height.
func (b Box) Dx() float64 { return b.X1 - b.X0 }
func (b Box) Dy() float64 { return b.Y1 - b.Y0 }

// ErrSize reports images or boxes whose sizes do not fit together.
var ErrSize = errors.New("augment: bad image size")

// Resizer resamples images. The zero value is ready to use; it keeps its
// weight tables and row buffers between calls, so that steady-state
// resizing allocates nothing. A Resizer is not safe for concurrent use.
type Resizer struct {
	h, v  coeffs
	tmp8  []uint8
	tmp16 []uint16
	acc   []int32
	wq    []int16  // weights rearranged by the SIMD kernels
	job   simd.Job // kept here so that building it allocates nothing
	goSrc bool     // always run the Go kernels (tests and benchmarks)
	key   prepKey  // what the tables h and v were built for
}

// prepKey is what the weight tables depend on: a resize with the same key
// as the previous one (the next plane, the next picture of a size)
// reuses them.
type prepKey struct {
	f                  Filter
	sw, sh, dw, dh, ch int
	box                Box
	fw, fh             int             // the whole resize's size (ResizeView)
	view               image.Rectangle // the part of it kept
	flip, ok           bool
}

// Resize resamples all of src into dst, whose Width, Height, Channels,
// Stride and Pix the caller sets (see NewImage). src and dst must have the
// same number of channels.
func (r *Resizer) Resize(dst, src *imgcodec.Image, f Filter) error {
	return r.ResizeBox(dst, src, Box{0, 0, float64(src.Width), float64(src.Height)}, f, false)
}

// ResizeBox resamples the region box of src into dst, mirrored left to
// right when flip is set.
func (r *Resizer) ResizeBox(dst, src *imgcodec.Image, box Box, f Filter, flip bool) error {
	if dst == nil {
		return fmt.Errorf("augment: destination: %w: nil image", ErrSize)
	}
	return r.ResizeView(dst, src, box, dst.Width, dst.Height, image.Rect(0, 0, dst.Width, dst.Height), f, flip)
}

// ResizeView resamples the region box of src to fullW x fullH and keeps
// the part view of that result (which must lie within it and have dst's
// size), in one pass over only the source the view needs: torchvision's
// Resize followed by CenterCrop, with the weights Pillow would compute
// for the whole resize (so the same bytes, Nearest's positions included).
// flip mirrors dst left to right.
func (r *Resizer) ResizeView(dst, src *imgcodec.Image, box Box, fullW, fullH int, view image.Rectangle, f Filter, flip bool) error {
	if err := checkImage(src); err != nil {
		return fmt.Errorf("augment: source: %w", err)
	}
	if err := checkImage(dst); err != nil {
		return fmt.Errorf("augment: destination: %w", err)
	}
	if src.Channels != dst.Channels {
		return fmt.Errorf("%w: %d channels into %d", ErrSize, src.Channels, dst.Channels)
	}
	if !(box.X0 >= 0 && box.Y0 >= 0 && box.X1 <= float64(src.Width) && box.Y1 <= float64(src.Height) &&
		box.X0 < box.X1 && box.Y0 < box.Y1) {
		return fmt.Errorf("%w: box %v outside %dx%d source", ErrSize, box, src.Width, src.Height)
	}
	if f > Nearest {
		return fmt.Errorf("augment: unknown filter %v", f)
	}
	if view.Dx() != dst.Width || view.Dy() != dst.Height || !view.In(image.Rect(0, 0, fullW, fullH)) {
		return fmt.Errorf("%w: view %v of a %dx%d resize into a %dx%d destination", ErrSize, view, fullW, fullH, dst.Width, dst.Height)
	}
	if f == Area && view != image.Rect(0, 0, fullW, fullH) {
		return fmt.Errorf("augment: the area filter resizes whole boxes only (view %v of %dx%d)", view, fullW, fullH)
	}
	ylo, yhi := r.prepare(dst, src, box, fullW, fullH, view, f, flip)
	if f == Nearest {
		r.nearestCopy(dst, src) // a gather: no arithmetic to do
		return nil
	}
	if !r.goSrc && r.resizeSIMD(dst, src, f, ylo, yhi) {
		return nil
	}
	r.resizeGo(dst, src, f, ylo, yhi)
	return nil
}

// resizeSIMD runs the prepared resize with the SIMD kernels, which give
// the bytes of resizeGo; it reports false, having written nothing to dst,
// where they are not available.
func (r *Resizer) resizeSIMD(dst, src *imgcodec.Image, f Filter, ylo, yhi int) bool {
	ch := src.Channels
	n := (yhi-ylo)*dst.Width*ch + simd.TmpSlack
	r.wq = grow(r.wq, simd.WeightsLen(r.h.n, r.h.ksize, ch))
	j := &r.job
	*j = simd.Job{
		Dst: dst.Pix, DstStride: dst.Stride, DstH: dst.Height,
		Src: src.Pix, SrcStride: src.Stride, Channels: ch,
		H:   simd.Axis{N: r.h.n, KSize: r.h.ksize, Start: r.h.start, Count: r.h.count, W: r.h.w},
		V:   simd.Axis{N: r.v.n, KSize: r.v.ksize, Start: r.v.start, Count: r.v.count, W: r.v.w},
		YLo: ylo, YHi: yhi, Weights: r.wq,
	}
	if f.pillowKernel() {
		r.tmp8 = grow(r.tmp8, n)
		j.Tmp8, j.HShift, j.HMax, j.VShift = r.tmp8, triangleBits, 255, triangleBits
	} else {
		r.tmp16 = grow(r.tmp16, n)
		j.Tmp16, j.HShift, j.HMax, j.VShift = r.tmp16, areaHBits-areaFrac, 255<<areaFrac, areaVBits+areaFrac
	}
	ok := simd.Resize(j)
	*j = simd.Job{} // keep no references to the images
	return ok
}

// nearestCopy runs a prepared Nearest resize as a copy of the source
// samples its one-tap tables name: the bytes the kernels would give with
// weight 1, without the passes.
func (r *Resizer) nearestCopy(dst, src *imgcodec.Image) {
	ch := src.Channels
	xs := r.h.start[:r.h.n]
	for y := 0; y < dst.Height; y++ {
		srow := src.Pix[int(r.v.start[y])*src.Stride:]
		drow := dst.Pix[y*dst.Stride : y*dst.Stride+dst.Width*ch]
		if ch == 3 {
			drow = drow[:len(xs)*3]
			for x, s := range xs {
				o := int(s) * 3
				p := srow[o : o+3 : o+3]
				d := drow[x*3 : x*3+3 : x*3+3]
				d[0], d[1], d[2] = p[0], p[1], p[2]
			}
			continue
		}
		drow = drow[:len(xs)]
		for x, s := range xs {
			drow[x] = srow[s]
		}
	}
}

// resizeGo runs the prepared resize with the Go kernels.
func (r *Resizer) resizeGo(dst, src *imgcodec.Image, f Filter, ylo, yhi int) {
	rowLen := dst.Width * src.Channels
	if f.pillowKernel() {
		r.tmp8 = grow(r.tmp8, (yhi-ylo)*rowLen)
		for y := ylo; y < yhi; y++ {
			hpass(r.tmp8[(y-ylo)*rowLen:], src.Pix[y*src.Stride:], &r.h, src.Channels, triangleBits, 255)
		}
		for y := 0; y < dst.Height; y++ {
			n := int(r.v.count[y])
			vpass(dst.Pix[y*dst.Stride:], r.tmp8, rowLen, int(r.v.start[y])-ylo,
				r.v.w[y*r.v.ksize:y*r.v.ksize+n], triangleBits, r.acc)
		}
		return
	}
	r.tmp16 = grow(r.tmp16, (yhi-ylo)*rowLen)
	for y := ylo; y < yhi; y++ {
		hpass(r.tmp16[(y-ylo)*rowLen:], src.Pix[y*src.Stride:], &r.h, src.Channels, areaHBits-areaFrac, 255<<areaFrac)
	}
	for y := 0; y < dst.Height; y++ {
		n := int(r.v.count[y])
		vpass(dst.Pix[y*dst.Stride:], r.tmp16, rowLen, int(r.v.start[y])-ylo,
			r.v.w[y*r.v.ksize:y*r.v.ksize+n], areaVBits+areaFrac, r.acc)
	}
}

// prepare builds both weight tables for a checked call and returns the
// span of source rows the output reads.
func (r *Resizer) prepare(dst, src *imgcodec.Image, box Box, fullW, fullH int, view image.Rectangle, f Filter, flip bool) (ylo, yhi int) {
	k := prepKey{f, src.Width, src.Height, dst.Width, dst.Height, src.Channels, box, fullW, fullH, view, flip, true}
	if k == r.key {
		return r.v.span()
	}
	r.key = prepKey{}
	switch f {
	case Triangle:
		r.h.triangle(src.Width, box.X0, box.X1, fullW)
		r.v.triangle(src.Height, box.Y0, box.Y1, fullH)
	case Bicubic:
		r.h.bicubic(src.Width, box.X0, box.X1, fullW)
		r.v.bicubic(src.Height, box.Y0, box.Y1, fullH)
	case Nearest:
		r.h.nearest(src.Width, box.X0, box.X1, fullW)
		r.v.nearest(src.Height, box.Y0, box.Y1, fullH)
	case Area:
		if float64(dst.Width) > box.Dx() || float64(dst.Height) > box.Dy() {
			r.h.areaUp(src.Width, box.X0, box.X1, dst.Width, areaHBits)
			r.v.areaUp(src.Height, box.Y0, box.Y1, dst.Height, areaVBits)
		} else {
			r.h.area(src.Width, box.X0, box.X1, dst.Width, areaHBits)
			r.v.area(src.Height, box.Y0, box.Y1, dst.Height, areaVBits)
		}
	}
	r.h.window(view.Min.X, view.Max.X)
	r.v.window(view.Min.Y, view.Max.Y)
	r.h.fixed = r.h.pad(src.Width)
	r.v.fixed = r.v.pad(src.Height)
	if flip {
		r.h.reverse()
	}
	r.acc = grow(r.acc, dst.Width*src.Channels)
	r.key = k
	return r.v.span()
}

// checkImage reports an image whose fields do not describe its Pix.
func checkImage(m *imgcodec.Image) error {
	if m == nil {
		return fmt.Errorf("%w: nil image", ErrSize)
	}
	if m.Width <= 0 || m.Height <= 0 || (m.Channels != 1 && m.Channels != 3) ||
		m.Stride < m.Width*m.Channels || len(m.Pix) < (m.Height-1)*m.Stride+m.Width*m.Channels {
		return fmt.Errorf("%w: %dx%d, %d channels, stride %d, %d bytes",
			ErrSize, m.Width, m.Height, m.Channels, m.Stride, len(m.Pix))
	}
	return nil
}

// NewImage allocates a w x h image with ch channels (1 or 3) and a tight
// stride.
func NewImage(w, h, ch int) *imgcodec.Image {
	return &imgcodec.Image{Pix: make([]uint8, w*h*ch), Width: w, Height: h, Channels: ch, Stride: w * ch}
}

// SubImage returns a view of the region x0 <= x < x1, y0 <= y < y1 of m
// sharing m's pixels (no copy). The region must lie within m.
func SubImage(m *imgcodec.Image, x0, y0, x1, y1 int) imgcodec.Image {
	off := y0*m.Stride + x0*m.Channels
	end := (y1-1)*m.Stride + x1*m.Channels
	return imgcodec.Image{Pix: m.Pix[off:end:end], Width: x1 - x0, Height: y1 - y0, Channels: m.Channels, Stride: m.Stride}
}
