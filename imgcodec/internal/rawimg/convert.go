package rawimg

import (
	"image"
	"image/color"
	"math/bits"
)

// Luma is the BT.601 luma of an RGB pixel, rounded, with the fixed-point
// weights libjpeg and image/color use (0.299, 0.587, 0.114 in 16 bits).
func Luma(r, g, b uint8) uint8 {
	return uint8((19595*uint32(r) + 38470*uint32(g) + 7471*uint32(b) + 1<<15) >> 16)
}

// CMYKToRGB converts an Adobe (inverted) CMYK pixel as stored in a JPEG
// file, 255 meaning no ink, to RGB, rounding exactly as image/color does
// for the same pixel.
func CMYKToRGB(c, m, y, k uint8) (uint8, uint8, uint8) {
	w := uint32(k) * 0x101
	r := uint32(c) * 0x101 * w / 0xffff
	g := uint32(m) * 0x101 * w / 0xffff
	b := uint32(y) * 0x101 * w / 0xffff
	return uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)
}

// RowFunc writes n pixels of row y starting at column x (image
// coordinates relative to the bounds' origin) into dst, 1 or 3 bytes each.
type RowFunc func(x, y, n int, dst []byte)

func rowConverter(src image.Image, gray bool) RowFunc {
	b := src.Bounds()
	switch m := src.(type) {
	case *image.YCbCr:
		return func(x, y, n int, dst []byte) {
			x += b.Min.X
			y += b.Min.Y
			if gray {
				copy(dst[:n], m.Y[m.YOffset(x, y):])
				return
			}
			for i := 0; i < n; i++ {
				yi, ci := m.YOffset(x+i, y), m.COffset(x+i, y)
				r, g, bb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				dst[3*i], dst[3*i+1], dst[3*i+2] = r, g, bb
			}
		}
	case *image.Gray:
		return func(x, y, n int, dst []byte) {
			row := m.Pix[m.PixOffset(x+b.Min.X, y+b.Min.Y):][:n]
			if gray {
				copy(dst, row)
				return
			}
			for i, v := range row {
				dst[3*i], dst[3*i+1], dst[3*i+2] = v, v, v
			}
		}
	case *image.Gray16:
		// PIL opens 16-bit gray as mode I (PNG) or I;16 (TIFF), and its
		// conversion to RGB or L clips each value to 255 (not scaled):
		// what torchvision's ImageFolder loader sees.
		return func(x, y, n int, dst []byte) {
			row := m.Pix[m.PixOffset(x+b.Min.X, y+b.Min.Y):][:2*n]
			for i := 0; i < n; i++ {
				v := uint8(min(uint16(row[2*i])<<8|uint16(row[2*i+1]), 255))
				put(dst, i, gray, v, v, v)
			}
		}
	case *image.NRGBA64:
		// 16-bit colour with alpha (PNG): PIL keeps the high byte of
		// each straight sample, a transparent pixel's colour too (Go's
		// color.NRGBAModel would make it black).
		return func(x, y, n int, dst []byte) {
			row := m.Pix[m.PixOffset(x+b.Min.X, y+b.Min.Y):][:8*n]
			for i := 0; i < n; i++ {
				put(dst, i, gray, row[8*i], row[8*i+2], row[8*i+4])
			}
		}
	case *image.CMYK:
		// image.CMYK holds true CMYK (255 = full ink); invert to the
		// stored form CMYKToRGB takes.
		return func(x, y, n int, dst []byte) {
			row := m.Pix[m.PixOffset(x+b.Min.X, y+b.Min.Y):][:4*n]
			for i := 0; i < n; i++ {
				p := row[4*i : 4*i+4]
				r, g, bb := CMYKToRGB(255-p[0], 255-p[1], 255-p[2], 255-p[3])
				put(dst, i, gray, r, g, bb)
			}
		}
	case *image.RGBA:
		return rgba4(m.Pix, m.Stride, b, gray)
	case *image.NRGBA:
		return rgba4(m.Pix, m.Stride, b, gray)
	case *image.Paletted:
		var lut [256][3]uint8
		for i, c := range m.Palette {
			n := color.NRGBAModel.Convert(c).(color.NRGBA)
			lut[i] = [3]uint8{n.R, n.G, n.B}
		}
		return func(x, y, n int, dst []byte) {
			row := m.Pix[m.PixOffset(x+b.Min.X, y+b.Min.Y):][:n]
			for i, v := range row {
				c := lut[v]
				put(dst, i, gray, c[0], c[1], c[2])
			}
		}
	}
	return func(x, y, n int, dst []byte) {
		for i := 0; i < n; i++ {
			c := color.NRGBAModel.Convert(src.At(b.Min.X+x+i, b.Min.Y+y)).(color.NRGBA)
			put(dst, i, gray, c.R, c.G, c.B)
		}
	}
}

