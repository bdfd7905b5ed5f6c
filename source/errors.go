package source

import "fmt"

// ErrCorrupt marks a damaged record of a container format (an LMDB value
// that is not a Caffe Datum, a tar member cut short): errors.Is(err,
// ErrCorrupt) holds for every *CorruptError.
var ErrCorrupt error = &kindError{"source: corrupt data"}

// CorruptError reports damage in a container file: the file, the byte
// offset of the damaged record (-1 when it has none, as for LMDB values,
// which are named by Key), and what is wrong.
type CorruptError struct {
	Path   string
	Key    string // the record's key, when it has one
	Offset int64
	Reason string
	Err    error // underlying cause; may be nil
}

func (e *CorruptError) Error() string {
	s := e.Path
	if e.Offset >= 0 {
		s += fmt.Sprintf(": offset %d", e.Offset)
	}
	if e.Key != "" {
		s += fmt.Sprintf(": key %q", e.Key)
	}
	return s + ": corrupt: " + e.Reason
}

// Is reports ErrCorrupt as matching.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the underlying cause.
func (e *CorruptError) Unwrap() error { return e.Err }
