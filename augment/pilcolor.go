package augment

import (
	"math"

	"github.com/faster-training/faster/imgcodec"
)

// The policies' colour ops on PIL images, as torchvision 0.14 runs them
// there (F.adjust_brightness, adjust_saturation, adjust_contrast and
// adjust_sharpness through PIL's ImageEnhance, autocontrast through
// ImageOps), in PIL 9.4's arithmetic: every enhancement is Image.blend of
// a degenerate picture and the picture (libImaging/Blend.c: float32,
// truncated, clipped when the factor is outside [0, 1]); Color's
// degenerate is the picture converted to L and back (Convert.c's rounded
// ITU-R 601 luma), Contrast's a grey of the L picture's mean rounded
// (ImageStat), Sharpness's the picture through ImageFilter.SMOOTH
// (Filter.c's 3x3, float32, its border rows and columns the picture's).
// Brightness, Posterize, Solarize, Equalize and Invert compute the tensor
// path's bytes on PIL images too.

// pilBlend1 is one value of PIL's Image.blend(im1, im2, alpha) (Blend.c:
// a C float, truncated; clipped when alpha is outside [0, 1], interp
// false), a from im1 and v from im2.
func pilBlend1(a, v uint8, alpha float32, interp bool) uint8 {
	t := float32(float32(a) + float32(alpha*float32(int(v)-int(a))))
	switch {
	case interp:
		return uint8(int(t))
	case t <= 0:
		return 0
	case t >= 255:
		return 255
	}
	return uint8(int(t))
}

// pilBlendConst writes blend(c, m, factor) into m, PIL's Image.blend with
// im1 a picture of the one value c: a table of the 256 values.
func pilBlendConst(m *imgcodec.Image, c uint8, factor float64) {
	alpha := float32(factor) // ImagingBlend takes a C float
	if alpha == 1 {
		return
	}
	interp := alpha >= 0 && alpha <= 1
	var lut [256]uint8
	for v := range 256 {
		if alpha == 0 {
			lut[v] = c
		} else {
			lut[v] = pilBlend1(c, uint8(v), alpha, interp)
		}
	}
	applyLUT(m, &lut)
}

// pilBlendWith writes blend(deg, m, factor) into m, PIL's Image.blend
// with im1 = deg (tight rows of m's width and channels).
func pilBlendWith(m *imgcodec.Image, deg []byte, factor float64) {
	alpha := float32(factor)
	if alpha == 1 {
		return
	}
	interp := alpha >= 0 && alpha <= 1
	w := m.Width * m.Channels
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:w]
		d := deg[y*w:][:w]
		if alpha == 0 {
			copy(row, d)
			continue
		}
		for x, v := range row {
			row[x] = pilBlend1(d[x], v, alpha, interp)
		}
	}
}

// pilLuma is PIL's RGB to L conversion (Convert.c's L24, rounded).
func pilLuma(r, g, b uint8) uint8 {
	return uint8((int(r)*19595 + int(g)*38470 + int(b)*7471 + 0x8000) >> 16)
}

// pilColor is PIL's ImageEnhance.Color(m).enhance(factor): each value
// blended with its pixel's L (convert("L") and back), in one pass.
func (s *Scratch) pilColor(m *imgcodec.Image, factor float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	alpha := float32(factor)
	if m.Channels == 1 || alpha == 1 { // L -> L -> L: the picture itself
		return nil
	}
	interp := alpha >= 0 && alpha <= 1
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:m.Width*3]
		for x := 0; x+3 <= len(row); x += 3 {
			p := row[x : x+3 : x+3]
			l := pilLuma(p[0], p[1], p[2])
			if alpha == 0 {
				p[0], p[1], p[2] = l, l, l
				continue
			}
			p[0] = pilBlend1(l, p[0], alpha, interp)
			p[1] = pilBlend1(l, p[1], alpha, interp)
			p[2] = pilBlend1(l, p[2], alpha, interp)
		}
	}
	return nil
}

// pilContrast is PIL's ImageEnhance.Contrast(m).enhance(factor): the
// degenerate is int(mean of the L picture + 0.5), the mean summed as
// ImageStat sums it (0.0 + j·count(j) over the histogram, in float64).
func (s *Scratch) pilContrast(m *imgcodec.Image, factor float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	var hist [256]int
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:m.Width*m.Channels]
		if m.Channels == 1 {
			for _, v := range row {
				hist[v]++
			}
			continue
		}
		for x := 0; x+3 <= len(row); x += 3 {
			hist[pilLuma(row[x], row[x+1], row[x+2])]++
		}
	}
	sum, n := 0.0, 0
	for j, c := range hist {
		sum += float64(j * c)
		n += c
	}
	pilBlendConst(m, uint8(int(sum/float64(n)+0.5)), factor)
	return nil
}

