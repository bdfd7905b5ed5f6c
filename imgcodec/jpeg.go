package imgcodec

import (
	"github.com/faster-training/faster/imgcodec/turbojpeg"
)

// Backend names the JPEG decoder of this build: "libjpeg-turbo" (cgo) or
// "pure-go".
const Backend = turbojpeg.Backend

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
	return Config{Format: "jpeg", Width: h.Width, Height: h.Height, Components: h.Components}, nil
}
