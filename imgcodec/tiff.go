package imgcodec

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"golang.org/x/image/tiff"
)

// TIFF (torchvision's ImageFolder lists .tif and .tiff) through
// golang.org/x/image/tiff: either byte order; uncompressed, LZW, Deflate,
// PackBits and CCITT G3/G4; gray, palette, RGB and RGBA of 8 or 16 bits.
// 16-bit gray is clipped to 255 as PIL's convert("RGB") of its mode I;16
// does, 16-bit colour keeps its high byte. Another compression (JPEG in
// TIFF) is ErrUnsupported from the header already, so that a check of
// headers (pack's) finds what Decode could not decode.
func init() {
	d, c := stdFuncs("tiff", tiff.Decode, tiff.DecodeConfig)
	registerAccepting("tiff", isTIFF, d, func(data []byte) (Config, error) {
		cfg, err := c(data)
		if err != nil {
			return cfg, err
		}
		if v, ok := tiffCompression(data); ok {
			switch v {
			case 0, 1, 3, 4, 5, 8, 32773, 32946:
			default:
				return Config{}, fmt.Errorf("tiff: compression %d (supported: none, LZW, Deflate, PackBits, CCITT G3/G4): %w", v, ErrUnsupported)
			}
		}
		return cfg, nil
	})
}

func isTIFF(b []byte) bool {
	return bytes.HasPrefix(b, []byte("II*\x00")) || bytes.HasPrefix(b, []byte("MM\x00*"))
}

// tiffCompression reads the Compression tag (259) of the first IFD; ok is
// false when it is absent or the IFD cannot be read (the decoder reports
// that).
func tiffCompression(b []byte) (uint32, bool) {
	var bo binary.ByteOrder = binary.LittleEndian
	if b[0] == 'M' {
		bo = binary.BigEndian
	}
	if len(b) < 8 {
		return 0, false
	}
	off := uint64(bo.Uint32(b[4:8]))
	if off+2 > uint64(len(b)) {
		return 0, false
	}
	n := uint64(bo.Uint16(b[off:]))
	for i := uint64(0); i < n; i++ {
		e := off + 2 + 12*i
		if e+12 > uint64(len(b)) {
			return 0, false
		}
		if bo.Uint16(b[e:]) != 259 {
			continue
		}
		switch bo.Uint16(b[e+2:]) {
		case 3: // SHORT
			return uint32(bo.Uint16(b[e+8:])), true
		case 4: // LONG
			return bo.Uint32(b[e+8:]), true
		}
		return 0, false
	}
	return 0, false
}
