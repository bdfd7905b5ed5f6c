package augment

import (
	"fmt"

	"github.com/faster-training/faster/imgcodec"
)

// The ImageNet channel statistics torchvision's recipes normalise with.
var (
	ImageNetMean = [3]float32{0.485, 0.456, 0.406}
	ImageNetStd  = [3]float32{0.229, 0.224, 0.225}
)

// Normalizer converts 8-bit pixels to float32 as torchvision's ToTensor
// followed by Normalize(mean, std) does, (float32(v)/255 - mean) / std in
// float32, through a 256-entry table per channel (so the results are the
// same bits as torch's). It is read-only after NewNormalizer and safe for
// concurrent use.
type Normalizer struct {
	lut [3][256]float32
}

// NewNormalizer returns a Normalizer for per-channel mean and std; a gray
// image uses channel 0's.
func NewNormalizer(mean, std [3]float32) *Normalizer {
	n := new(Normalizer)
	for c := range 3 {
		for v := range 256 {
			x := float32(v) / 255
			x -= mean[c]
			n.lut[c][v] = x / std[c]
		}
	}
	return n
}

// CHW writes src into dst in planar channel-major order (all of channel 0,
// then 1, then 2; each plane row-major), the layout of a torch tensor.
// dst must hold Channels*Width*Height values.
func (n *Normalizer) CHW(dst []float32, src *imgcodec.Image) error {
	if err := checkImage(src); err != nil {
		return err
	}
	w, h := src.Width, src.Height
	plane := w * h
	if len(dst) < plane*src.Channels {
		return fmt.Errorf("%w: %d floats for %dx%dx%d", ErrSize, len(dst), src.Channels, h, w)
	}
	if src.Channels == 1 {
		lut := &n.lut[0]
		for y := 0; y < h; y++ {
			row := src.Pix[y*src.Stride:][:w]
			d := dst[y*w:][:w]
			for x, v := range row {
				d[x] = lut[v]
			}
		}
		return nil
	}
	l0, l1, l2 := &n.lut[0], &n.lut[1], &n.lut[2]
	for y := 0; y < h; y++ {
		row := src.Pix[y*src.Stride:][:w*3]
		d0 := dst[y*w:][:w]
		d1 := dst[plane+y*w:][:w]
		d2 := dst[2*plane+y*w:][:w]
		for x := range d0 {
			p := row[x*3 : x*3+3 : x*3+3]
			d0[x] = l0[p[0]]
			d1[x] = l1[p[1]]
			d2[x] = l2[p[2]]
		}
	}
	return nil
}

// HWC writes src into dst normalised but in the interleaved layout of src
// (height, width, channels).
func (n *Normalizer) HWC(dst []float32, src *imgcodec.Image) error {
	if err := checkImage(src); err != nil {
		return err
	}
	w, h, c := src.Width, src.Height, src.Channels
	if len(dst) < w*h*c {
		return fmt.Errorf("%w: %d floats for %dx%dx%d", ErrSize, len(dst), h, w, c)
	}
	for y := 0; y < h; y++ {
		row := src.Pix[y*src.Stride:][:w*c]
		d := dst[y*w*c:][:w*c]
		for i, v := range row {
			d[i] = n.lut[i%c][v]
		}
	}
	return nil
}
