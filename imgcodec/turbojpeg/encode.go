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
