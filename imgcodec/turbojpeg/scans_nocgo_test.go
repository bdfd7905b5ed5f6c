//go:build !cgo

package turbojpeg

// unwalked needs libjpeg-turbo: ok is false without cgo.
func unwalked(data []byte) (err error, ok bool) { return nil, false }
