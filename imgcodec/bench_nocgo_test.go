//go:build !cgo

package imgcodec_test

import "errors"

func newPeer() (func(data []byte, denom int) error, error) {
	return nil, errors.New("the TurboJPEG peer needs cgo")
}
