//go:build !cgo

package tjpeer

import "errors"

// Decoder is unavailable without cgo.
type Decoder struct{}

// Open fails without cgo.
func Open() (*Decoder, error) { return nil, errors.New("tjpeer: needs cgo") }
