package rawimg

import (
	"fmt"
	"image"
)

// DefaultMaxPixels is the pixel limit when Options.MaxPixels is 0.
const DefaultMaxPixels = 1 << 28

// Options mirror imgcodec.DecodeOptions (see there for the semantics).
type Options struct {
	ScaleDenom     int
	Crop           image.Rectangle
	Gray           bool
	MaxPixels      int64
	AllowTruncated bool
}

// Frame is a decoded image in interleaved 8-bit layout, written into a
// buffer obtained from the caller's Alloc.
type Frame struct {
	Pix      []byte
	Width    int
	Height   int
	Channels int
	Stride   int
	// Warning is non-nil when the image was decoded despite a problem
	// (truncated data accepted by AllowTruncated, extraneous bytes, ...).
	Warning error
}

// Alloc returns a buffer of length n for the output pixels. The decoder
// writes every byte of it.
type Alloc func(n int) []byte

// ScaledSize is the output size of a 1/denom scaled decode, rounded up as
// libjpeg computes it.
func ScaledSize(w, h, denom int) (int, int) {
	return (w + denom - 1) / denom, (h + denom - 1) / denom
}

// Channels is the number of output channels the options ask for.
func (o *Options) Channels() int {
	if o.Gray {
		return 1
	}
	return 3
}

// CheckPixels rejects a w x h image above the limit (or with a zero side).
func (o *Options) CheckPixels(format string, w, h int) error {
	limit := o.MaxPixels
	if limit <= 0 {
		limit = DefaultMaxPixels
	}
	if w <= 0 || h <= 0 {
		return Corrupt(format, -1, "image size %dx%d", w, h)
	}
	if int64(w)*int64(h) > limit {
		return fmt.Errorf("%s: %dx%d = %d pixels, limit %d: %w", format, w, h, int64(w)*int64(h), limit, ErrTooLarge)
	}
	return nil
}

// Region validates the scale and crop for a w x h image and returns the
// scale denominator and the output rectangle in scaled coordinates.
func (o *Options) Region(w, h int) (int, image.Rectangle, error) {
	d := o.ScaleDenom
	switch d {
	case 0:
		d = 1
	case 1, 2, 4, 8:
	default:
		return 0, image.Rectangle{}, fmt.Errorf("scale 1/%d (want 1, 2, 4 or 8): %w", o.ScaleDenom, ErrInvalidOptions)
	}
	sw, sh := ScaledSize(w, h, d)
	full := image.Rect(0, 0, sw, sh)
	if o.Crop.Empty() {
		return d, full, nil
	}
	if !o.Crop.In(full) {
		return 0, image.Rectangle{}, fmt.Errorf("crop %v outside the %dx%d (scaled 1/%d) image: %w", o.Crop, sw, sh, d, ErrInvalidOptions)
	}
	return d, o.Crop, nil
}
