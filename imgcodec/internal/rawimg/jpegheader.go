package rawimg

// ColorSpace is the colour space of the components stored in a JPEG file,
// named as libjpeg names them.
type ColorSpace int

const (
	ColorUnknown ColorSpace = iota
	ColorGray
	ColorYCbCr
	ColorRGB
	ColorCMYK
	ColorYCCK
)

func (c ColorSpace) String() string {
	switch c {
	case ColorGray:
		return "gray"
	case ColorYCbCr:
		return "YCbCr"
	case ColorRGB:
		return "RGB"
	case ColorCMYK:
		return "CMYK"
	case ColorYCCK:
		return "YCCK"
	}
	return "unknown"
}

// JPEGHeader is what the frame header (SOFn) and the APP0/APP14 markers
// before it say about a JPEG image.
type JPEGHeader struct {
	Width, Height int
	Components    int
	Precision     int
	Progressive   bool
	Arithmetic    bool
	ColorSpace    ColorSpace
}

// JPEG marker codes used by the scanner.
const (
	mSOI  = 0xd8
	mEOI  = 0xd9
	mSOS  = 0xda
	mAPP0 = 0xe0
	mAPPE = 0xee
	mDHT  = 0xc4
	mJPG  = 0xc8
	mDAC  = 0xcc
)

// ParseJPEGHeader scans the markers of a JPEG stream up to its frame
// header without decoding anything. Like libjpeg it skips garbage between
// markers. Data that ends before the frame header is ErrTruncated; a
// stream whose markers make no sense is ErrCorrupt.
func ParseJPEGHeader(data []byte) (JPEGHeader, error) {
	var h JPEGHeader
	if len(data) < 2 {
		return h, Truncated("jpeg", int64(len(data)), "no SOI marker")
	}
	if data[0] != 0xff || data[1] != mSOI {
		return h, Corrupt("jpeg", 0, "missing SOI marker")
	}
	jfif, adobe, transform := false, false, -1
	i := 2
	for {
		// Find the next marker: 0xff followed by a non-0xff, non-zero code.
		for i < len(data) && data[i] != 0xff {
			i++
		}
		for i < len(data) && data[i] == 0xff {
			i++
		}
		if i >= len(data) {
			return h, Truncated("jpeg", int64(len(data)), "data ends before the frame header")
		}
		m := data[i]
		i++
		if m == 0 || (m >= 0xd0 && m <= 0xd7) || m == 0x01 {
			continue // stuffed byte, RSTn, TEM: no length
		}
		switch m {
		case mSOI:
			continue
		case mEOI, mSOS:
			return h, Corrupt("jpeg", int64(i-2), "no frame header before marker 0x%02x", m)
		}
		if i+2 > len(data) {
			return h, Truncated("jpeg", int64(len(data)), "data ends in a marker length")
		}
		n := int(data[i])<<8 | int(data[i+1])
		if n < 2 {
			return h, Corrupt("jpeg", int64(i), "marker 0x%02x has length %d", m, n)
		}
		seg := data[i+2:]
		if len(seg) > n-2 {
			seg = seg[:n-2]
		}
		switch {
		case m >= 0xc0 && m <= 0xcf && m != mDHT && m != mJPG && m != mDAC:
			if len(seg) < 6 {
				return h, Truncated("jpeg", int64(len(data)), "data ends in the frame header")
			}
			h.Precision = int(seg[0])
			h.Height = int(seg[1])<<8 | int(seg[2])
			h.Width = int(seg[3])<<8 | int(seg[4])
			h.Components = int(seg[5])
			h.Progressive = m == 0xc2 || m == 0xc6 || m == 0xca || m == 0xce
			h.Arithmetic = m >= 0xc9
			if len(seg) < 6+3*h.Components {
				if len(data) < i+n {
					return h, Truncated("jpeg", int64(len(data)), "data ends in the frame header")
				}
				return h, Corrupt("jpeg", int64(i), "frame header too short for %d components", h.Components)
			}
			var ids [4]byte
			for c := 0; c < h.Components && c < 4; c++ {
				ids[c] = seg[6+3*c]
			}
			h.ColorSpace = colorSpace(h.Components, ids, jfif, adobe, transform)
			return h, nil
		case m == mAPP0 && len(seg) >= 5 && string(seg[:5]) == "JFIF\x00":
			jfif = true
		case m == mAPPE && len(seg) >= 12 && string(seg[:5]) == "Adobe":
			adobe, transform = true, int(seg[11])
		}
		i += n
	}
}

// colorSpace guesses the stored colour space the way libjpeg's
// default_decompress_parms does.
func colorSpace(n int, ids [4]byte, jfif, adobe bool, transform int) ColorSpace {
	switch n {
	case 1:
		return ColorGray
	case 3:
		switch {
		case jfif:
			return ColorYCbCr
		case adobe:
			if transform == 0 {
				return ColorRGB
			}
			return ColorYCbCr
		case ids[0] == 1 && ids[1] == 2 && ids[2] == 3:
			return ColorYCbCr
		case ids[0] == 'R' && ids[1] == 'G' && ids[2] == 'B':
			return ColorRGB
		}
		return ColorYCbCr
	case 4:
		if adobe && transform == 2 {
			return ColorYCCK
		}
		return ColorCMYK
	}
	return ColorUnknown
}
