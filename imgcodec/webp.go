package imgcodec

import (
	"bytes"
	"fmt"
	"image"

	"golang.org/x/image/webp"

	"github.com/faster-training/faster/imgcodec/internal/rawimg"
)

// WebP (torchvision's ImageFolder lists .webp) through golang.org/x/image/webp,
// which decodes VP8 (lossy) to its exact Y'CbCr 4:2:0 planes and VP8L
// (lossless) to exact RGBA. Lossy pictures are converted to RGB here as
// libwebp does for PIL (WebPDecode's defaults): "fancy" chroma upsampling,
// each chroma sample weighted 9:3:3:1 from its four nearest, and libwebp's
// fixed-point BT.601 studio-swing matrix (Go's color.YCbCrToRGB is JFIF's
// full-range one, a different picture). Alpha is dropped, the colour kept
// straight, as PIL's convert("RGB") does. An animated WebP is
// ErrUnsupported (PIL would give its first frame).
func init() {
	RegisterFormat("webp", "RIFF????WEBP", decodeWebP, configWebP)
}

// webpAnimated reports whether a VP8X header marks the file animated.
func webpAnimated(data []byte) bool {
	return len(data) > 20 && string(data[12:16]) == "VP8X" && data[20]&0x02 != 0
}

func configWebP(data []byte) (Config, error) {
	if webpAnimated(data) {
		return Config{}, fmt.Errorf("webp: animated: %w", ErrUnsupported)
	}
	c, err := webp.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Config{}, stdError("webp", err, len(data))
	}
	// x/image/webp's own picture: 4:2:0 planes plus alpha, or RGBA.
	return Config{Format: "webp", Width: c.Width, Height: c.Height, Components: 3, WorkBytesPerPixel: 4}, nil
}

func decodeWebP(data []byte, opts *DecodeOptions) (*Image, error) {
	c, err := configWebP(data)
	if err != nil {
		return nil, err
	}
	o := rawOptions(opts)
	if err := o.CheckPixels("webp", c.Width, c.Height); err != nil {
		return nil, err
	}
	if _, _, err := o.Region(c.Width, c.Height); err != nil {
		return nil, err
	}
	src, err := webp.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, stdError("webp", err, len(data))
	}
	var a allocator
	switch m := src.(type) {
	case *image.YCbCr:
		return a.image(rawimg.FromRows("webp", c.Width, c.Height, fancyRows(m, o.Gray), o, a.alloc))
	case *image.NYCbCrA:
		return a.image(rawimg.FromRows("webp", c.Width, c.Height, fancyRows(&m.YCbCr, o.Gray), o, a.alloc))
	}
	return a.image(rawimg.FromImage("webp", src, o, a.alloc))
}

// fancyRows converts a 4:2:0 picture's rows to RGB (or its luma) as
// libwebp's fancy upsampler (src/dsp/upsampling.c) and VP8YuvToRgb
// (src/dsp/yuv.h) do: the chroma of pixel (x, y) is
// (9*near + 3*across + 3*above-or-below + diagonal + 8) >> 4 of the chroma
// samples nearest it, the picture's edge samples repeated.
func fancyRows(m *image.YCbCr, gray bool) rawimg.RowFunc {
	b := m.Rect
	cw, ch := (b.Dx()+1)/2, (b.Dy()+1)/2
	return func(x, y, n int, dst []byte) {
		ny := y >> 1
		fy := min(max(ny+(y&1)*2-1, 0), ch-1)
		yrow := m.Y[y*m.YStride:]
		un, uf := m.Cb[ny*m.CStride:][:cw], m.Cb[fy*m.CStride:][:cw]
		vn, vf := m.Cr[ny*m.CStride:][:cw], m.Cr[fy*m.CStride:][:cw]
		for i := 0; i < n; i++ {
			X := x + i
			nx := X >> 1
			fx := min(max(nx+(X&1)*2-1, 0), cw-1)
			u := (9*int(un[nx]) + 3*int(un[fx]) + 3*int(uf[nx]) + int(uf[fx]) + 8) >> 4
			v := (9*int(vn[nx]) + 3*int(vn[fx]) + 3*int(vf[nx]) + int(vf[fx]) + 8) >> 4
			yy := mulHi(int(yrow[X]), 19077)
			r := clip8(yy + mulHi(v, 26149) - 14234)
			g := clip8(yy - mulHi(u, 6419) - mulHi(v, 13320) + 8708)
			bb := clip8(yy + mulHi(u, 33050) - 17685)
			if gray {
				dst[i] = rawimg.Luma(r, g, bb)
				continue
			}
			dst[3*i], dst[3*i+1], dst[3*i+2] = r, g, bb
		}
	}
}

func mulHi(v, coeff int) int { return (v * coeff) >> 8 }

// clip8 is libwebp's VP8Clip8: a value of 14 fractional bits (YUV_FIX2 6
// after mulHi's 8) to 0..255.
func clip8(v int) uint8 {
	if v&^(256<<6-1) == 0 {
		return uint8(v >> 6)
	}
	if v < 0 {
		return 0
	}
	return 255
}
