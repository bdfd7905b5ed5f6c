// Package nvjpeg is the loader's GPU decode: nvJPEG, opened with dlopen by
// soname (libnvjpeg.so.13, and libcudart.so.13 or .12 for memory and
// copies), with declarations of its own (decls.h: no CUDA header is needed
// to build it), decoding batches of JPEGs into device memory, and the
// resize, flip and normalisation of the loader's recipes as kernels of
// its own (package kernels: one CUDA C source that NVRTC compiles for the
// device and gcc for the CPU, tested here against package augment).
//
// What it owns:
//   - CanDecode/Inspect: the admission check, from a JPEG's header alone
//     (pure Go): Hardware (the hardware backend, NVJPEG_BACKEND_HARDWARE,
//     the H100/H200 JPEG engines), GPU (the GPU-hybrid backend:
//     progressive, 4:1:1, 4:1:0), or CPU (the caller's fallback: not a
//     JPEG, CMYK/YCCK, arithmetic, lossless, 12-bit, RGB-coded, odd
//     sampling).
//   - Open/Decoder: one GPU's nvJPEG handles (hardware and GPU-hybrid),
//     its scratch device memory and its batch buffers (Alloc/Free, device
//     memory the caller owns until it frees it), and DecodeBatch: each
//     image decoded to RGB at full scale over the region of interest of
//     its crop (nvjpegDecodeParamsSetROI), then resampled with Pillow's
//     weights (the CPU path's, computed here in Go), flipped and written
//     as uint8 HWC or normalised float32 CHW into the batch's rows.
//
// Without cgo, or without a driver, Open fails with an error naming what
// was tried (every soname and dlerror's words); the header check and the
// weight tables work everywhere. A Decoder is safe for use by one
// goroutine at a time (the loader's stage has one); Alloc and Free may be
// called from any.
package nvjpeg
