// Package rawpix is the wire format of a raw-pixel image: uncompressed
// 8-bit pixels behind a small self-describing header, so that a reader
// holding pixels (a Caffe Datum that is not encoded) can hand them to the
// decode stage as any other image, and imgcodec tells them by their magic
// as it tells a PNG.
//
// Layout (all integers little-endian):
//
//	offset size
//	0      8    magic "\x89RAW\r\n\x1a\n"
//	8      4    width  (uint32, > 0)
//	12     4    height (uint32, > 0)
//	16     1    channels: 1 (gray) or 3 (colour)
//	17     1    layout: 0 interleaved (HWC; colour is R,G,B),
//	                    1 planar BGR (CHW; planes B, G, R: Caffe's Datum, OpenCV's order)
//	18     2    zero
//	20     width*height*channels bytes of pixels, rows top to bottom, nothing after
//
// The magic, like PNG's, starts with a byte above 0x7f and holds CR LF,
// SUB and LF, so that text-mode transfers that mangle it are caught. It
// and the header's layout are part of the format and must not change.
//
// The package is stdlib only: readers in package source write the header
// without importing the decoders.
package rawpix

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Magic starts every raw-pixel image. It must not change.
const Magic = "\x89RAW\r\n\x1a\n"

// HeaderSize is the size of the header before the pixels. It must not
// change.
const HeaderSize = 20

// Layout is the order of the pixel bytes.
type Layout uint8

// Layouts. Their numbers are part of the format and must not change.
const (
	// Interleaved is row-major HWC: colour pixels are R, G, B.
	Interleaved Layout = 0
	// PlanarBGR is CHW with the planes in B, G, R order, as Caffe's
	// convert_imageset stores a colour Datum (OpenCV's channel order).
	// A one-channel image in either layout is the same bytes.
	PlanarBGR Layout = 1
)

// Errors of Parse.
var (
	// ErrShort: the data ends before the header or the pixels do.
	ErrShort = errors.New("rawpix: data ends early")
	// ErrHeader: the header is not a raw-pixel header this package reads.
	ErrHeader = errors.New("rawpix: bad header")
)

// Header describes a raw-pixel image.
type Header struct {
	Width, Height, Channels int
	Layout                  Layout
}

// PixelBytes is the size of the pixel data the header announces.
func (h Header) PixelBytes() int64 {
	return int64(h.Width) * int64(h.Height) * int64(h.Channels)
}

// Append appends the header's wire form to dst. It does not check h:
// Parse does.
func (h Header) Append(dst []byte) []byte {
	dst = append(dst, Magic...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.Width))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.Height))
	return append(dst, byte(h.Channels), byte(h.Layout), 0, 0)
}

// Parse reads the header of a raw-pixel image and returns it with the
// pixel bytes (aliasing b). The data must hold exactly the pixels the
// header announces: fewer is ErrShort, more, or a header with a zero
// side, a channel count other than 1 or 3, an unknown layout or nonzero
// reserved bytes is ErrHeader.
func Parse(b []byte) (Header, []byte, error) {
	n := min(len(b), len(Magic))
	if string(b[:n]) != Magic[:n] {
		return Header{}, nil, fmt.Errorf("%w: no magic", ErrHeader)
	}
	if len(b) < HeaderSize {
		return Header{}, nil, fmt.Errorf("%w: %d bytes, the header has %d", ErrShort, len(b), HeaderSize)
	}
	w, h := binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])
	hd := Header{Width: int(w), Height: int(h), Channels: int(b[16]), Layout: Layout(b[17])}
	switch {
	case w == 0 || h == 0 || w > 1<<30 || h > 1<<30:
		return Header{}, nil, fmt.Errorf("%w: size %dx%d", ErrHeader, w, h)
	case hd.Channels != 1 && hd.Channels != 3:
		return Header{}, nil, fmt.Errorf("%w: %d channels (want 1 or 3)", ErrHeader, hd.Channels)
	case hd.Layout != Interleaved && hd.Layout != PlanarBGR:
		return Header{}, nil, fmt.Errorf("%w: layout %d", ErrHeader, hd.Layout)
	case b[18] != 0 || b[19] != 0:
		return Header{}, nil, fmt.Errorf("%w: reserved bytes %#x %#x", ErrHeader, b[18], b[19])
	}
	px := b[HeaderSize:]
	switch n := hd.PixelBytes(); {
	case int64(len(px)) < n:
		return hd, nil, fmt.Errorf("%w: %d pixel bytes, %dx%dx%d needs %d", ErrShort, len(px), hd.Width, hd.Height, hd.Channels, n)
	case int64(len(px)) > n:
		return hd, nil, fmt.Errorf("%w: %d pixel bytes, %dx%dx%d needs %d", ErrHeader, len(px), hd.Width, hd.Height, hd.Channels, n)
	}
	return hd, px, nil
}
