package shard

import (
	"fmt"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/source"
)

// loadDecodable loads sample i of src and checks that its image is one
// the loader can decode, with the decoder's own header reader
// (imgcodec.DecodeConfig: the format by its bytes, the header, features
// the decoder lacks such as a TIFF's JPEG compression or an animated
// WebP), so that pack finds it before it is stored, under the same
// stop/skip policy as a file that is not an image (before: a source's
// check knew only JPEG, PNG and GIF headers, and a WebP, BMP, TIFF or PNM
// the decoder could not read was stored and failed the epoch later). The
// error wraps source.ErrNotImage and the decoder's error, both damage.
// The pixel limits are the reader's and are not checked.
func loadDecodable(src source.Source, i int) (source.Sample, error) {
	s, err := src.Load(i)
	if err != nil {
		return s, err
	}
	if _, err := imgcodec.DecodeConfig(s.Data); err != nil {
		return s, fmt.Errorf("%s: %w: %w", s.Key, source.ErrNotImage, err)
	}
	return s, nil
}
