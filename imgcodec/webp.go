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
// straight, as PIL's convert("RGB") does. An animated WebP gives its
// first frame on its canvas, transparent black (black) around it, as
// libwebp's WebPAnimDecoder draws it for PIL.
func init() {
	RegisterFormat("webp", "RIFF????WEBP", decodeWebP, configWebP)
}

// webpAnimated reports whether a VP8X header marks the file animated.
func webpAnimated(data []byte) bool {
	return len(data) > 20 && string(data[12:16]) == "VP8X" && data[20]&0x02 != 0
}

func configWebP(data []byte) (Config, error) {
	if webpAnimated(data) {
		if _, _, err := webpFirstFrame(data); err != nil {
			return Config{}, err
		}
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
	frame, at := data, image.Point{}
	if webpAnimated(data) {
		if frame, at, err = webpFirstFrame(data); err != nil {
			return nil, err
		}
	}
	src, err := webp.Decode(bytes.NewReader(frame))
	if err != nil {
		return nil, stdError("webp", err, len(data))
	}
	var rows rawimg.RowFunc
	switch m := src.(type) {
	case *image.YCbCr:
		rows = fancyRows(m, o.Gray)
	case *image.NYCbCrA:
		rows = fancyRows(&m.YCbCr, o.Gray)
	default:
		rows = rawimg.RowsOf(src, o.Gray)
	}
	if r := src.Bounds().Add(at); r != image.Rect(0, 0, c.Width, c.Height) {
		rows = onCanvas(rows, r, o.Channels())
	}
	var a allocator
	return a.image(rawimg.FromRows("webp", c.Width, c.Height, rows, o, a.alloc))
}

// onCanvas places a frame's rows at r on a transparent black canvas, as
// libwebp's WebPAnimDecoder draws an animation's first (key) frame.
func onCanvas(rows rawimg.RowFunc, r image.Rectangle, ch int) rawimg.RowFunc {
	return func(x, y, n int, dst []byte) {
		clear(dst[:n*ch])
		if y < r.Min.Y || y >= r.Max.Y {
			return
		}
		x0, x1 := max(x, r.Min.X), min(x+n, r.Max.X)
		if x0 < x1 {
			rows(x0-r.Min.X, y-r.Min.Y, x1-x0, dst[(x0-x)*ch:])
		}
	}
}

// webpFirstFrame returns the first frame of an animated WebP as a still
// WebP of its own (its ALPH and VP8 or VP8L chunks behind a VP8X header)
// and where it lies on the canvas (the ANMF chunk's offset, in pixels).
func webpFirstFrame(data []byte) ([]byte, image.Point, error) {
	for i := 12; i+8 <= len(data); {
		id, n := string(data[i:i+4]), int(uint32(data[i+4])|uint32(data[i+5])<<8|uint32(data[i+6])<<16|uint32(data[i+7])<<24)
		body := data[i+8:]
		if n > len(body) {
			return nil, image.Point{}, rawimg.Truncated("webp", int64(len(data)), fmt.Sprintf("chunk %q of %d bytes", id, n))
		}
		body = body[:n]
		if id != "ANMF" {
			i += 8 + n + n&1
			continue
		}
		if n < 16 {
			return nil, image.Point{}, rawimg.Corrupt("webp", int64(i), "ANMF chunk of %d bytes", n)
		}
		u24 := func(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }
		at := image.Pt(2*u24(body[0:]), 2*u24(body[3:]))
		fw, fh := u24(body[6:])+1, u24(body[9:])+1
		sub := body[16:]
		flags := byte(0)
		if bytes.Contains(sub[:min(len(sub), 4)], []byte("ALPH")) {
			flags = 0x10
		}
		var b bytes.Buffer
		b.WriteString("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00")
		b.Write([]byte{flags, 0, 0, 0, byte(fw - 1), byte((fw - 1) >> 8), byte((fw - 1) >> 16), byte(fh - 1), byte((fh - 1) >> 8), byte((fh - 1) >> 16)})
		b.Write(sub)
		out := b.Bytes()
		size := uint32(len(out) - 8)
		out[4], out[5], out[6], out[7] = byte(size), byte(size>>8), byte(size>>16), byte(size>>24)
		return out, at, nil
	}
	return nil, image.Point{}, rawimg.Corrupt("webp", -1, "animated, and no ANMF frame")
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
