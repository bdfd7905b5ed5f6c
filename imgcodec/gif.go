package imgcodec

import (
	"bytes"
	"image"
	"image/gif"
	"io"
)

// GIF: the first frame, as PIL's Image.open(p).convert("RGB") gives it
// (torchvision's ImageFolder loader): on the logical screen, the pixels
// outside the frame the transparent index if the frame has one, else
// index 0, and every index its palette colour, the transparent one
// included (image/gif makes that entry transparent black: its
// transparency flag is cleared before decoding). An index beyond the
// palette is black, as in PIL's 256-entry palettes.
func init() {
	d, c := stdFuncs("gif", decodeGIFFirst, gif.DecodeConfig)
	RegisterFormat("gif", "GIF8?a", d, c)
}

// decodeGIFFirst decodes the first frame; it reads r whole into a copy
// (its flags are changed).
func decodeGIFFirst(r io.Reader) (image.Image, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	transparent := gifOpaque(data)
	screen, err := gif.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	m, err := gif.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	p, ok := m.(*image.Paletted)
	full := image.Rect(0, 0, screen.Width, screen.Height)
	if !ok || p.Rect == full {
		return m, nil
	}
	out := image.NewPaletted(full, p.Palette)
	if transparent >= 0 {
		for i := range out.Pix {
			out.Pix[i] = uint8(transparent)
		}
	}
	in := p.Rect.Intersect(full)
	for y := in.Min.Y; y < in.Max.Y; y++ {
		copy(out.Pix[out.PixOffset(in.Min.X, y):][:in.Dx()], p.Pix[p.PixOffset(in.Min.X, y):])
	}
	return out, nil
}

// gifOpaque clears, in data, the transparency flag of the graphic control
// extensions before the first image, and returns the first frame's
// transparent index (-1 if none). A walk that meets what it does not
// expect stops: the decoder reports the damage.
func gifOpaque(data []byte) int {
	const header = 13
	if len(data) < header {
		return -1
	}
	i := header
	if data[10]&0x80 != 0 {
		i += 3 << (data[10]&7 + 1)
	}
	transparent := -1
	for i+1 < len(data) {
		switch data[i] {
		case 0x21: // extension: label, then sub-blocks
			if data[i+1] == 0xf9 && i+7 < len(data) && data[i+2] == 4 {
				transparent = -1
				if data[i+3]&1 != 0 {
					transparent = int(data[i+6])
					data[i+3] &^= 1
				}
			}
			i += 2
			for i < len(data) && data[i] != 0 {
				i += int(data[i]) + 1
			}
			i++
		default: // 0x2c, the first image, or damage
			return transparent
		}
	}
	return transparent
}
