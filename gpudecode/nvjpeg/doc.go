// Package nvjpeg is the loader's GPU decode: nvJPEG, opened with dlopen by
// soname (libnvjpeg.so.13, and libcudart.so.13 or .12 for memory,
// copies and the stream), with declarations of its own (decls.h: no CUDA header is needed
// to build it), decoding batches of JPEGs into device memory, and the
// resize, flip and normalisation of the loader's recipes as kernels of
// its own (package kernels: one CUDA C source that NVRTC compiles for the
// device and gcc for the CPU, tested here against package augment).
//
// What it owns:
//   - CanDecode/Inspect: the admission check, from a JPEG's header alone
//     (pure Go): Hardware (the hardware backend, NVJPEG_BACKEND_HARDWARE,
//     the H100/H200 JPEG engines), Hybrid (the hybrid backend,
//     NVJPEG_BACKEND_HYBRID, Huffman on the host: progressive, 4:1:1,
//     4:1:0; not NVJPEG_BACKEND_GPU_HYBRID, which takes baseline JPEGs
//     only), or CPU (the caller's fallback: not a JPEG, CMYK/YCCK,
//     arithmetic, lossless, 12-bit, RGB-coded, odd sampling).
//   - Open/Decoder: one GPU's nvJPEG handles (hardware and hybrid, their
//     allocations padded, the hardware decoder's buffers allocated at Open
//     for Options.MaxBatch images of up to 512×512, so that a batch of
//     another size does not make nvJPEG free and allocate again: cudaFree
//     waits for the whole device), its scratch device memory and its
//     batch buffers (Alloc/Free, device
//     memory the caller owns until it frees it), and DecodeBatch: each
//     image decoded to RGB at full scale over the region of interest of
//     its crop (nvjpegDecodeParamsSetROI), then resampled with Pillow's
//     weights (the CPU path's, computed here in Go), flipped and written
//     as uint8 HWC or normalised float32 CHW into the batch's rows.
//
// The stage runs on a stream of its own. Open makes one per Decoder with
// cudaStreamCreateWithFlags(cudaStreamNonBlocking), Close destroys it;
// every nvJPEG call that takes a stream gets it, the kernels are queued on
// it (train/cuda's Function.LaunchOn), the tables go up with
// cudaMemcpyAsync from pinned staging, and a batch ends with
// cudaStreamSynchronize of that stream alone. Why: in a training process
// the cuda backend (train/cuda) runs its steps on its own stream of the
// same primary context. Work on the legacy default stream waits for every
// blocking stream's work and makes it wait, and cudaDeviceSynchronize or
// cuCtxSynchronize waits for the trainer's queued steps too, so decoding
// on the default stream serialised it with training; a non-blocking
// stream and a per-stream synchronisation do not. DecodeBatch's contract
// (loader.BatchDecoder) holds: the rows are complete when it returns, so a
// reader on any stream, or in another process (package serve), sees them.
// Download copies on the same stream and waits for it; Upload (the CPU's
// rows, into places the batch's work does not write) copies on a second
// non-blocking stream of the Decoder's and waits for that one, so a row
// the CPU made beside the batch does not wait for the hardware's decode.
// The hybrid backend's images run on a third (their transfers and device
// phases: one image's host phase waits only for the previous hybrid
// image, not for the hardware batch queued before it); an event recorded
// there after them is waited for by the batch's stream
// (cudaStreamWaitEvent) before the kernels that read every image. The
// stand-in runtime models streams, marks and waits, so a kernel queued
// without that wait reads the hybrid images missing (TestDecoderStreamWithStandIns).
//
// Without cgo, or without a driver, Open fails with an error naming what
// was tried (every soname and dlerror's words); the header check and the
// weight tables work everywhere. A Decoder's DecodeBatch is for one
// goroutine at a time (the loader's stage has one); Upload and Download
// may run beside each other (the fallback's workers); Alloc and Free may
// be called from any.
package nvjpeg
