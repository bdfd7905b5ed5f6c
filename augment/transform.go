package augment

import (
	"fmt"
	"image"
	"math/rand/v2"

	"github.com/faster-training/faster/imgcodec"
)

// TrainTransform is torchvision's standard training recipe,
// RandomResizedCrop(size) then RandomHorizontalFlip(), planned before
// decoding so that the decoder produces only the crop, at the smallest DCT
// scale that still covers the output. ToTensor + Normalize is a
// Normalizer's CHW. The zero values of Scale, Ratio and MaxScaleDenom mean
// torchvision's defaults and 1/8.
type TrainTransform struct {
	Width, Height int        // output size
	Scale, Ratio  [2]float64 // area fraction and aspect-ratio ranges
	NoFlip        bool       // never flip (no draw)
	FlipProb      float64    // flip probability when NoFlip is unset; 0 means 1/2
	MaxScaleDenom int        // largest DCT ScaleDenom to use; 1 turns scaled decode off
	// Filter is RandomResizedCrop's interpolation: Triangle (BILINEAR),
	// Bicubic or Nearest as Pillow computes them, or Area. Nearest always
	// decodes at full size: a DCT-scaled decode averages blocks, which
	// nearest-neighbour sampling of the full image does not.
	Filter Filter
}

// Plan is the random geometry of one sample and how to decode it.
type Plan struct {
	SrcW, SrcH int                    // full size of the source image
	Crop       image.Rectangle        // chosen crop, in full-size coordinates
	Decode     imgcodec.DecodeOptions // what to ask the decoder for
	Box        Box                    // the exact crop within the decoded picture
	Flip       bool
	OutW, OutH int
	Filter     Filter
}

// Plan draws the crop and the flip of a srcW x srcH image from rng, in
// torchvision's order (crop, then flip).
func (t *TrainTransform) Plan(rng *rand.Rand, srcW, srcH int) Plan {
	scale, ratio := t.Scale, t.Ratio
	if scale == ([2]float64{}) {
		scale = DefaultScale
	}
	if ratio == ([2]float64{}) {
		ratio = DefaultRatio
	}
	crop := RandomResizedCropRect(rng, srcW, srcH, scale, ratio)
	p := t.FlipProb
	if p == 0 {
		p = 0.5
	}
	flip := !t.NoFlip && rng.Float64() < p
	denom := t.MaxScaleDenom
	if t.Filter == Nearest {
		denom = 1
	}
	opts, box := PlanDecode(srcW, srcH, crop, t.Width, t.Height, denom)
	return Plan{SrcW: srcW, SrcH: srcH, Crop: crop, Decode: opts, Box: box, Flip: flip,
		OutW: t.Width, OutH: t.Height, Filter: t.Filter}
}

// Augmenter applies plans. It owns a Resizer and a random source, so that
// the steady state allocates nothing; use one per goroutine.
type Augmenter struct {
	Resizer
	pcg rand.PCG
	rng *rand.Rand
}

// RNG reseeds and returns the Augmenter's random source for sample index
// under seed (see SampleSeed). It is valid until the next call.
func (a *Augmenter) RNG(seed, index uint64) *rand.Rand {
	if a.rng == nil {
		a.rng = rand.New(&a.pcg)
	}
	a.pcg.Seed(SampleSeed(seed, index))
	return a.rng
}

// Apply resamples the planned crop of img into dst (OutW x OutH, uint8
// HWC, same channels as img), mirrored if the plan says so. img is either
// what the decoder returned for p.Decode (the scaled crop) or the whole
// image at full size (a decoder that ignored the options).
func (a *Augmenter) Apply(dst, img *imgcodec.Image, p Plan) error {
	if dst.Width != p.OutW || dst.Height != p.OutH {
		return fmt.Errorf("%w: destination %dx%d, plan %dx%d", ErrSize, dst.Width, dst.Height, p.OutW, p.OutH)
	}
	box := p.Box
	switch {
	case img.Width == p.Decode.Crop.Dx() && img.Height == p.Decode.Crop.Dy():
	case img.Width == p.SrcW && img.Height == p.SrcH:
		c := p.Crop
		box = Box{float64(c.Min.X), float64(c.Min.Y), float64(c.Max.X), float64(c.Max.Y)}
	default:
		return fmt.Errorf("%w: decoded %dx%d matches neither the planned crop %v nor the %dx%d source",
			ErrSize, img.Width, img.Height, p.Decode.Crop, p.SrcW, p.SrcH)
	}
	return a.ResizeBox(dst, img, box, p.Filter, p.Flip)
}
