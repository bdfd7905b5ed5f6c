package rawimg

import "bytes"

// MaxScanPasses bounds the work of decoding a JPEG of several scans. Each
// scan makes the decoder go over every block of the components it codes,
// however few bytes the scan holds (one end-of-band run codes 32767 empty
// blocks), so a file repeating a scan costs a pass over the image per copy:
// a 672 kB progressive JPEG of 999 scans took 31 s to decode. A file whose
// scans go over its blocks more than MaxScanPasses times in all (each scan
// counting the blocks of its components, over the blocks of all
// components) is corrupt. 64 is what a script coding each of a
// component's 64 coefficients in a scan of its own needs; the scripts of
// cjpeg, jpegtran and Pillow (-progressive: 10 scans of YCbCr) need about
// 5, mozjpeg's a few more.
const MaxScanPasses = 64

// MaxScans bounds the number of scans of a JPEG, whatever their size.
const MaxScans = 1000

// CheckJPEGScans walks the markers of a JPEG without decoding it and
// returns a *CorruptError, at the offset of the first scan past the
// budget, for one whose scans go over its blocks more than MaxScanPasses
// times (a scan bomb), or that has more than maxScans scans. Any other
// data, damaged or not, is nil: the decoder reports that damage as it
// reads it.
//
// Unless every, a sequential (baseline) file whose first scan codes all
// its components ends the walk there: libjpeg decodes such a file in one
// pass, whatever follows (image/jpeg decodes each scan that follows too).
//
// It finds the markers libjpeg finds: a segment is skipped by its length,
// entropy-coded data and garbage byte by byte up to a 0xff followed by a
// code other than 0x00 (a stuffed byte) and RSTn.
func CheckJPEGScans(data []byte, maxScans int, every bool) error {
	if len(data) < 2 || data[0] != 0xff || data[1] != mSOI {
		return nil
	}
	type comp struct {
		id     byte
		blocks int64
	}
	var buf [10]comp // libjpeg's MAX_COMPONENTS; on the stack
	var comps []comp // nil until the frame header
	sequential := false
	var total, work, over int64 // blocks of all components, blocks the scans go over, offset of the scan past the budget
	scans, overScan := 0, 0
	i := 2
	for {
		j := bytes.IndexByte(data[i:], 0xff)
		if j < 0 {
			break
		}
		i += j
		for i < len(data) && data[i] == 0xff {
			i++
		}
		if i >= len(data) {
			break
		}
		m := data[i]
		i++
		if m == 0 || m == 0x01 || (m >= 0xd0 && m <= 0xd7) || m == mSOI {
			continue // stuffed byte, TEM, RSTn: no length
		}
		if m == mEOI || i+2 > len(data) {
			break
		}
		n := int(data[i])<<8 | int(data[i+1])
		if n < 2 {
			i += 2 // libjpeg skips an APPn or COM of length 0 or 1 so (it refuses the others)
			continue
		}
		if i+n > len(data) {
			break // the data ends in the segment: libjpeg's fake EOI
		}
		seg := data[i+2 : i+n]
		start := int64(i - 2)
		i += n
		switch {
		case m >= 0xc0 && m <= 0xcf && m != mDHT && m != mJPG && m != mDAC:
			if comps != nil || len(seg) < 6 {
				return nil // a second frame header: libjpeg and image/jpeg refuse it
			}
			sequential = m == 0xc0 || m == 0xc1 || m == 0xc9
			h, w, nc := int64(seg[1])<<8|int64(seg[2]), int64(seg[3])<<8|int64(seg[4]), int(seg[5])
			if h == 0 || w == 0 || nc == 0 || nc > len(buf) || len(seg) < 6+3*nc {
				return nil
			}
			comps = buf[:0]
			var hmax, vmax int64 = 1, 1
			for c := range nc {
				hmax = max(hmax, int64(seg[7+3*c]>>4))
				vmax = max(vmax, int64(seg[7+3*c]&15))
			}
			for c := range nc {
				hs, vs := int64(seg[7+3*c]>>4), int64(seg[7+3*c]&15)
				// libjpeg's width_in_blocks and height_in_blocks.
				bw := ((w*hs+hmax-1)/hmax + 7) / 8
				bh := ((h*vs+vmax-1)/vmax + 7) / 8
				comps = append(comps, comp{seg[6+3*c], bw * bh})
				total += bw * bh
			}
		case m == mSOS:
			if comps == nil || len(seg) < 1 || len(seg) < 1+2*int(seg[0]) {
				return nil
			}
			if scans == 0 && sequential && !every && int(seg[0]) == len(comps) {
				return nil
			}
			scans++
			for k := range int(seg[0]) {
				for _, c := range comps {
					if c.id == seg[1+2*k] {
						work += c.blocks
						break
					}
				}
			}
			if over == 0 && (work > MaxScanPasses*total || scans > maxScans) {
				over, overScan = start, scans
			}
		}
	}
	if over == 0 {
		return nil
	}
	if scans > maxScans {
		return Corrupt("jpeg", over, "%d scans, more than %d: refused unread (a scan bomb)", scans, maxScans)
	}
	return Corrupt("jpeg", over, "%d scans go over the image's blocks %d times, more than %d (scan %d passes it): refused unread (a scan bomb)",
		scans, (work+total-1)/total, MaxScanPasses, overScan)
}
