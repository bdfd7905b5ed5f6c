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
	RegisterStdFormat("png", "\x89PNG\r\n\x1a\n", png.Decode, png.DecodeConfig)
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
