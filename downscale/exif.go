package downscale

import (
	"encoding/binary"

	"github.com/faster-training/faster/imgcodec"
)

// Orientation returns the EXIF orientation (1-8) of a JPEG, read from the
// TIFF IFD0 of its first APP1 "Exif" segment, or 1 when there is none or
// the data is not a JPEG or is malformed. It reads only the markers before
// the first scan and never indexes outside data.
func Orientation(data []byte) int {
	if len(data) < 4 || data[0] != 0xFF || data[1] != 0xD8 {
		return 1
	}
	p := 2
	for p+4 <= len(data) {
		if data[p] != 0xFF {
			return 1
		}
		marker := data[p+1]
		if marker == 0xFF { // fill byte
			p++
			continue
		}
		if marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01 {
			p += 2
			continue
		}
		if marker == 0xDA || marker == 0xD9 { // start of scan, end of image
			return 1
		}
		n := int(binary.BigEndian.Uint16(data[p+2:]))
		if n < 2 || p+2+n > len(data) {
			return 1
		}
		seg := data[p+4 : p+2+n]
		if marker == 0xE1 && len(seg) >= 6 && string(seg[:6]) == "Exif\x00\x00" {
			return tiffOrientation(seg[6:])
		}
		p += 2 + n
	}
	return 1
}

// tiffOrientation reads tag 0x0112 from IFD0 of a TIFF structure.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	if bo.Uint16(t[2:]) != 42 {
		return 1
	}
	off := uint64(bo.Uint32(t[4:]))
	if off+2 > uint64(len(t)) {
		return 1
	}
	n := uint64(bo.Uint16(t[off:]))
	for i := uint64(0); i < n; i++ {
		e := off + 2 + 12*i
		if e+12 > uint64(len(t)) {
			return 1
		}
		if bo.Uint16(t[e:]) != 0x0112 {
			continue
		}
		typ, count := bo.Uint16(t[e+2:]), bo.Uint32(t[e+4:])
		if typ != 3 || count != 1 { // SHORT, one value
			return 1
		}
		if v := int(bo.Uint16(t[e+8:])); v >= 1 && v <= 8 {
			return v
		}
		return 1
	}
	return 1
}

// orientedSize is the size of a w x h image once orientation o is applied.
func orientedSize(w, h, o int) (int, int) {
	if o >= 5 {
		return h, w
	}
	return w, h
}

// orient returns src with EXIF orientation o applied (a new pooled image),
// or src itself for orientation 1. Destination pixel (x, y) takes source
// pixel (sx, sy) per the EXIF 2.3 table: 2 mirror, 3 rotate 180, 4 flip,
// 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90
// counter-clockwise.
func orient(src *imgcodec.Image, o int) *imgcodec.Image {
	if o <= 1 || o > 8 {
		return src
	}
	W, H, ch := src.Width, src.Height, src.Channels
	dw, dh := orientedSize(W, H, o)
	dst := imgcodec.NewImage(dw, dh, ch)
	for y := 0; y < dh; y++ {
		row := dst.Pix[y*dst.Stride : y*dst.Stride+dw*ch]
		for x := 0; x < dw; x++ {
			var sx, sy int
			switch o {
			case 2:
				sx, sy = W-1-x, y
			case 3:
				sx, sy = W-1-x, H-1-y
			case 4:
				sx, sy = x, H-1-y
			case 5:
				sx, sy = y, x
			case 6:
				sx, sy = y, H-1-x
			case 7:
				sx, sy = W-1-y, H-1-x
			case 8:
				sx, sy = W-1-y, x
			}
			copy(row[x*ch:x*ch+ch], src.Pix[sy*src.Stride+sx*ch:])
		}
	}
	return dst
}
