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
// Reduced precision (BackendOptions.Precision): convolutions and inner
// products take their source, weights and output gradient in bf16 and
// produce f32 outputs and gradients. Where oneDNN can create a bf16
// convolution (probed once: avx512_core_bf16 or AMX) those tensors are
// real bf16 memory; otherwise, and always for fp16, the f32 buffers are
// rounded to the format (round to nearest even, element-wise so any
// layout works) in C before the f32 primitive runs, into the op's own
// buffer where the tensor belongs to another layer. Master weights stay
// f32 in Go. The reference backend emulates the same numerics.
//
// Autotuning (BackendOptions.Autotune) times each convolution's candidate
// algorithms and activation layouts on its first input of a new shape and
// layout, and keeps the fastest for the whole backend (see Tuner).
//
// BatchNorm implements train.SyncBatchNormOp with oneDNN primitives only:
// see syncState.
//
// Memory discipline (cgo rules): every buffer is allocated and owned by
// the library (C memory); Go copies parameters in and out of those buffers
// through unsafe slices over C memory. No Go pointer is ever stored in C
// (tests round Go slices in C for the duration of one call).
// A failed oneDNN call returns an *Error carrying the dnnl_status_t.
//
// oneDNN here runs on OpenMP. The thread count is set before each
// execution (OpenMP keeps it per OS thread); callers should run a training
// loop on one locked OS thread (train.Trainer does) so that one OpenMP
// pool serves it.
//
// Without cgo the package is empty and registers nothing.
package onednn
