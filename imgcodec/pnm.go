package imgcodec

import (
	"fmt"
	"math"

	"github.com/faster-training/faster/imgcodec/internal/rawimg"
)

// PNM (torchvision's ImageFolder lists .ppm and .pgm; .pbm is the same
// family): P1-P3 in ASCII, P4-P6 binary, read as Pillow 9.4's
// PpmImagePlugin reads them, so the pixels are PIL's convert("RGB"):
//
//   - the header is the magic, then width, height and (not for bitmaps)
//     maxval, as decimal tokens of at most 10 characters, separated by
//     white space; '#' starts a comment to the end of its line; the
//     pixels start after the one white space character that ends the
//     last token.
//   - P1/P4 bitmaps: 1 is black, 0 white; P4 rows are padded to a byte.
//   - maxval 255 (binary) is the bytes as they are; another maxval
//     (1 to 65535; 2-byte big-endian samples above 255) scales each value
//     v as round(v/maxval*255), rounding half to even as Python's round
//     does, values above maxval giving 255 in binary files and an error in
//     ASCII ones.
//   - gray of maxval above 255 is PIL's mode I (scaled to 65535), which
//     convert("RGB") clips to 255: a 16-bit PGM is white wherever its
//     value is 255/65535 of full scale or more, as torchvision sees it.
//
// PIL takes an ASCII number Python's int() reads ("+5", "1_0"); these are
// refused here as corrupt.
func init() {
	registerAccepting("pnm", isPNM, decodePNM, configPNM)
}

func isPNM(b []byte) bool {
	return len(b) >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' && (len(b) == 2 || pnmSpace(b[2]))
}

func pnmSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// pnmHeader is a parsed PNM header.
type pnmHeader struct {
	kind          byte // '1'..'6'
	width, height int
	maxval        int // 1 for bitmaps
	data          int // offset of the first pixel byte or token
}

func (h *pnmHeader) bands() int {
	if h.kind == '3' || h.kind == '6' {
		return 3
	}
	return 1
}

func (h *pnmHeader) ascii() bool { return h.kind <= '3' }

func parsePNM(b []byte) (pnmHeader, error) {
	h := pnmHeader{kind: b[1], maxval: 1}
	i := 2
	n := 3
	if h.kind == '1' || h.kind == '4' {
		n = 2
	}
	for k := 0; k < n; k++ {
		v, next, err := pnmToken(b, i)
		if err != nil {
			return h, err
		}
		i = next
		switch k {
		case 0:
			h.width = v
		case 1:
			h.height = v
		case 2:
			if v < 1 || v > 65535 {
				return h, rawimg.Corrupt("pnm", int64(i), "maxval %d (want 1 to 65535)", v)
			}
			h.maxval = v
		}
	}
	h.data = i
	if h.width > math.MaxInt32 || h.height > math.MaxInt32 {
		return h, fmt.Errorf("pnm: %dx%d: %w", h.width, h.height, ErrTooLarge)
	}
	if h.width == 0 || h.height == 0 {
		return h, rawimg.Corrupt("pnm", -1, "image size %dx%d", h.width, h.height)
	}
	return h, nil
}

// pnmToken reads a header token from b[i:] as PIL's _read_token does,
// returning its value and the offset after the white space ending it.
func pnmToken(b []byte, i int) (int, int, error) {
	start := i
	digits := 0
	v := 0
	for {
		if i >= len(b) {
			if digits == 0 {
				return 0, i, rawimg.Truncated("pnm", int64(i), "the header ends early")
			}
			return v, i, nil
		}
		c := b[i]
		i++
		switch {
		case pnmSpace(c):
			if digits > 0 {
				return v, i, nil
			}
		case c == '#':
			for i < len(b) && b[i] != '\r' && b[i] != '\n' {
				i++
			}
			if i < len(b) {
				i++ // the line end, as PIL reads it
			}
		case c >= '0' && c <= '9':
			digits++
			if digits > 10 {
				return 0, i, rawimg.Corrupt("pnm", int64(start), "header token longer than 10 characters")
			}
			v = v*10 + int(c-'0')
		default:
			return 0, i, rawimg.Corrupt("pnm", int64(i-1), "header byte %q is not a decimal digit", c)
		}
	}
}

func configPNM(data []byte) (Config, error) {
	h, err := parsePNM(data)
	if err != nil {
		return Config{}, err
	}
	return Config{Format: "pnm", Width: h.width, Height: h.height, Components: h.bands(), WorkBytesPerPixel: h.bands()}, nil
}

// pnmScale is PIL's value for each sample value v of maxval: 8-bit.
func pnmScale(h *pnmHeader) []uint8 {
	n := 256
	if h.maxval > 255 {
		n = 65536
	}
	lut := make([]uint8, n)
	out := 255.0
	if h.bands() == 1 && h.maxval > 255 {
		out = 65535 // PIL's mode I, then clipped to 255 by convert
	}
	for v := range lut {
		s := math.RoundToEven(float64(v) / float64(h.maxval) * out)
		lut[v] = uint8(min(s, 255))
	}
	return lut
}

