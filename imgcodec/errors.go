package imgcodec

import "github.com/faster-training/faster/imgcodec/internal/rawimg"

// Errors returned by Decode and DecodeConfig, to test with errors.Is at
// any depth of wrapping. Every error caused by bad data is a
// *CorruptError, and errors.Is(err, ErrCorrupt) holds for it, truncation
// included: a pipeline can apply one skip-or-stop policy to all of them.
var (
	ErrCorrupt        = rawimg.ErrCorrupt        // bad data, any kind
	ErrTruncated      = rawimg.ErrTruncated      // data ends early (also ErrCorrupt); empty data too
	ErrTooLarge       = rawimg.ErrTooLarge       // width*height above DecodeOptions.MaxPixels
	ErrUnknownFormat  = rawimg.ErrUnknownFormat  // no registered format matches the magic bytes
	ErrUnsupported    = rawimg.ErrUnsupported    // valid data using a feature the decoder lacks
	ErrInvalidOptions = rawimg.ErrInvalidOptions // bad ScaleDenom or Crop
)

// CorruptError reports bad data: the format, the byte offset where the
// decoder stopped (-1 if unknown) and the cause; Unwrap gives the cause,
// which is ErrTruncated (wrapped) for truncated data.
type CorruptError = rawimg.CorruptError

// The two pixel limits are one constant.
const (
	_ = uint(DefaultMaxPixels - rawimg.DefaultMaxPixels)
	_ = uint(rawimg.DefaultMaxPixels - DefaultMaxPixels)
)
