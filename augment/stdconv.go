package augment

import (
	"bytes"
	"image"

	"github.com/faster-training/faster/imgcodec"
)

// FromYCbCr converts a picture decoded by Go's image/jpeg into dst (RGB,
// 3 channels, sized like m), with the fixed-point conversion of
// image/color.YCbCrToRGB. It is the bridge from the standard decoder until
// every caller goes through imgcodec.
func FromYCbCr(dst *imgcodec.Image, m *image.YCbCr) {
	ycbcrToRGB(dst, m)
}

func ycbcrToRGB(dst *imgcodec.Image, m *image.YCbCr) {
	b := m.Rect
	w := b.Dx()
	for y := 0; y < b.Dy(); y++ {
		yy := m.Y[m.YOffset(b.Min.X, b.Min.Y+y):][:w]
		ci := m.COffset(b.Min.X, b.Min.Y+y)
		row := dst.Pix[y*dst.Stride:][:w*3]
		switch m.SubsampleRatio {
		case image.YCbCrSubsampleRatio444:
			convRow(row, yy, m.Cb[ci:][:w], m.Cr[ci:][:w], 0)
		case image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420:
			convRow(row, yy, m.Cb[ci:][:(w+1)/2], m.Cr[ci:][:(w+1)/2], 1)
		default:
			for x := 0; x < w; x++ {
				c := m.YCbCrAt(b.Min.X+x, b.Min.Y+y)
				row[x*3], row[x*3+1], row[x*3+2] = ycc(c.Y, c.Cb, c.Cr)
			}
		}
	}
}

func convRow(row []uint8, yy, cb, cr []uint8, sh uint) {
	row = row[:len(yy)*3]
	for x, y1 := range yy {
		j := x >> sh
		r, g, b := ycc(y1, cb[j], cr[j])
		p := row[x*3 : x*3+3 : x*3+3]
		p[0], p[1], p[2] = r, g, b
	}
}

// ycc is image/color.YCbCrToRGB.
func ycc(y, cb, cr uint8) (uint8, uint8, uint8) {
	yy1 := int32(y) * 0x10101
	cb1 := int32(cb) - 128
	cr1 := int32(cr) - 128
	r := yy1 + 91881*cr1
	if uint32(r)&0xff000000 == 0 {
		r >>= 16
	} else {
		r = ^(r >> 31)
	}
	g := yy1 - 22554*cb1 - 46802*cr1
	if uint32(g)&0xff000000 == 0 {
		g >>= 16
	} else {
		g = ^(g >> 31)
	}
	b := yy1 + 116130*cb1
	if uint32(b)&0xff000000 == 0 {
		b >>= 16
	} else {
		b = ^(b >> 31)
	}
	return uint8(r), uint8(g), uint8(b)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
