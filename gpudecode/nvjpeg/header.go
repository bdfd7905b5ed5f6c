package nvjpeg

import (
	"encoding/binary"
	"fmt"
)

// Route is where an image is decoded.
type Route int

const (
	// Hardware is nvJPEG's hardware backend (NVJPEG_BACKEND_HARDWARE: the
	// A100/H100/H200 JPEG engines): baseline or extended sequential
	// Huffman, 8 bits, gray or YCbCr at 4:4:4, 4:2:2, 4:2:0 or 4:4:0.
	Hardware Route = iota
	// Hybrid is nvJPEG's hybrid backend (NVJPEG_BACKEND_HYBRID: Huffman
	// decode on the host, the IDCT and colour conversion on the GPU), for
	// what the hardware refuses but nvJPEG decodes: progressive Huffman,
	// 4:1:1 and 4:1:0. (Not NVJPEG_BACKEND_GPU_HYBRID: its Huffman decode
	// on the GPU takes baseline JPEGs only.) Also a sequential JPEG in
	// several scans (non-interleaved): the hardware takes one scan, and
	// nvjpegDecodeBatchedSupportedEx, given the header alone, cannot see
	// the others. The decoder sends here too what SupportedEx refuses.
	Hybrid
	// CPU is the CPU decoder (the loader's fallback, counted): not a
	// JPEG, arithmetic coding, lossless or hierarchical, 12 or 16 bits,
	// CMYK and YCCK, RGB-coded JPEGs, two components, odd sampling
	// factors.
	CPU
)

func (r Route) String() string {
	switch r {
	case Hardware:
		return "hardware"
	case Hybrid:
		return "hybrid"
	case CPU:
		return "cpu"
	}
	return fmt.Sprintf("Route(%d)", int(r))
}

// Header is what a JPEG's markers say before its first scan.
type Header struct {
	SOF           byte // the frame marker's second byte: 0xc0 baseline, 0xc1 extended, 0xc2 progressive, …
	Precision     int  // bits per sample
	Width, Height int
	Components    int
	H, V          [4]int  // sampling factors of the first four components
	IDs           [4]byte // their identifiers ('R','G','B' marks RGB)
	Adobe         int     // APP14 Adobe's transform flag, -1 without the marker
	Subsampling   string  // "444", "422", "420", "440", "411", "410", "gray" or "" (other)
	// ScanComponents is the first scan's count of components (0 when
	// the data ends before it): fewer than Components in a sequential
	// JPEG means several scans, one or two components each.
	ScanComponents int
}

// Inspect reads the markers of a JPEG up to its first scan (SOS). It
// reads no entropy-coded data, so any prefix holding the header will do.
func Inspect(data []byte) (Header, error) {
	h := Header{Adobe: -1}
	if len(data) < 2 || data[0] != 0xff || data[1] != 0xd8 {
		return h, fmt.Errorf("not a JPEG: no SOI marker")
	}
	p := 2
	for {
		// Markers may be preceded by any number of fill bytes 0xff.
		if p >= len(data) || data[p] != 0xff {
			return h, fmt.Errorf("no marker at offset %d", p)
		}
		for p < len(data) && data[p] == 0xff {
			p++
		}
		if p >= len(data) {
			return h, fmt.Errorf("header ends at offset %d", p)
		}
		m := data[p]
		p++
		if m == 0x01 || (m >= 0xd0 && m <= 0xd7) { // TEM, RSTn: no length
			continue
		}
		if m == 0xd9 {
			return h, fmt.Errorf("EOI before a scan")
		}
		if p+2 > len(data) {
			return h, fmt.Errorf("marker %#02x: length past the end", m)
		}
		n := int(binary.BigEndian.Uint16(data[p:]))
		if m == 0xda { // SOS: the header is over (its segment need not be here)
			if h.SOF == 0 {
				return h, fmt.Errorf("scan before a frame header")
			}
			if p+2 < len(data) {
				h.ScanComponents = int(data[p+2])
			}
			return h, nil
		}
		if n < 2 || p+n > len(data) {
			return h, fmt.Errorf("marker %#02x at offset %d: length %d past the end", m, p-2, n)
		}
		seg := data[p+2 : p+n]
		switch {
		case m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc:
			if h.SOF != 0 {
				return h, fmt.Errorf("two frame headers")
			}
			if len(seg) < 6 {
				return h, fmt.Errorf("SOF%d: %d bytes", m-0xc0, len(seg))
			}
			h.SOF, h.Precision = m, int(seg[0])
			h.Height, h.Width = int(binary.BigEndian.Uint16(seg[1:])), int(binary.BigEndian.Uint16(seg[3:]))
			h.Components = int(seg[5])
			if len(seg) < 6+3*h.Components {
				return h, fmt.Errorf("SOF%d: %d components in %d bytes", m-0xc0, h.Components, len(seg))
			}
			for i := range min(h.Components, 4) {
				c := seg[6+3*i:]
				h.IDs[i], h.H[i], h.V[i] = c[0], int(c[1]>>4), int(c[1]&15)
			}
			h.Subsampling = subsampling(h)
		case m == 0xee && len(seg) >= 12 && string(seg[:5]) == "Adobe":
			h.Adobe = int(seg[11])
		}
		p += n
	}
}

