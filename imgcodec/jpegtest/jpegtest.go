// Package jpegtest writes JPEG streams that no encoder at hand writes, for
// the tests of the packages that read them: progressive files with as many
// scans as a test asks for (libjpeg-turbo's jpegtran -scans stops at 100).
package jpegtest

import "bytes"

// Progressive returns a progressive JPEG of a flat mid-grey w x h image
// with comps components (1: gray, 3: YCbCr, no subsampling) in 1+comps+extra
// scans: the DC of every component in one interleaved scan, then the AC
// coefficients (1-63) of each component in a scan of its own, then extra
// repeats of component 0's AC scan, each coding every block again (with
// one end-of-band run: a few bytes a scan however large the image). The
// repeats are what a scan bomb is made of: libjpeg-turbo and image/jpeg
// decode every block of each, and the picture stays the same.
func Progressive(w, h, comps, extra int) []byte {
	var b bytes.Buffer
	seg := func(marker byte, data ...byte) {
		b.Write([]byte{0xff, marker, byte((len(data) + 2) >> 8), byte(len(data) + 2)})
		b.Write(data)
	}
	b.Write([]byte{0xff, 0xd8})
	dqt := make([]byte, 65) // table 0, 8-bit, all ones
	for i := 1; i < len(dqt); i++ {
		dqt[i] = 1
	}
	seg(0xdb, dqt...)
	sof := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(comps)}
	for c := range comps {
		sof = append(sof, byte(c+1), 0x11, 0)
	}
	seg(0xc2, sof...)
	// DC table 0: one code of length 1 for category 0 (a zero difference).
	dht := []byte{0x00, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00}
	// AC table 0: the 15 end-of-band runs EOBr (0x00, 0x10, ... 0xe0),
	// codes of length 4 in that order.
	dht = append(dht, 0x10, 0, 0, 0, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	for r := range 15 {
		dht = append(dht, byte(r<<4))
	}
	seg(0xc4, dht...)
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	// DC first scan, every component interleaved: one bit a block.
	sos := []byte{byte(comps)}
	for c := range comps {
		sos = append(sos, byte(c+1), 0x00)
	}
	seg(0xda, append(sos, 0, 0, 0)...)
	var bw bitWriter
	for range blocks * comps {
		bw.put(0, 1)
	}
	b.Write(bw.flush())
	ac := func(c int) {
		seg(0xda, 1, byte(c+1), 0x00, 1, 63, 0)
		var bw bitWriter
		for n := blocks; n > 0; {
			run := min(n, 32767)
			r := 0
			for run>>(r+1) != 0 {
				r++
			}
			bw.put(uint32(r), 4)
			bw.put(uint32(run-1<<r), r)
			n -= run
		}
		b.Write(bw.flush())
	}
	for c := range comps {
		ac(c)
	}
	for range extra {
		ac(0)
	}
	b.Write([]byte{0xff, 0xd9})
	return b.Bytes()
}

// bitWriter packs entropy-coded bits, stuffing a zero after each 0xff.
type bitWriter struct {
	out  []byte
	acc  uint32
	bits int
}

func (w *bitWriter) put(v uint32, n int) {
	for i := n - 1; i >= 0; i-- {
		w.acc = w.acc<<1 | (v>>i)&1
		if w.bits++; w.bits == 8 {
			w.byte(byte(w.acc))
			w.acc, w.bits = 0, 0
		}
	}
}

func (w *bitWriter) byte(c byte) {
	w.out = append(w.out, c)
	if c == 0xff {
		w.out = append(w.out, 0)
	}
}

// flush pads the last byte with ones, as encoders do.
func (w *bitWriter) flush() []byte {
	if w.bits > 0 {
		w.byte(byte(w.acc<<(8-w.bits) | 0xff>>w.bits))
	}
	return w.out
}
