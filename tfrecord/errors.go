package tfrecord

import "fmt"

// ErrCorrupt is the marker of damaged data: errors.Is(err, ErrCorrupt)
// holds for every *CorruptError, truncation included.
var ErrCorrupt error = &kindError{"tfrecord: corrupt data"}

// kindError is a sentinel marking a kind of damage: its DamageKind method
// lets source.IsDamage recognise it without this package importing any.
type kindError struct{ s string }

func (e *kindError) Error() string { return e.s }
func (e *kindError) DamageKind()   {}

// Damaged reports the file, the offset and the reason (source.Damaged:
// the one shape of damage).
func (e *CorruptError) Damaged() (string, int64, string) { return e.Path, e.Offset, e.Reason }

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
