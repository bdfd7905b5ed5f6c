package imgcodec

import (
	"github.com/faster-training/faster/imgcodec/turbojpeg"
)

// Backend names the JPEG decoder of this build: "libjpeg-turbo" (cgo) or
// "pure-go".
const Backend = turbojpeg.Backend

// BackendLink says how libjpeg-turbo is linked into this build: "static"
// (-tags faster_static, the wheel's binary), "shared", or "" (pure Go).
const BackendLink = turbojpeg.Link

func init() {
	RegisterFormat("jpeg", "\xff\xd8", decodeJPEG, configJPEG)
}

func decodeJPEG(data []byte, opts *DecodeOptions) (*Image, error) {
	var a allocator
	return a.image(turbojpeg.Decode(data, rawOptions(opts), a.alloc))
}

func configJPEG(data []byte) (Config, error) {
	h, err := turbojpeg.DecodeHeader(data)
	if err != nil {
		return Config{}, err
	}
	c := Config{Format: "jpeg", Width: h.Width, Height: h.Height, Components: h.Components}
	if h.Progressive {
		c.WorkBytesPerPixel = 2 * h.Components // libjpeg's whole-image coefficient buffers (16-bit)
	}
	if Backend == "pure-go" {
		c.WorkBytesPerPixel += h.Components // image/jpeg's own YCbCr or CMYK image, before RGB
	}
	return c, nil
}
