//go:build !cgo || faster_serveonly

package gloo

import (
	"errors"

	"github.com/faster-training/faster/collective"
)

// Open fails: Gloo is a C++ library and needs a cgo build.
func Open(c collective.Config) (collective.Comm, error) {
	return nil, errors.New("collective: gloo needs a cgo build (CGO_ENABLED=1 and libgloo-dev installed)")
}