// pilSharpness is PIL's ImageEnhance.Sharpness(m).enhance(factor): the
// degenerate is m through ImageFilter.SMOOTH ((1 1 1; 1 5 1; 1 1 1) / 13,
// each weight a float32 of its value over 13, summed per row in float32
// from the row below up, plus 0.5, clipped and truncated), the picture's
// own values on its border rows and columns.
func (s *Scratch) pilSharpness(m *imgcodec.Image, factor float64) error {
	if err := checkImage(m); err != nil {
		return err
	}
	if float32(factor) == 1 {
		return nil
	}
	w, h, ch := m.Width, m.Height, m.Channels
	rowLen := w * ch
	s.pil = packRows(s.pil, m, rowLen*h)
	deg := s.pil[:rowLen*h]
	if w >= 3 && h >= 3 { // ImagingFilter copies a picture smaller than its kernel
		// _imaging.c divides each float32 weight by the divisor in C floats.
		k1, k5 := float32(1)/float32(13), float32(5)/float32(13)
		for y := 1; y < h-1; y++ {
			up := m.Pix[(y-1)*m.Stride:][:rowLen]
			mid := m.Pix[y*m.Stride:][:rowLen]
			down := m.Pix[(y+1)*m.Stride:][:rowLen]
			out := deg[y*rowLen:][:rowLen]
			for i := ch; i < rowLen-ch; i++ {
				// KERNEL1x3 of each row: ((a k0 + b k1) + c k2), in float32.
				r1 := float32(float32(float32(down[i-ch])*k1)+float32(float32(down[i])*k1)) + float32(float32(down[i+ch])*k1)
				r0 := float32(float32(float32(mid[i-ch])*k1)+float32(float32(mid[i])*k5)) + float32(float32(mid[i+ch])*k1)
				rm := float32(float32(float32(up[i-ch])*k1)+float32(float32(up[i])*k1)) + float32(float32(up[i+ch])*k1)
				ss := float32(float32(float32(float32(0.5)+r1)+r0) + rm)
				switch {
				case ss <= 0:
					out[i] = 0
				case ss >= 255:
					out[i] = 255
				default:
					out[i] = uint8(int(ss))
				}
			}
		}
	}
	pilBlendWith(m, deg, factor)
	return nil
}

// pilAutoContrast is PIL's ImageOps.autocontrast(m) (no cutoff): per
// band, the lowest and highest values present stretched to 0 and 255,
// lut[v] = int(v·scale + offset) in float64, clipped; a band of one
// value is left as it is.
func pilAutoContrast(m *imgcodec.Image) error {
	if err := checkImage(m); err != nil {
		return err
	}
	ch := m.Channels
	for c := range ch {
		var hist [256]int
		for y := 0; y < m.Height; y++ {
			row := m.Pix[y*m.Stride:][:m.Width*ch]
			for i := c; i < len(row); i += ch {
				hist[row[i]]++
			}
		}
		lo, hi := 0, 255
		for lo < 256 && hist[lo] == 0 {
			lo++
		}
		for hi >= 0 && hist[hi] == 0 {
			hi--
		}
		if hi <= lo {
			continue // the band as it is
		}
		var lut [256]uint8
		scale := 255.0 / float64(hi-lo)
		offset := float64(-lo) * scale
		for v := range 256 {
			lut[v] = uint8(min(max(int(float64(float64(v)*scale)+offset), 0), 255))
		}
		for y := 0; y < m.Height; y++ {
			row := m.Pix[y*m.Stride:][:m.Width*ch]
			for i := c; i < len(row); i += ch {
				row[i] = lut[row[i]]
			}
		}
	}
	return nil
}

// applyColorPIL runs a policy's colour op on a PIL image (ApplyAugOp with
// a PIL interpolation); ok is false for the ops whose tensor-path bytes
// are PIL's already.
func (s *Scratch) applyColorPIL(m *imgcodec.Image, st AugStep) (ok bool, err error) {
	switch st.Op {
	case OpColor:
		return true, s.pilColor(m, 1+st.Magnitude)
	case OpContrast:
		return true, s.pilContrast(m, 1+st.Magnitude)
	case OpSharpness:
		return true, s.pilSharpness(m, 1+st.Magnitude)
	case OpAutoContrast:
		return true, pilAutoContrast(m)
	}
	return false, nil
}

// pilToHSV is PIL's RGB to HSV conversion of one pixel (Convert.c's
// rgb2hsv_row, after colorsys): float32 ratios, the hue's sums and the
// scaling in float64 where C promotes them, truncated and clipped.
func pilToHSV(r, g, b uint8) (h, s, v uint8) {
	hf, sf, v, grey := pilHueRaw(r, g, b)
	if grey {
		return 0, 0, v
	}
	// fmod(hf/6 + 1, 1): the sum lies in [5/6, 11/6) (hf in [-1, 5)),
	// where subtracting 1 from what reaches it is fmod, exactly.
	x := float64(hf)/6.0 + 1.0
	if x >= 1 {
		x -= 1
	}
	return pilHSVBytes(float32(x), sf, v)
}

