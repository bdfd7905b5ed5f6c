package imgcodec

import (
	"fmt"
	"io"

	"github.com/faster-training/faster/imgcodec/turbojpeg"
)

// Planar420 is a picture as a 4:2:0 JPEG stores it: a luma plane Y and two
// chroma planes Cb, Cr of half its width and height (rounded up), chroma
// sample (i, j) covering luma [2i, 2i+2) x [2j, 2j+2), all one-channel
// Images sharing one pooled buffer. A resizer can work on the planes
// directly and EncodeJPEG420 write them back, with no chroma upsampling,
// colour conversion or chroma downsampling in between.
//
// Release it when done (the planes go with it); a plane must not be
// released by itself.
type Planar420 struct {
	Y, Cb, Cr Image
	Warning   error // as Image.Warning
	buf       *Image
}

// Release returns the buffer to the pool; p must not be used afterwards.
func (p *Planar420) Release() {
	if p == nil || p.buf == nil {
		return
	}
	p.buf.Release()
	*p = Planar420{}
}

// NewPlanar420 returns planes for a w x h picture from the pool: Y w x h,
// Cb and Cr ceil(w/2) x ceil(h/2), tight strides, contents undefined.
func NewPlanar420(w, h int) *Planar420 {
	cw, ch := (w+1)/2, (h+1)/2
	buf := getImage(w*h + 2*cw*ch)
	p := &Planar420{buf: buf}
	n := w * h
	p.Y = Image{Pix: buf.Pix[:n:n], Width: w, Height: h, Channels: 1, Stride: w, class: -1}
	p.Cb = Image{Pix: buf.Pix[n : n+cw*ch : n+cw*ch], Width: cw, Height: ch, Channels: 1, Stride: cw, class: -1}
	p.Cr = Image{Pix: buf.Pix[n+cw*ch:], Width: cw, Height: ch, Channels: 1, Stride: cw, class: -1}
	return p
}

// DecodeJPEG420 decodes a 4:2:0 YCbCr JPEG (the usual camera and ImageNet
// kind) into its planes as stored, at 1/ScaleDenom scale: Y is the scaled
// size, ceil(W/d) x ceil(H/d); Cb and Cr span whole MCUs and one sample
// more each way, so they hold the chroma the encoder padded the picture
// with past ceil(W/2d) x ceil(H/2d), as decoded, then the last column and
// row repeated (a resize may read past the edge into them). opts may set only
// ScaleDenom and MaxPixels. Other JPEGs, other formats and builds without
// cgo return an error wrapping ErrUnsupported, before decoding anything:
// decode those with Decode.
func DecodeJPEG420(data []byte, opts *DecodeOptions) (*Planar420, error) {
	if opts == nil {
		opts = &DecodeOptions{}
	}
	if len(data) < 2 || data[0] != 0xff || data[1] != 0xd8 {
		return nil, fmt.Errorf("imgcodec: planar decode: not a JPEG: %w", ErrUnsupported)
	}
	if f, err := sniff(data); err == nil {
		if err := checkBytes(f, data, opts); err != nil {
			return nil, err
		}
	}
	var a allocator
	f, err := turbojpeg.Decode420(data, rawOptions(opts), a.alloc)
	if err != nil {
		a.img.Release()
		return nil, fmt.Errorf("imgcodec: %w", err)
	}
	p := &Planar420{buf: a.img, Warning: f.Warning}
	p.Y = Image{Pix: f.Y, Width: f.Width, Height: f.Height, Channels: 1, Stride: f.YStride, class: -1}
	p.Cb = Image{Pix: f.Cb, Width: f.CStride, Height: f.CRows, Channels: 1, Stride: f.CStride, class: -1}
	p.Cr = Image{Pix: f.Cr, Width: f.CStride, Height: f.CRows, Channels: 1, Stride: f.CStride, class: -1}
	return p, nil
}

// EncodeJPEG420 writes p as a baseline 4:2:0 JPEG of the given quality
// (0 means DefaultQuality) whose planes are p's: the picture is
// p.Y.Width x p.Y.Height, and Cb, Cr must be at least half that (rounded
// up) with one stride. Without cgo it returns an error wrapping
// ErrUnsupported: encode an RGB Image with EncodeJPEG instead.
func EncodeJPEG420(w io.Writer, p *Planar420, quality int) error {
	if quality == 0 {
		quality = DefaultQuality
	}
	if p.Cb.Stride != p.Cr.Stride {
		return fmt.Errorf("imgcodec: encode: chroma strides %d and %d differ", p.Cb.Stride, p.Cr.Stride)
	}
	if err := turbojpeg.Encode420(w, p.Y.Pix, p.Y.Stride, p.Cb.Pix, p.Cr.Pix, p.Cb.Stride, p.Y.Width, p.Y.Height, quality); err != nil {
		return fmt.Errorf("imgcodec: %w", err)
	}
	return nil
}
