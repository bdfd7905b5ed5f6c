package imgcodec

import (
	"fmt"
	"io"

	"github.com/faster-training/faster/imgcodec/turbojpeg"
)

// DefaultQuality is the JPEG quality `faster resize` uses by default.
const DefaultQuality = 90

// EncodeJPEG writes img (1 or 3 channels) to w as a baseline JPEG of the
// given quality (1-100; 0 means DefaultQuality) with 4:2:0 chroma
// subsampling: libjpeg-turbo with cgo, image/jpeg without.
func EncodeJPEG(w io.Writer, img *Image, quality int) error {
	if img == nil || len(img.Pix) == 0 {
		return fmt.Errorf("imgcodec: encode: empty image")
	}
	if quality == 0 {
		quality = DefaultQuality
	}
	if err := turbojpeg.Encode(w, img.Pix, img.Width, img.Height, img.Channels, img.Stride, quality); err != nil {
		return fmt.Errorf("imgcodec: %w", err)
	}
	return nil
}
