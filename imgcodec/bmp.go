package imgcodec

import "golang.org/x/image/bmp"

// BMP (torchvision's ImageFolder lists .bmp) through golang.org/x/image/bmp:
// uncompressed 1-, 2-, 4- and 8-bit palettes, 24- and 32-bit colour, either
// row order; what PIL writes. RLE-compressed and bit-field layouts other
// than the default masks are ErrUnsupported. A 32-bit BMP's fourth byte
// is dropped as PIL's convert("RGB") drops it.
func init() {
	d, c := stdFuncs("bmp", bmp.Decode, bmp.DecodeConfig)
	RegisterFormat("bmp", "BM", d, c)
}
