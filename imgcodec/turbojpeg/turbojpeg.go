// Package turbojpeg decodes and encodes JPEG with libjpeg-turbo through a
// small cgo wrapper over the libjpeg API (jpeglib.h, Debian
// libjpeg62-turbo-dev). It is the only package of the module with
// import "C" for JPEG.
//
// Built without cgo (CGO_ENABLED=0), the same API is served by a pure-Go
// decoder (image/jpeg plus box downscaling and cropping, so output sizes
// match) and image/jpeg's encoder; Backend says which one is in use.
//
// Memory: the decoder writes into a Go buffer obtained from the caller's
// Alloc for each call; C keeps no Go pointer after a call returns, and all
// C-side memory lives in libjpeg's pools, freed before the call returns,
// on errors too. libjpeg's fatal errors longjmp back into the wrapper,
// never exit(). Everything here is safe for concurrent use: each call owns
// its decompressor.
//
// What the decoder produces:
//   - full decode to RGB (3 channels) or gray (1 channel, the luma);
//   - DCT-domain scaled decode by 1/2, 1/4 or 1/8 (output ceil(W/d) x
//     ceil(H/d));
//   - a crop of the (scaled) output, decoding only the MCU columns and
//     rows it needs (jpeg_crop_scanline, jpeg_skip_scanlines);
//   - CMYK and YCCK converted to RGB, reading the channels as Adobe
//     writes them (inverted: 255 means no ink);
//   - a pixel limit checked from the header, before any allocation;
//   - truncated data (libjpeg's "premature end of JPEG file" and "premature
//     end of data segment" warnings) rejected as ErrTruncated unless
//     Options.AllowTruncated, which keeps libjpeg's grey fill for the
//     missing part and sets Frame.Warning;
//   - files whose scans go over the image's blocks more than
//     MaxScanPasses times in all (a scan bomb: repeated scans, each a
//     pass over the image however few bytes it holds), or that have more
//     than MaxScans scans, rejected as corrupt from a walk of their
//     markers before decoding (libjpeg's progress monitor counts the same
//     as it reads), so that hostile input cannot make decoding
//     arbitrarily slow.
package turbojpeg

import "github.com/faster-training/faster/imgcodec/internal/rawimg"

type (
	// Options select scale, crop, gray output, pixel limit and the
	// treatment of truncated data (see imgcodec.DecodeOptions).
	Options = rawimg.Options
	// Frame is a decoded image written into the caller's buffer.
	Frame = rawimg.Frame
	// Alloc returns the output buffer of length n.
	Alloc = rawimg.Alloc
	// Header is what a JPEG's markers say before any pixel is decoded.
	Header = rawimg.JPEGHeader
)

// MaxScans bounds the number of scans of a JPEG, and MaxScanPasses the
// passes its scans make over the image's blocks (see
// rawimg.MaxScanPasses): a file past either is ErrCorrupt, refused from
// its markers before decoding.
const (
	MaxScans      = rawimg.MaxScans
	MaxScanPasses = rawimg.MaxScanPasses
)

// PureGo decodes with the pure-Go decoder whatever the build. Tests use
// it to run one conformance suite against both decoders.
func PureGo(data []byte, o *Options, alloc Alloc) (Frame, error) {
	return rawimg.DecodeJPEG(data, o, alloc)
}

// Planes420 is a 4:2:0 YCbCr JPEG decoded into its planes as stored, no
// chroma upsampling, no colour conversion (Decode420): luma Y of Width x
// Height samples (the scaled size, ceil(W/d) x ceil(H/d)) and chroma Cb,
// Cr of half as many each way, chroma sample (i, j) covering luma
// [2i, 2i+2) x [2j, 2j+2). Every plane spans whole MCUs: Y Rows rows of
// YStride bytes, Cb and Cr CRows rows of CStride, the columns and rows past
// the image being what the encoder padded with, as decoded (the chroma
// padding is all written, plus one last column and row repeating the one
// before; the luma padding only partly).
type Planes420 struct {
	Width, Height    int
	Y, Cb, Cr        []byte
	YStride, CStride int
	Rows, CRows      int
	Warning          error
}
