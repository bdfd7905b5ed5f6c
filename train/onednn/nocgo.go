//go:build !cgo || faster_serveonly || faster_noonednn

package onednn

// Without cgo there is no oneDNN: importing this package registers
// nothing, and train.Default falls back to the pure-Go reference backend.