func decodePNM(data []byte, opts *DecodeOptions) (*Image, error) {
	h, err := parsePNM(data)
	if err != nil {
		return nil, err
	}
	o := rawOptions(opts)
	if err := o.CheckPixels("pnm", h.width, h.height); err != nil {
		return nil, err
	}
	if _, _, err := o.Region(h.width, h.height); err != nil {
		return nil, err
	}
	bands := h.bands()
	px := make([]byte, h.width*h.height*bands)
	switch {
	case h.kind == '4':
		err = pnmBits(data[h.data:], &h, px)
	case h.kind == '1':
		err = pnmASCIIBits(data, &h, px)
	case h.ascii():
		err = pnmASCII(data, &h, px)
	default:
		err = pnmBinary(data[h.data:], &h, px)
	}
	if err != nil {
		return nil, err
	}
	row := h.width * bands
	var a allocator
	return a.image(rawimg.FromRows("pnm", h.width, h.height, func(x, y, n int, dst []byte) {
		src := px[y*row+x*bands:]
		for i := 0; i < n; i++ {
			if bands == 1 {
				v := src[i]
				if o.Gray {
					dst[i] = v
				} else {
					dst[3*i], dst[3*i+1], dst[3*i+2] = v, v, v
				}
				continue
			}
			p := src[3*i:]
			if o.Gray {
				dst[i] = rawimg.Luma(p[0], p[1], p[2])
			} else {
				dst[3*i], dst[3*i+1], dst[3*i+2] = p[0], p[1], p[2]
			}
		}
	}, o, a.alloc))
}

// pnmBits unpacks P4 rows (a byte-padded row of bits, 1 black).
func pnmBits(b []byte, h *pnmHeader, px []byte) error {
	stride := (h.width + 7) / 8
	if need := stride * h.height; len(b) < need {
		return rawimg.Truncated("pnm", int64(h.data+len(b)), fmt.Sprintf("%d of %d pixel bytes", len(b), need))
	}
	for y := 0; y < h.height; y++ {
		row := b[y*stride:]
		for x := 0; x < h.width; x++ {
			px[y*h.width+x] = 255
			if row[x>>3]&(0x80>>(x&7)) != 0 {
				px[y*h.width+x] = 0
			}
		}
	}
	return nil
}

// pnmBinary reads P5/P6 samples, 1 byte each for maxval below 256, else 2
// (big-endian), scaled as PIL does.
func pnmBinary(b []byte, h *pnmHeader, px []byte) error {
	size := 1
	if h.maxval > 255 {
		size = 2
	}
	if need := len(px) * size; len(b) < need {
		return rawimg.Truncated("pnm", int64(h.data+len(b)), fmt.Sprintf("%d of %d pixel bytes", len(b), need))
	}
	if h.maxval == 255 {
		copy(px, b)
		return nil
	}
	lut := pnmScale(h)
	for i := range px {
		if size == 1 {
			px[i] = lut[b[i]]
		} else {
			px[i] = lut[int(b[2*i])<<8|int(b[2*i+1])]
		}
	}
	return nil
}

// pnmData is the ASCII pixel data with its comments ('#' to the end of
// the line) removed, as PIL's plain decoder reads it.
func pnmData(data []byte, h *pnmHeader) []byte {
	out := make([]byte, 0, len(data)-h.data)
	for i := h.data; i < len(data); i++ {
		if data[i] == '#' {
			for i < len(data) && data[i] != '\r' && data[i] != '\n' {
				i++
			}
			continue
		}
		out = append(out, data[i])
	}
	return out
}

// pnmASCIIBits reads P1: each '0' or '1' is a pixel, white space between
// them optional.
func pnmASCIIBits(data []byte, h *pnmHeader, px []byte) error {
	n := 0
	for _, c := range pnmData(data, h) {
		if n == len(px) {
			break
		}
		switch {
		case pnmSpace(c):
		case c == '0':
			px[n] = 255
			n++
		case c == '1':
			px[n] = 0
			n++
		default:
			return rawimg.Corrupt("pnm", -1, "pixel %d: %q is not 0 or 1", n, c)
		}
	}
	if n < len(px) {
		return rawimg.Truncated("pnm", int64(len(data)), fmt.Sprintf("%d of %d pixels", n, len(px)))
	}
	return nil
}

// pnmASCII reads P2/P3: decimal samples separated by white space, each at
// most maxval and 10 characters.
func pnmASCII(data []byte, h *pnmHeader, px []byte) error {
	lut := pnmScale(h)
	d := pnmData(data, h)
	n := 0
	for i := 0; i < len(d) && n < len(px); {
		if pnmSpace(d[i]) {
			i++
			continue
		}
		v, digits := 0, 0
		for ; i < len(d) && !pnmSpace(d[i]); i++ {
			c := d[i]
			if c < '0' || c > '9' {
				return rawimg.Corrupt("pnm", -1, "sample %d: %q is not a decimal digit", n, c)
			}
			if digits++; digits > 10 {
				return rawimg.Corrupt("pnm", -1, "sample %d: longer than 10 characters", n)
			}
			v = v*10 + int(c-'0')
		}
		if v > h.maxval {
			return rawimg.Corrupt("pnm", -1, "sample %d: %d above maxval %d", n, v, h.maxval)
		}
		px[n] = lut[v]
		n++
	}
	if n < len(px) {
		return rawimg.Truncated("pnm", int64(len(data)), fmt.Sprintf("%d of %d samples", n, len(px)))
	}
	return nil
}
