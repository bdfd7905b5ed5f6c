package turbojpeg

import "fmt"

func checkEncode(pix []byte, w, h, channels, stride, quality int) error {
	switch {
	case w <= 0 || h <= 0 || w > 65500 || h > 65500:
		return fmt.Errorf("jpeg: encode: size %dx%d (each side 1 to 65500)", w, h)
	case channels != 1 && channels != 3:
		return fmt.Errorf("jpeg: encode: %d channels (want 1 or 3)", channels)
	case stride < w*channels:
		return fmt.Errorf("jpeg: encode: stride %d < %d bytes per row", stride, w*channels)
	case len(pix) < (h-1)*stride+w*channels:
		return fmt.Errorf("jpeg: encode: %d bytes of pixels, want %d", len(pix), (h-1)*stride+w*channels)
	case quality < 1 || quality > 100:
		return fmt.Errorf("jpeg: encode: quality %d (want 1 to 100)", quality)
	}
	return nil
}

func checkEncode420(y []byte, yStride int, cb, cr []byte, cStride, w, h, quality int) error {
	cw, ch := (w+1)/2, (h+1)/2
	switch {
	case w <= 0 || h <= 0 || w > 65500 || h > 65500:
		return fmt.Errorf("jpeg: encode: size %dx%d (each side 1 to 65500)", w, h)
	case yStride < w || cStride < cw:
		return fmt.Errorf("jpeg: encode: strides %d, %d for %dx%d planes", yStride, cStride, w, h)
	case len(y) < (h-1)*yStride+w || len(cb) < (ch-1)*cStride+cw || len(cr) < (ch-1)*cStride+cw:
		return fmt.Errorf("jpeg: encode: planes of %d, %d, %d bytes for %dx%d", len(y), len(cb), len(cr), w, h)
	case quality < 1 || quality > 100:
		return fmt.Errorf("jpeg: encode: quality %d (want 1 to 100)", quality)
	}
	return nil
}
