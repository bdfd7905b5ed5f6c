package imgcodec

import "image"

// Image is a decoded picture in interleaved (HWC) 8-bit layout: row y starts
// at Pix[y*Stride], and pixel x of that row is Pix[y*Stride+x*Channels:][:Channels].
// Channels is 1 (gray) or 3 (RGB).
//
// Images returned by a decoder or NewImage come from a pool: call Release
// when done so the Image and its buffer are reused. Neither the Image nor
// its Pix may be used after Release, and Release must be called at most
// once. Forgetting Release is safe: the garbage collector reclaims it.
type Image struct {
	Pix      []uint8
	Width    int
	Height   int
	Channels int
	Stride   int

	// Warning is non-nil when the image was decoded despite a problem in
	// the data: truncation accepted by DecodeOptions.AllowTruncated
	// (errors.Is(Warning, ErrTruncated)) or a recoverable corruption that
	// libjpeg warns about (extraneous bytes between markers, ...).
	Warning error

	class    int8    // pool size class of Pix; -1 if not pooled
	released bool    // Release was called: a second call does nothing
	pooled   []uint8 // the buffer while the Image sits in the pool
}

// Config describes an encoded image without decoding its pixels.
type Config struct {
	Format     string // "jpeg", "png", "gif", ...
	Width      int
	Height     int
	Components int // colour components in the file: 1 gray, 3 YCbCr/RGB, 4 CMYK/YCCK
	// What decoding holds besides its output, per pixel of the full
	// image: a Go decoder's own image (8 bytes for 16-bit RGBA), or a
	// progressive JPEG's coefficients (2 bytes per component), which
	// libjpeg keeps for the whole image whatever the scale. See
	// DecodeBytes.
	WorkBytesPerPixel int
}

// DecodeBytes is the most memory decoding c as opts asks can take: the
// output (RGB, or gray) at the scaled size and the decoder's working
// image at full size. Decode refuses an image above
// DecodeOptions.MaxBytes by it before allocating anything.
func (c Config) DecodeBytes(opts *DecodeOptions) int64 {
	d, ch := 1, int64(3)
	if opts != nil {
		d = max(opts.ScaleDenom, 1)
		if opts.Gray {
			ch = 1
		}
	}
	w, h := int64(c.Width), int64(c.Height)
	out := ((w + int64(d) - 1) / int64(d)) * ((h + int64(d) - 1) / int64(d)) * ch
	return out + w*h*int64(c.WorkBytesPerPixel)
}

// DecodeOptions select what a decoder produces. The zero value decodes the
// whole image at full size to RGB.
type DecodeOptions struct {
	// ScaleDenom asks for a DCT-domain scaled decode by 1/ScaleDenom
	// (1, 2, 4 or 8; 0 means 1). Decoders without DCT scaling (PNG, the
	// pure-Go JPEG fallback) decode at full size and downscale by box
	// averaging, so the output size is the same for every decoder:
	// ceil(W/ScaleDenom) x ceil(H/ScaleDenom), as libjpeg computes it.
	ScaleDenom int

	// Crop, if not empty, is the region to return, in the coordinates of
	// the (scaled) output. Decoders skip what lies outside where they can
	// (libjpeg-turbo skips scanlines above and below and decodes only the
	// needed MCU columns). It must lie within the scaled image.
	Crop image.Rectangle

	// Gray returns one channel (luma). Without it, grayscale images are
	// expanded to RGB.
	Gray bool

	// MaxPixels rejects images whose width*height (before scaling) exceeds
	// it, against decompression bombs. 0 means DefaultMaxPixels.
	MaxPixels int64

	// MaxBytes rejects images whose decoding would take more memory
	// than this (Config.DecodeBytes: the output and the decoder's working
	// buffers, which the pixel limit alone does not bound: a 2 MB 16-bit
	// PNG decodes through 8 bytes a pixel), with ErrTooLarge. 0 means
	// DefaultMaxBytes.
	MaxBytes int64

	// AllowTruncated accepts a JPEG whose data ends early (the missing
	// rows are grey, as libjpeg fills them) and reports it in Warning.
	// Without it, truncated data is an error.
	AllowTruncated bool
}

// DefaultMaxPixels is the pixel limit when DecodeOptions.MaxPixels is 0
// (about 16k x 16k).
const DefaultMaxPixels = 1 << 28

// DefaultMaxBytes is the decode memory limit when DecodeOptions.MaxBytes is
// 0: 512 MiB, room for a 170-megapixel baseline JPEG, a 59-megapixel
// progressive one or a 48-megapixel 16-bit RGBA PNG. A loader counts it
// once per decode worker in its memory budget.
const DefaultMaxBytes = 512 << 20
