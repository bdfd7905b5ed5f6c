package downscale

import "errors"

var (
	// ErrOptions marks invalid Options.
	ErrOptions = errors.New("downscale: invalid options")
	// ErrSource marks a source folder that cannot be read, or a destination
	// that overlaps it.
	ErrSource = errors.New("downscale: bad source or destination")
)

// Failure is a source file that could not be processed and why. Failures
// are reported in Result and never stop a run; nothing is written for them.
type Failure struct {
	Path   string `json:"path"`   // relative to the source root, slash-separated
	Reason string `json:"reason"` // the error
}
