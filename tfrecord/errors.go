package tfrecord

import (
	"errors"
	"fmt"
)

// ErrCorrupt is the marker of damaged data: errors.Is(err, ErrCorrupt)
// holds for every *CorruptError, truncation included.
var ErrCorrupt = errors.New("tfrecord: corrupt data")

// CorruptError reports damage found in a TFRecord or index file.
type CorruptError struct {
	Path   string // file name, if the reader was given one
	Offset int64  // byte offset of the damaged record or field
	Reason string // what is wrong, e.g. "length CRC mismatch"
	Err    error  // underlying cause, e.g. io.ErrUnexpectedEOF; may be nil
}

func (e *CorruptError) Error() string {
	name := e.Path
	if name == "" {
		name = "tfrecord"
	}
	return fmt.Sprintf("%s: corrupt at offset %d: %s", name, e.Offset, e.Reason)
}

// Is reports ErrCorrupt as matching.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the underlying cause.
func (e *CorruptError) Unwrap() error { return e.Err }