// pilHueRaw is rgb2hsv_row up to its fmod: the hue's sum hf and the
// saturation sf, v the value; grey when the pixel has no hue.
func pilHueRaw(r, g, b uint8) (hf, sf float32, v uint8, grey bool) {
	maxc, minc := max(r, g, b), min(r, g, b)
	if maxc == minc {
		return 0, 0, maxc, true
	}
	cr := float32(maxc - minc)
	sf = float32(cr / float32(maxc))
	rc := float32(float32(maxc-r) / cr)
	gc := float32(float32(maxc-g) / cr)
	bc := float32(float32(maxc-b) / cr)
	switch {
	case r == maxc:
		hf = float32(bc - gc)
	case g == maxc:
		hf = float32(2.0 + float64(rc) - float64(bc))
	default:
		hf = float32(4.0 + float64(gc) - float64(rc))
	}
	return hf, sf, maxc, false
}

// pilHSVBytes is rgb2hsv_row's end: the hue in [0, 1) and the saturation
// scaled to bytes, truncated and clipped.
func pilHSVBytes(hf, sf float32, v uint8) (h, s, val uint8) {
	return clip8i(int(float64(hf) * 255.0)), clip8i(int(float64(sf) * 255.0)), v
}

// pilHueSector is, for each hue byte h, hsv2rgb's sector (floor(h·6/255)
// mod 6) and remainder as float32, computed once: the same values the
// per-pixel expressions give (pilSector).
var pilHueSector = func() (t [256]struct {
	i uint8
	f float32
}) {
	for h := range t {
		i, f := pilSector(uint8(h))
		t[h].i, t[h].f = uint8(i%6), f
	}
	return t
}()

// pilSector is hsv2rgb's sector floor(h·6/255) and remainder, as float32.
func pilSector(h uint8) (int, float32) {
	x := float64(float32(h)) * 6.0 / 255.0
	i := int(math.Floor(x))
	return i, float32(x - float64(float32(i)))
}

// pilFromHSV is PIL's HSV to RGB conversion of one pixel (Convert.c's
// hsv2rgb): the sector and remainder in float64, stored as float32,
// each channel round()ed in float64.
func pilFromHSV(h, s, v uint8) (r, g, b uint8) {
	if s == 0 {
		return v, v, v
	}
	sec := &pilHueSector[h]
	return pilFromSector(int(sec.i), sec.f, s, v)
}

// pilFromSector is hsv2rgb after its sector i (0..5) and remainder f.
func pilFromSector(i int, f float32, s, v uint8) (r, g, b uint8) {
	fs := float32(float64(float32(s)) / 255.0)
	fv := float64(float32(v))
	p := clip8i(int(math.Round(fv * (1.0 - float64(fs)))))
	q := clip8i(int(math.Round(fv * (1.0 - float64(float32(fs*f))))))
	t := clip8i(int(math.Round(fv * (1.0 - float64(float64(fs)*(1.0-float64(f)))))))
	switch i {
	case 0:
		return v, t, p
	case 1:
		return q, v, p
	case 2:
		return p, v, t
	case 3:
		return p, q, v
	case 4:
		return t, p, v
	}
	return v, p, q
}

func clip8i(v int) uint8 { return uint8(min(max(v, 0), 255)) }

// pilHue is torchvision's adjust_hue on a PIL image: the picture to HSV
// (PIL's), uint8(hue·255) added to H modulo 256 (numpy's cast: truncated
// toward zero, wrapped), back to RGB (PIL's). An L picture is left as it
// is.
func pilHue(m *imgcodec.Image, factor float64) error {
	if err := checkImage(m); err != nil || m.Channels == 1 {
		return err
	}
	shift := uint8(int(factor * 255))
	for y := 0; y < m.Height; y++ {
		row := m.Pix[y*m.Stride:][:m.Width*3]
		for x := 0; x < len(row); x += 3 {
			p := row[x : x+3 : x+3]
			h, s, v := pilToHSV(p[0], p[1], p[2])
			p[0], p[1], p[2] = pilFromHSV(h+shift, s, v)
		}
	}
	return nil
}

// pilGray is torchvision's rgb_to_grayscale on a PIL image kept in three
// channels: PIL's convert("L") (rounded luma) in each.
func pilGray(m *imgcodec.Image) error { return grayInPlace(m, true) }

// applyJitterPIL is ApplyJitter on a PIL image: ImageEnhance's
// Brightness, Contrast and Color, and pilHue, in p's order.
func (s *Scratch) applyJitterPIL(m *imgcodec.Image, p JitterParams) error {
	for _, k := range p.Order {
		if !p.Has[k] {
			continue
		}
		var err error
		switch k {
		case 0:
			if err = checkImage(m); err == nil {
				pilBlendConst(m, 0, p.Brightness)
			}
		case 1:
			err = s.pilContrast(m, p.Contrast)
		case 2:
			err = s.pilColor(m, p.Saturation)
		case 3:
			err = pilHue(m, p.Hue)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
