/* consts.h: the enum values the GPU decoder passes, one line each,
 *   FASTER_NVJ_CONST(name as the header spells it, value)
 * Source: nvjpeg.h (nvjpegStatus_t, nvjpegBackend_t,
 * nvjpegChromaSubsampling_t, nvjpegOutputFormat_t; the same values in
 * CUDA 13's nvJPEG documentation §2.2) and
 * driver_types.h (cudaMemcpyKind; cudaHostAllocDefault,
 * cudaStreamNonBlocking and cudaEventDisableTiming, macros there). probe/probe.cpp
 * checks each against the real header; decls.go's Consts lists the same. */
FASTER_NVJ_CONST(NVJPEG_STATUS_SUCCESS, 0)
FASTER_NVJ_CONST(NVJPEG_STATUS_JPEG_NOT_SUPPORTED, 4)
FASTER_NVJ_CONST(NVJPEG_BACKEND_HYBRID, 1)
FASTER_NVJ_CONST(NVJPEG_BACKEND_HARDWARE, 3)
FASTER_NVJ_CONST(NVJPEG_CSS_444, 0)
FASTER_NVJ_CONST(NVJPEG_OUTPUT_RGBI, 5)
FASTER_NVJ_CONST(cudaSuccess, 0)
FASTER_NVJ_CONST(cudaMemcpyHostToDevice, 1)
FASTER_NVJ_CONST(cudaMemcpyDeviceToHost, 2)
FASTER_NVJ_CONST(cudaHostAllocDefault, 0)
FASTER_NVJ_CONST(cudaStreamNonBlocking, 1)
FASTER_NVJ_CONST(cudaEventDisableTiming, 2)