// subsampling names the chroma subsampling as nvJPEG's
// nvjpegChromaSubsampling_t does, "" for one it has no name for.
func subsampling(h Header) string {
	switch h.Components {
	case 1:
		return "gray"
	case 3:
	default:
		return ""
	}
	if h.H[1] != 1 || h.V[1] != 1 || h.H[2] != 1 || h.V[2] != 1 {
		return ""
	}
	switch [2]int{h.H[0], h.V[0]} {
	case [2]int{1, 1}:
		return "444"
	case [2]int{2, 1}:
		return "422"
	case [2]int{2, 2}:
		return "420"
	case [2]int{1, 2}:
		return "440"
	case [2]int{4, 1}:
		return "411"
	case [2]int{4, 2}:
		return "410"
	}
	return ""
}

// CanDecode says where an encoded image is decoded, from its header
// alone, and why when it is not the hardware: the GPU decoder's
// admission check (the rest, Route CPU, is the loader's counted
// fallback).
func CanDecode(data []byte) (Route, string) {
	h, err := Inspect(data)
	if err != nil {
		return CPU, err.Error()
	}
	return h.Route()
}

// Route is CanDecode's answer for a header.
func (h Header) Route() (Route, string) {
	switch h.SOF {
	case 0xc0, 0xc1, 0xc2:
	case 0xc3:
		return CPU, "lossless JPEG"
	case 0xc5, 0xc6, 0xc7:
		return CPU, "hierarchical JPEG"
	default:
		return CPU, fmt.Sprintf("arithmetic-coded JPEG (SOF%d)", h.SOF-0xc0)
	}
	if h.Precision != 8 {
		return CPU, fmt.Sprintf("%d-bit samples", h.Precision)
	}
	if h.Width == 0 || h.Height == 0 {
		return CPU, "height given by a DNL marker"
	}
	switch h.Components {
	case 1, 3:
	case 4:
		if h.Adobe == 2 {
			return CPU, "YCCK JPEG"
		}
		return CPU, "CMYK JPEG"
	default:
		return CPU, fmt.Sprintf("%d components", h.Components)
	}
	if h.Components == 3 && (h.Adobe == 0 || h.Adobe < 0 && h.IDs[0] == 'R' && h.IDs[1] == 'G' && h.IDs[2] == 'B') {
		return CPU, "RGB-coded JPEG (no YCbCr transform)"
	}
	switch h.Subsampling {
	case "":
		return CPU, fmt.Sprintf("sampling factors %dx%d,%dx%d,%dx%d", h.H[0], h.V[0], h.H[1], h.V[1], h.H[2], h.V[2])
	case "411", "410":
		return Hybrid, "subsampling " + h.Subsampling + " (not on the hardware decoder)"
	}
	if h.SOF == 0xc2 {
		return Hybrid, "progressive JPEG (not on the hardware decoder)"
	}
	if h.ScanComponents > 0 && h.ScanComponents < h.Components {
		// The hardware takes one interleaved scan; a header-only parse
		// does not show the others to nvjpegDecodeBatchedSupportedEx, and
		// a batch holding such an image fails as a whole.
		return Hybrid, fmt.Sprintf("sequential JPEG in several scans (the first has %d of %d components; not on the hardware decoder)", h.ScanComponents, h.Components)
	}
	return Hardware, ""
}
