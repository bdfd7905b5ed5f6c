package shard

import (
	"fmt"
	"strings"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfexample"
)

// loadDecodable loads sample i of src and checks that its image is one
// the loader can decode, with the decoder's own header reader
// (imgcodec.DecodeConfig: the format by its bytes, the header, features
// the decoder lacks such as a TIFF's JPEG compression), so that pack finds it before it is stored, under the same
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

// exampleImageProblem is what the loader's decoder says of the image of a
// tf.train.Example record (its image/encoded bytes), "" when it can
// decode it or the record holds none (the reader reports that).
func exampleImageProblem(rec []byte) string {
	var img []byte
	var key string
	err := tfexample.Fields(rec, func(k, feat []byte) error {
		switch string(k) {
		case KeyEncoded:
			img, _ = tfexample.FirstBytes(feat)
		case KeyFilename:
			b, _ := tfexample.FirstBytes(feat)
			key = string(b)
		}
		return nil
	})
	if err != nil || img == nil {
		return ""
	}
	return imageProblem(img, key)
}

// imageProblem is imgcodec.DecodeConfig's word on an image, "" when it
// reads it; key names the sample.
func imageProblem(img []byte, key string) string {
	if _, err := imgcodec.DecodeConfig(img); err != nil {
		if key != "" {
			return fmt.Sprintf("sample %q: the loader cannot decode its image: %v", key, err)
		}
		return fmt.Sprintf("the loader cannot decode the image: %v", err)
	}
	return ""
}

// isImageMember reports whether a WebDataset member of this extension
// is a sample's image, as the reader tells it.
func isImageMember(ext string) bool {
	if i := strings.LastIndexByte(ext, '.'); i >= 0 {
		ext = ext[i+1:]
	}
	return source.IsImageName("x." + ext)
}
