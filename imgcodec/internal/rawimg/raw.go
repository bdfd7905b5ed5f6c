package rawimg

import (
	"errors"

	"github.com/faster-training/faster/imgcodec/rawpix"
)

// FormatRaw is the format name of raw-pixel images (package rawpix).
const FormatRaw = "raw"

// ParseRaw reads a raw-pixel image's header: a short one or short
// pixels are ErrTruncated, a bad one is corrupt.
func ParseRaw(data []byte) (rawpix.Header, []byte, error) {
	hd, px, err := rawpix.Parse(data)
	switch {
	case errors.Is(err, rawpix.ErrShort):
		return hd, nil, Truncated(FormatRaw, int64(len(data)), err.Error())
	case err != nil:
		return hd, nil, &CorruptError{Format: FormatRaw, Offset: -1, Err: err}
	}
	return hd, px, nil
}

// DecodeRaw converts a raw-pixel image to an interleaved RGB or gray
// Frame as FromImage converts a Go image: the same box downscaling for
// ScaleDenom, the same crop, the same luma for Gray, so that raw pixels
// and a lossless file of them (PNG) decode to the same bytes. It reads
// only the rows and columns the output needs.
func DecodeRaw(data []byte, o *Options, alloc Alloc) (Frame, error) {
	hd, px, err := ParseRaw(data)
	if err != nil {
		return Frame{}, err
	}
	return FromRows(FormatRaw, hd.Width, hd.Height, rawRows(hd, px, o.Gray), o, alloc)
}

// rawRows returns the row converter of raw pixels.
func rawRows(hd rawpix.Header, px []byte, gray bool) RowFunc {
	w, plane := hd.Width, hd.Width*hd.Height
	if hd.Channels == 1 {
		return func(x, y, n int, dst []byte) {
			row := px[y*w+x:][:n]
			if gray {
				copy(dst, row)
				return
			}
			dst = dst[:3*n]
			for i, v := range row {
				dst[3*i], dst[3*i+1], dst[3*i+2] = v, v, v
			}
		}
	}
	if hd.Layout == rawpix.Interleaved {
		return func(x, y, n int, dst []byte) {
			row := px[3*(y*w+x):][:3*n]
			if !gray {
				copy(dst, row)
				return
			}
			for i := range n {
				dst[i] = Luma(row[3*i], row[3*i+1], row[3*i+2])
			}
		}
	}
	return func(x, y, n int, dst []byte) {
		o := y*w + x
		bp, gp, rp := px[o:][:n], px[plane+o:][:n], px[2*plane+o:][:n]
		if gray {
			for i := range n {
				dst[i] = Luma(rp[i], gp[i], bp[i])
			}
			return
		}
		dst = dst[:3*n]
		for i := range n {
			d := dst[3*i:][:3]
			d[0], d[1], d[2] = rp[i], gp[i], bp[i]
		}
	}
}
