//go:build !cgo

package turbojpeg

import (
	"fmt"
	"image"
	"image/jpeg"
	"io"

	"github.com/faster-training/faster/imgcodec/internal/rawimg"
)

// Backend names the implementation in this build: "libjpeg-turbo" or "pure-go".
const Backend = "pure-go"

// DecodeHeader reads the header without decoding pixels.
func DecodeHeader(data []byte) (Header, error) {
	return rawimg.DecodeJPEGHeader(data)
}

// Decode decodes a JPEG into a buffer from alloc.
func Decode(data []byte, o *Options, alloc Alloc) (Frame, error) {
	if o == nil {
		o = &Options{}
	}
	return rawimg.DecodeJPEG(data, o, alloc)
}

// Encode writes pix (w x h, 1 or 3 channels, stride bytes per row) as a
// baseline JPEG of the given quality (1-100) with 4:2:0 chroma subsampling.
func Encode(wr io.Writer, pix []byte, w, h, channels, stride, quality int) error {
	if err := checkEncode(pix, w, h, channels, stride, quality); err != nil {
		return err
	}
	var img image.Image
	if channels == 1 {
		img = &image.Gray{Pix: pix, Stride: stride, Rect: image.Rect(0, 0, w, h)}
	} else {
		rgba := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			src, dst := pix[y*stride:][:3*w], rgba.Pix[y*rgba.Stride:][:4*w]
			for x := 0; x < w; x++ {
				dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = src[3*x], src[3*x+1], src[3*x+2], 255
			}
		}
		img = rgba
	}
	return jpeg.Encode(wr, img, &jpeg.Options{Quality: quality})
}

// Decode420 needs libjpeg's raw data output: ErrUnsupported without cgo.
func Decode420(data []byte, o *Options, alloc Alloc) (Planes420, error) {
	return Planes420{}, fmt.Errorf("jpeg: planar decode (pure-go build): %w", rawimg.ErrUnsupported)
}

// Encode420 needs libjpeg's raw data input: ErrUnsupported without cgo.
func Encode420(wr io.Writer, y []byte, yStride int, cb, cr []byte, cStride, w, h, quality int) error {
	if err := checkEncode420(y, yStride, cb, cr, cStride, w, h, quality); err != nil {
		return err
	}
	return fmt.Errorf("jpeg: planar encode (pure-go build): %w", rawimg.ErrUnsupported)
}

// Link says how libjpeg-turbo is linked into this build: not at all.
const Link = ""
