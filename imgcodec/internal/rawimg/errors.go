// Package rawimg holds what the imgcodec decoders share: the options and
// output frame types, the error values, the JPEG header scanner, the
// conversion of Go images to interleaved RGB or gray with box downscaling
// and cropping, and the pure-Go JPEG decoder built on image/jpeg.
//
// It is internal so that imgcodec and imgcodec/turbojpeg can share it
// without importing each other; imgcodec re-exports what users need.
package rawimg

import (
	"errors"
	"fmt"
)

// Sentinel errors. imgcodec re-exports them; tests use errors.Is.
var (
	// ErrCorrupt marks every error caused by bad data, at any depth.
	ErrCorrupt error = &kindError{"corrupt image data"}
	// ErrTruncated: the data ends before the image does.
	ErrTruncated error = &kindError{"truncated image data"}
	// ErrTooLarge: width*height exceeds the pixel limit.
	ErrTooLarge error = &kindError{"image exceeds the pixel limit"}
	// ErrUnknownFormat: no registered decoder recognises the magic bytes.
	ErrUnknownFormat error = &kindError{"unknown image format"}
	// ErrUnsupported: a valid file using a feature the decoder lacks
	// (12-bit JPEG, arithmetic coding in the pure-Go decoder, ...).
	ErrUnsupported error = &kindError{"unsupported image feature"}
	// ErrInvalidOptions: the DecodeOptions are wrong (scale, crop).
	ErrInvalidOptions = errors.New("invalid decode options")
)

// kindError is a sentinel marking a kind of damage in the data: its
// DamageKind method lets source.IsDamage recognise it (an image the
// decoder cannot read is a bad sample) without an import.
// ErrInvalidOptions, a caller's mistake, is not one.
type kindError struct{ s string }

func (e *kindError) Error() string { return e.s }
func (e *kindError) DamageKind()   {}

// DamageKind marks every CorruptError as damage (its Offset is within
// the image's bytes, not a file's, so it does not implement
// source.Damaged: the reader's position names the sample).
func (e *CorruptError) DamageKind() {}

// CorruptError reports bad data: the format, the byte offset where the
// decoder stopped (-1 if unknown) and the cause. errors.Is(err, ErrCorrupt)
// holds for every CorruptError; a truncation has Err wrapping ErrTruncated.
type CorruptError struct {
	Format string
	Offset int64
	Err    error
}

func (e *CorruptError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%s: corrupt data at byte %d: %v", e.Format, e.Offset, e.Err)
	}
	return fmt.Sprintf("%s: corrupt data: %v", e.Format, e.Err)
}

// Unwrap returns the cause.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Corrupt returns a *CorruptError with a formatted cause.
func Corrupt(format string, offset int64, msg string, args ...any) error {
	return &CorruptError{Format: format, Offset: offset, Err: fmt.Errorf(msg, args...)}
}

// Truncated returns a *CorruptError wrapping ErrTruncated, with detail.
func Truncated(format string, offset int64, detail string) error {
	var err error = ErrTruncated
	if detail != "" {
		err = fmt.Errorf("%w (%s)", ErrTruncated, detail)
	}
	return &CorruptError{Format: format, Offset: offset, Err: err}
}
