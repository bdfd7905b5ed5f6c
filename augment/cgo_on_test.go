//go:build cgo

package augment

const cgoEnabled = true
