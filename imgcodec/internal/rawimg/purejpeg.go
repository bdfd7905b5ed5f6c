package rawimg

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
)

// DecodeJPEG is the pure-Go JPEG decoder: image/jpeg, then FromImage for
// colour conversion, box downscaling and cropping, so that its output has
// the geometry of libjpeg's DCT-scaled, cropped decode.
//
// image/jpeg cannot return a partial image. With AllowTruncated it retries
// with an EOI marker appended, which recovers some truncated files; the
// others stay ErrTruncated.
func DecodeJPEG(data []byte, o *Options, alloc Alloc) (Frame, error) {
	hdr, err := ParseJPEGHeader(data)
	if err != nil {
		return Frame{}, err
	}
	if err := o.CheckPixels("jpeg", hdr.Width, hdr.Height); err != nil {
		return Frame{}, err
	}
	if _, _, err := o.Region(hdr.Width, hdr.Height); err != nil {
		return Frame{}, err
	}
	// image/jpeg decodes every scan, those after a baseline file's first
	// one too.
	if err := CheckJPEGScans(data, MaxScans, true); err != nil {
		return Frame{}, err
	}
	img, err := jpeg.Decode(bytes.NewReader(data))
	var warn error
	if err != nil {
		err = goJPEGError(err, len(data))
		if !errors.Is(err, ErrTruncated) || !o.AllowTruncated {
			return Frame{}, err
		}
		padded := append(data[:len(data):len(data)], 0xff, 0xd9)
		if img, err = jpeg.Decode(bytes.NewReader(padded)); err != nil {
			return Frame{}, Truncated("jpeg", int64(len(data)), "not recoverable by the pure-Go decoder")
		}
		warn = Truncated("jpeg", int64(len(data)), "accepted")
	}
	f, err := FromImage("jpeg", img, o, alloc)
	f.Warning = warn
	return f, err
}

// goJPEGError maps image/jpeg's errors to ours.
func goJPEGError(err error, n int) error {
	var fe jpeg.FormatError
	var ue jpeg.UnsupportedError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return Truncated("jpeg", int64(n), err.Error())
	case errors.As(err, &ue):
		return fmt.Errorf("jpeg: %s: %w", string(ue), ErrUnsupported)
	case errors.As(err, &fe):
		if string(fe) == "short Huffman data" {
			return Truncated("jpeg", int64(n), string(fe))
		}
		return Corrupt("jpeg", -1, "%s", string(fe))
	}
	return Corrupt("jpeg", -1, "%v", err)
}

// DecodeJPEGHeader is ParseJPEGHeader with image/jpeg as a second opinion
// for streams the scanner rejects.
func DecodeJPEGHeader(data []byte) (JPEGHeader, error) {
	h, err := ParseJPEGHeader(data)
	if err == nil {
		return h, nil
	}
	if c, err2 := jpeg.DecodeConfig(bytes.NewReader(data)); err2 == nil {
		return JPEGHeader{Width: c.Width, Height: c.Height, Components: components(c), Precision: 8}, nil
	}
	return h, err
}

func components(c image.Config) int {
	switch c.ColorModel {
	case color.GrayModel:
		return 1
	case color.CMYKModel:
		return 4
	}
	return 3
}
