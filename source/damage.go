package source

import "errors"

// Damaged is the one shape of damage in the data, as net.Error is of a
// network failure: an error that reports damage answers where it is and
// why. tfrecord.CorruptError, CorruptError and FileError implement it;
// DamageOf reads it through any wrapping.
type Damaged interface {
	error
	// Damaged returns the damaged file (or object), the byte offset of
	// the damaged record in it (-1 when the format names records by key
	// or the position is unknown) and what is wrong.
	Damaged() (path string, offset int64, reason string)
}

// damageKind is implemented by the sentinel errors that mark a kind of
// damage (tfrecord.ErrCorrupt, tfexample.ErrMalformed, ErrCorrupt,
// ErrNotImage, ErrBadFile, and imgcodec's ErrCorrupt, ErrTooLarge,
// ErrUnknownFormat, ErrUnsupported): each package defines its own small
// type with this method, so none imports another to be recognised.
type damageKind interface{ DamageKind() }

// IsDamage reports whether err is damage in the data rather than a failure
// to read it: the one definition of a bad sample (docs/badinput.md). A
// record or container failing its checks, a file that is not an image or
// that the decoder cannot read (corrupt, an unknown format, an
// unsupported feature, above the pixel limit), and a path that cannot be
// a sample (a FIFO, a device, a dangling link, a loop, above the size cap)
// are damage; context cancellation, a missing dataset or a full disk are
// not.
func IsDamage(err error) bool {
	if err == nil {
		return false
	}
	var d Damaged
	var k damageKind
	return errors.As(err, &d) || errors.As(err, &k)
}

// DamageOf describes err as a damaged record: the file, offset and reason
// its Damaged error carries (at any depth; a record's key too when the
// error has one), else path, off, key and the error's text.
func DamageOf(err error, path string, off int64, key string) Damage {
	d := Damage{Path: path, Offset: off, Key: key, Reason: err.Error()}
	var de Damaged
	if errors.As(err, &de) {
		d.Path, d.Offset, d.Reason = de.Damaged()
		if d.Path == "" {
			d.Path = path
		}
		var ke interface{ DamagedKey() string }
		if errors.As(err, &ke) && ke.DamagedKey() != "" {
			d.Key = ke.DamagedKey()
		}
	}
	return d
}

// kindError is this package's sentinel of a kind of damage.
type kindError struct{ s string }

func (e *kindError) Error() string { return e.s }
func (e *kindError) DamageKind()   {}

// Damaged implements Damaged.
func (e *CorruptError) Damaged() (string, int64, string) { return e.Path, e.Offset, e.Reason }

// DamagedKey returns the damaged record's key, if it has one.
func (e *CorruptError) DamagedKey() string { return e.Key }

// Damaged implements Damaged: a path refused as data has no offset.
func (e *FileError) Damaged() (string, int64, string) { return e.Path, -1, e.Reason }
