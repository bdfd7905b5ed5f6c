package imgcodec

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	"github.com/faster-training/faster/imgcodec/internal/rawimg"
)

func init() {
	RegisterStdFormat("png", "\x89PNG\r\n\x1a\n", decodePNG, png.DecodeConfig)
}

func rawOptions(o *DecodeOptions) *rawimg.Options {
	return &rawimg.Options{ScaleDenom: o.ScaleDenom, Crop: o.Crop, Gray: o.Gray, MaxPixels: o.MaxPixels, AllowTruncated: o.AllowTruncated}
}

// alloc is a rawimg.Alloc that takes the Image from the pool.
type allocator struct{ img *Image }

func (a *allocator) alloc(n int) []byte {
	a.img = getImage(n)
	return a.img.Pix
}

// fromFrame wraps a decoded frame in the pooled Image its buffer came from.
func (a *allocator) image(f rawimg.Frame, err error) (*Image, error) {
	if err != nil {
		a.img.Release()
		return nil, err
	}
	img := a.img
	img.Width, img.Height, img.Channels, img.Stride, img.Warning = f.Width, f.Height, f.Channels, f.Stride, f.Warning
	return img, nil
}

func decodeStd(name string, data []byte, opts *DecodeOptions, decode func(io.Reader) (image.Image, error), config func(io.Reader) (image.Config, error)) (*Image, error) {
	o := rawOptions(opts)
	c, err := config(bytes.NewReader(data))
	if err != nil {
		return nil, stdError(name, err, len(data))
	}
	if err := o.CheckPixels(name, c.Width, c.Height); err != nil {
		return nil, err
	}
	if _, _, err := o.Region(c.Width, c.Height); err != nil {
		return nil, err
	}
	src, err := decode(bytes.NewReader(data))
	if err != nil {
		return nil, stdError(name, err, len(data))
	}
	var a allocator
	return a.image(rawimg.FromImage(name, src, o, a.alloc))
}

// stdError maps a Go image decoder's error: running out of data is
// ErrTruncated, anything else is corrupt data.
func stdError(name string, err error, n int) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return rawimg.Truncated(name, int64(n), err.Error())
	}
	var tu tiff.UnsupportedError
	if errors.Is(err, bmp.ErrUnsupported) || errors.As(err, &tu) {
		return fmt.Errorf("%s: %v: %w", name, err, ErrUnsupported)
	}
	return &rawimg.CorruptError{Format: name, Offset: -1, Err: err}
}

// workBytes is the bytes a pixel of the image a Go decoder returns for c
// (before it is converted to RGB or gray): 8 for 16-bit colour, 4 for
// 8-bit colour with alpha (an upper bound for YCbCr), 2 for 16-bit gray,
// 1 for gray and palettes.
func workBytes(c image.Config) int {
	switch c.ColorModel {
	case color.RGBA64Model, color.NRGBA64Model:
		return 8
	case color.Gray16Model:
		return 2
	case color.GrayModel, color.AlphaModel:
		return 1
	}
	if _, ok := c.ColorModel.(color.Palette); ok {
		return 1
	}
	return 4
}

// components counts colour components (alpha excluded) of a Go colour model.
func components(c image.Config) int {
	switch c.ColorModel {
	case color.GrayModel, color.Gray16Model:
		return 1
	case color.CMYKModel:
		return 4
	}
	return 3
}

// decodePNG is png.Decode, with a 16-bit gray PNG that has a tRNS chunk
// (image/png gives it as NRGBA64) given back as the Gray16 it is: PIL
// opens it as mode I, ignoring the transparency, and clips it to 255 in
// convert("RGB"). The IHDR's depth and colour type (bytes 24 and 25)
// tell it from gray with an alpha channel, which PIL converts by the high
// byte as any 16-bit colour.
func decodePNG(r io.Reader) (image.Image, error) {
	var ihdr [2]byte
	if ra, ok := r.(io.ReaderAt); ok {
		ra.ReadAt(ihdr[:], 24)
	}
	m, err := png.Decode(r)
	if err != nil {
		return nil, err
	}
	if n, ok := m.(*image.NRGBA64); ok && ihdr == [2]byte{16, 0} {
		g := image.NewGray16(n.Rect)
		for i := 0; i < len(g.Pix)/2; i++ {
			g.Pix[2*i], g.Pix[2*i+1] = n.Pix[8*i], n.Pix[8*i+1]
		}
		return g, nil
	}
	return m, nil
}
