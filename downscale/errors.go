package downscale

import (
	"errors"
	"path/filepath"

	"github.com/faster-training/faster/source"
)

var (
	// ErrOptions marks invalid Options.
	ErrOptions = errors.New("downscale: invalid options")
	// ErrSource marks a source folder that cannot be read, or a destination
	// that overlaps it.
	ErrSource = errors.New("downscale: bad source or destination")
)

// Failure is a source file that could not be processed and why: the one
// record of damage (source.Damage), its Path relative to the source root
// (slash-separated) and its Offset -1 (the file as a whole). Failures are
// reported in Result and never stop a run; nothing is written for them.
type Failure = source.Damage

// failure is file rel's Failure with err.
func failure(rel string, err error) Failure {
	return Failure{Path: filepath.ToSlash(rel), Offset: -1, Reason: err.Error()}
}
