package augment

import (
	"image"
	"math"
	"math/rand/v2"

	"github.com/faster-training/faster/imgcodec"
)

// Default parameters of torchvision's RandomResizedCrop.
var (
	DefaultScale = [2]float64{0.08, 1}
	DefaultRatio = [2]float64{3.0 / 4, 4.0 / 3}
)

// RandomResizedCropRect picks the crop of a w x h image as torchvision's
// RandomResizedCrop.get_params does: up to 10 draws of an area fraction
// uniform in scale and an aspect ratio log-uniform in ratio, the first that
// fits taken at a uniform position; after 10 misses, the centre crop of
// the whole image clamped to the ratio range. Sizes round half to even, as
// Python's round.
func RandomResizedCropRect(rng *rand.Rand, w, h int, scale, ratio [2]float64) image.Rectangle {
	area := float64(w * h)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		target := area * (scale[0] + (scale[1]-scale[0])*rng.Float64())
		aspect := math.Exp(logLo + (logHi-logLo)*rng.Float64())
		// Compared before the conversion to int (an extreme ratio's side
		// may be beyond int, or NaN: a miss).
		fw := math.RoundToEven(math.Sqrt(target * aspect))
		fh := math.RoundToEven(math.Sqrt(target / aspect))
		if 0 < fw && fw <= float64(w) && 0 < fh && fh <= float64(h) {
			cw, ch := int(fw), int(fh)
			y := rng.IntN(h - ch + 1)
			x := rng.IntN(w - cw + 1)
			return image.Rect(x, y, x+cw, y+ch)
		}
	}
	inRatio := float64(w) / float64(h)
	cw, ch := w, h
	switch {
	case inRatio < min(ratio[0], ratio[1]):
		ch = clampSide(float64(cw)/min(ratio[0], ratio[1]), h)
	case inRatio > max(ratio[0], ratio[1]):
		cw = clampSide(float64(ch)*max(ratio[0], ratio[1]), w)
	}
	y, x := (h-ch)/2, (w-cw)/2
	return image.Rect(x, y, x+cw, y+ch)
}

// clampSide rounds a fallback crop's side half to even, within 1..limit:
// a ratio so extreme that the side rounds to 0 (where torchvision's
// resized_crop fails on the image) keeps one pixel.
func clampSide(v float64, limit int) int {
	v = math.RoundToEven(v)
	if !(v >= 1) {
		return 1
	}
	return int(min(v, float64(limit)))
}

// CenterCropRect is torchvision's CenterCrop geometry: a cw x ch region
// centred in a w x h image (offsets rounded half to even). A crop larger
// than the image is clamped to it (torchvision would pad).
func CenterCropRect(w, h, cw, ch int) image.Rectangle {
	cw, ch = min(cw, w), min(ch, h)
	y := int(math.RoundToEven(float64(h-ch) / 2))
	x := int(math.RoundToEven(float64(w-cw) / 2))
	return image.Rect(x, y, x+cw, y+ch)
}

// ShorterEdgeSize is the output size of torchvision's Resize(size) with an
// int size: the shorter edge becomes size and the longer keeps the aspect
// ratio (truncated, as torchvision's int()).
func ShorterEdgeSize(w, h, size int) (int, int) {
	if w <= h {
		return size, int(float64(size) * float64(h) / float64(w))
	}
	return int(float64(size) * float64(w) / float64(h)), size
}

// ScaleDenoms are the DCT-domain scale denominators worth asking a JPEG
// decoder for (the others are slower than a full decode).
var ScaleDenoms = [...]int{8, 4, 2, 1}

// PlanDecode chooses how to decode the region crop of a w x h image that
// will be resized to outW x outH: the largest ScaleDenom no greater than
// maxDenom (0 means 8) whose scaled crop still has at least outW x outH
// pixels, and the crop in the scaled image's coordinates, widened to whole
// pixels. It returns the decode options and the exact crop as a box in the
// coordinates of the decoded (cropped, scaled) picture, to hand to
// ResizeBox.
//
// The scaled image is ceil(w/d) x ceil(h/d), and its pixel i covers source
// pixels [i*d, (i+1)*d), as with libjpeg's scaled IDCT.
func PlanDecode(w, h int, crop image.Rectangle, outW, outH, maxDenom int) (imgcodec.DecodeOptions, Box) {
	if maxDenom <= 0 {
		maxDenom = 8
	}
	d := 1
	for _, s := range ScaleDenoms {
		if s <= maxDenom && crop.Dx() >= outW*s && crop.Dy() >= outH*s {
			d = s
			break
		}
	}
	if d == 1 {
		return imgcodec.DecodeOptions{ScaleDenom: 1, Crop: crop},
			Box{0, 0, float64(crop.Dx()), float64(crop.Dy())}
	}
	sw, sh := (w+d-1)/d, (h+d-1)/d
	fd := float64(d)
	fx0, fy0 := float64(crop.Min.X)/fd, float64(crop.Min.Y)/fd
	fx1, fy1 := float64(crop.Max.X)/fd, float64(crop.Max.Y)/fd
	r := image.Rect(int(math.Floor(fx0)), int(math.Floor(fy0)),
		min(int(math.Ceil(fx1)), sw), min(int(math.Ceil(fy1)), sh))
	ox, oy := float64(r.Min.X), float64(r.Min.Y)
	return imgcodec.DecodeOptions{ScaleDenom: d, Crop: r},
		Box{fx0 - ox, fy0 - oy, min(fx1-ox, float64(r.Dx())), min(fy1-oy, float64(r.Dy()))}
}
