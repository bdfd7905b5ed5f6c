// Package onednn is the oneDNN (Intel's deep-learning primitives library,
// Debian libdnnl-dev 2.6) backend of package train, registered as "onednn"
// when built with cgo: import _ "github.com/faster-training/faster/train/onednn".
//
// It is the only package of the module that calls oneDNN. Every op picks
// oneDNN's preferred memory format for its output (format "any"), so
// activations stay in blocked layouts (nChw16c on AVX-512) from one layer
// to the next; a reorder is inserted only where two primitives disagree.
// Weights live in Go in PyTorch's layouts and are reordered into the
// primitives' formats on each Forward; weight gradients are reordered back.
// Primitives and buffers are created once per input shape.
//
// Memory discipline (cgo rules): every buffer is allocated and owned by
// the library (C memory); Go copies parameters in and out of those buffers
// through unsafe slices over C memory. No Go pointer is ever stored in C.
// A failed oneDNN call returns an *Error carrying the dnnl_status_t.
//
// oneDNN here runs on OpenMP. The thread count is set before each
// execution (OpenMP keeps it per OS thread); callers should run a training
// loop on one locked OS thread (train.Trainer does) so that one OpenMP
// pool serves it.
//
// Without cgo the package is empty and registers nothing.
package onednn