func rgba4(pix []byte, stride int, b image.Rectangle, gray bool) RowFunc {
	return func(x, y, n int, dst []byte) {
		row := pix[y*stride+4*x:][:4*n]
		for i := 0; i < n; i++ {
			put(dst, i, gray, row[4*i], row[4*i+1], row[4*i+2])
		}
	}
}

func put(dst []byte, i int, gray bool, r, g, b uint8) {
	if gray {
		dst[i] = Luma(r, g, b)
		return
	}
	dst[3*i], dst[3*i+1], dst[3*i+2] = r, g, b
}

// RowsOf is the RowFunc converting src's rows to RGB (or luma, gray),
// for decoders that place or combine them (FromRows).
func RowsOf(src image.Image, gray bool) RowFunc { return rowConverter(src, gray) }

// FromImage converts a decoded Go image to an interleaved RGB or gray
// Frame, downscaled by box averaging when o.ScaleDenom > 1 (output
// ceil(W/d) x ceil(H/d), edge boxes averaging the pixels they cover) and
// cropped to o.Crop. It converts only the pixels the output needs.
func FromImage(format string, src image.Image, o *Options, alloc Alloc) (Frame, error) {
	return FromRows(format, src.Bounds().Dx(), src.Bounds().Dy(), rowConverter(src, o.Gray), o, alloc)
}

// FromRows is FromImage over a w x h picture whose rows conv writes as
// interleaved RGB or gray (as o.Gray asks): for decoders that convert
// their own pixels.
func FromRows(format string, w, h int, conv RowFunc, o *Options, alloc Alloc) (Frame, error) {
	if err := o.CheckPixels(format, w, h); err != nil {
		return Frame{}, err
	}
	d, r, err := o.Region(w, h)
	if err != nil {
		return Frame{}, err
	}
	ch := o.Channels()
	f := Frame{Width: r.Dx(), Height: r.Dy(), Channels: ch, Stride: r.Dx() * ch}
	f.Pix = alloc(f.Stride * f.Height)
	if d == 1 {
		for y := 0; y < f.Height; y++ {
			conv(r.Min.X, r.Min.Y+y, f.Width, f.Pix[y*f.Stride:])
		}
		return f, nil
	}
	shift := bits.TrailingZeros(uint(d)) // d is 2, 4 or 8
	sx0, sx1 := r.Min.X*d, min(r.Max.X*d, w)
	tmp := make([]byte, (sx1-sx0)*ch)
	sums := make([]uint32, f.Stride)
	for oy := 0; oy < f.Height; oy++ {
		clear(sums)
		sy0, sy1 := (r.Min.Y+oy)*d, min((r.Min.Y+oy+1)*d, h)
		for sy := sy0; sy < sy1; sy++ {
			conv(sx0, sy, sx1-sx0, tmp)
			if ch == 3 {
				for px := 0; px < sx1-sx0; px++ {
					s := sums[(px>>shift)*3:][:3]
					t := tmp[3*px:][:3]
					s[0] += uint32(t[0])
					s[1] += uint32(t[1])
					s[2] += uint32(t[2])
				}
				continue
			}
			for px, v := range tmp {
				sums[px>>shift] += uint32(v)
			}
		}
		row := f.Pix[oy*f.Stride:][:f.Stride]
		for ox := 0; ox < f.Width; ox++ {
			cols := min(d, sx1-(sx0+ox*d))
			n := uint32(cols * (sy1 - sy0))
			for c := 0; c < ch; c++ {
				row[ox*ch+c] = uint8((sums[ox*ch+c] + n/2) / n)
			}
		}
	}
	return f, nil
}
