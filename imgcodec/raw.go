package imgcodec

import (
	"github.com/faster-training/faster/imgcodec/internal/rawimg"
	"github.com/faster-training/faster/imgcodec/rawpix"
)

// The raw-pixel format (package rawpix): uncompressed pixels behind a
// 20-byte header, as a reader of raw Caffe Datums hands them on. Decoding
// it is a copy (planar BGR to interleaved RGB for Caffe's layout), with
// the box downscale and crop PNG gets, so raw pixels decode to the bytes
// a PNG of them decodes to.
func init() {
	RegisterFormat(rawimg.FormatRaw, rawpix.Magic,
		func(data []byte, opts *DecodeOptions) (*Image, error) {
			var a allocator
			return a.image(rawimg.DecodeRaw(data, rawOptions(opts), a.alloc))
		},
		func(data []byte) (Config, error) {
			hd, _, err := rawimg.ParseRaw(data)
			if err != nil {
				return Config{}, err
			}
			return Config{Format: rawimg.FormatRaw, Width: hd.Width, Height: hd.Height, Components: hd.Channels}, nil
		})
}
