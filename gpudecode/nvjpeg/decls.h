/* decls.h: every nvJPEG and CUDA runtime function the GPU decoder calls,
 * declared here because no CUDA header exists where it is built: one line
 * each,
 *   FASTER_NVJ_DECL(LIBRARY, return type, symbol, (parameters))
 * with handles (nvjpegHandle_t, nvjpegJpegState_t, nvjpegJpegStream_t,
 * nvjpegDecodeParams_t, nvjpegJpegDecoder_t, nvjpegBuffer*_t,
 * cudaStream_t) as void *, enums (nvjpegStatus_t, nvjpegBackend_t,
 * nvjpegChromaSubsampling_t, nvjpegOutputFormat_t, cudaError_t,
 * cudaMemcpyKind, libraryPropertyType) as int, and nvjpegImage_t as struct faster_nvjpeg_image (nvjpeg.h:
 * "unsigned char *channel[NVJPEG_MAX_COMPONENT]; size_t
 * pitch[NVJPEG_MAX_COMPONENT];", NVJPEG_MAX_COMPONENT 4).
 *
 * Source of every nvJPEG declaration: nvjpeg.h (nvJPEG 11.6 and later;
 * the same prototypes in CUDA 13's nvJPEG 13.0 documentation,
 * docs.nvidia.com/cuda/nvjpeg, §2.3 "nvJPEG API Reference"); of the
 * runtime's: cuda_runtime_api.h. probe/probe.cpp checks each against the
 * real headers on the GPU machine. decls.go lists the same (a test
 * checks), dl.c tables them and internal/dl resolves them with dlsym. Included several times with
 * different definitions of the macro: no include guard. */
FASTER_NVJ_DECL(NVJPEG, int, nvjpegGetProperty, (int type, int *value))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegCreateEx, (int backend, void *dev_allocator, void *pinned_allocator, unsigned int flags, void **handle))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDestroy, (void *handle))
/* Every device (pinned) allocation of a handle is rounded up to a multiple
 * of the padding, so that a slightly larger image reuses the buffer
 * instead of freeing and allocating again (cudaFree waits for the whole
 * device). */
FASTER_NVJ_DECL(NVJPEG, int, nvjpegSetDeviceMemoryPadding, (size_t padding, void *handle))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegSetPinnedMemoryPadding, (size_t padding, void *handle))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegJpegStateCreate, (void *handle, void **state))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegJpegStateDestroy, (void *state))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeBatchedInitialize, (void *handle, void *state, int batch_size, int max_cpu_threads, int output_format))
/* The hardware batched decoder's buffers, allocated once for batch_size
 * images of width×height (chroma_subsampling: nvjpegChromaSubsampling_t),
 * so that a later nvjpegDecodeBatchedInitialize for another batch size
 * within them allocates nothing. */
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeBatchedPreAllocate, (void *handle, void *state, int batch_size, int width, int height, int chroma_subsampling, int output_format))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeBatchedEx, (void *handle, void *state, const unsigned char *const *data, const size_t *lengths, struct faster_nvjpeg_image *destinations, void **decode_params, void *stream))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeBatchedSupportedEx, (void *handle, void *jpeg_stream, void *decode_params, int *is_supported))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegJpegStreamCreate, (void *handle, void **jpeg_stream))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegJpegStreamDestroy, (void *jpeg_stream))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegJpegStreamParse, (void *handle, const unsigned char *data, size_t length, int save_metadata, int save_stream, void *jpeg_stream))
/* The markers up to the first scan only: what
 * nvjpegDecodeBatchedSupportedEx reads. */
FASTER_NVJ_DECL(NVJPEG, int, nvjpegJpegStreamParseHeader, (void *handle, const unsigned char *data, size_t length, void *jpeg_stream))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeParamsCreate, (void *handle, void **decode_params))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeParamsDestroy, (void *decode_params))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeParamsSetOutputFormat, (void *decode_params, int output_format))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeParamsSetROI, (void *decode_params, int offset_x, int offset_y, int roi_width, int roi_height))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecoderCreate, (void *handle, int implementation, void **decoder))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecoderDestroy, (void *decoder))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecoderStateCreate, (void *handle, void *decoder, void **decoder_state))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegBufferPinnedCreate, (void *handle, void *pinned_allocator, void **buffer))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegBufferPinnedDestroy, (void *buffer))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegBufferDeviceCreate, (void *handle, void *device_allocator, void **buffer))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegBufferDeviceDestroy, (void *buffer))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegStateAttachPinnedBuffer, (void *decoder_state, void *pinned_buffer))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegStateAttachDeviceBuffer, (void *decoder_state, void *device_buffer))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeJpegHost, (void *handle, void *decoder, void *decoder_state, void *decode_params, void *jpeg_stream))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeJpegTransferToDevice, (void *handle, void *decoder, void *decoder_state, void *jpeg_stream, void *stream))
FASTER_NVJ_DECL(NVJPEG, int, nvjpegDecodeJpegDevice, (void *handle, void *decoder, void *decoder_state, struct faster_nvjpeg_image *destination, void *stream))
FASTER_NVJ_DECL(CUDART, int, cudaRuntimeGetVersion, (int *version))
FASTER_NVJ_DECL(CUDART, int, cudaGetDeviceCount, (int *count))
FASTER_NVJ_DECL(CUDART, int, cudaSetDevice, (int device))
FASTER_NVJ_DECL(CUDART, const char *, cudaGetErrorString, (int error))
FASTER_NVJ_DECL(CUDART, int, cudaMalloc, (void **ptr, size_t size))
FASTER_NVJ_DECL(CUDART, int, cudaFree, (void *ptr))
FASTER_NVJ_DECL(CUDART, int, cudaHostAlloc, (void **ptr, size_t size, unsigned int flags))
FASTER_NVJ_DECL(CUDART, int, cudaFreeHost, (void *ptr))
/* The stage's stream: one per decoder, made with cudaStreamNonBlocking
 * (it never waits for the legacy default stream, nor that stream for it);
 * every copy, decode and kernel of a batch is queued on it, and a batch
 * ends with cudaStreamSynchronize, never cudaDeviceSynchronize (which
 * would wait for a trainer's work on the same GPU too). */
FASTER_NVJ_DECL(CUDART, int, cudaStreamCreateWithFlags, (void **stream, unsigned int flags))
FASTER_NVJ_DECL(CUDART, int, cudaStreamDestroy, (void *stream))
FASTER_NVJ_DECL(CUDART, int, cudaStreamSynchronize, (void *stream))
FASTER_NVJ_DECL(CUDART, int, cudaMemcpyAsync, (void *dst, const void *src, size_t count, int kind, void *stream))
/* The hybrid backend's images run on a second stream of the decoder's, so
 * that their host phases need not wait for the hardware batch queued
 * before them; an event recorded there after them, and waited for by the
 * batch's stream, orders the kernels that read every image after both. */
FASTER_NVJ_DECL(CUDART, int, cudaEventCreateWithFlags, (void **event, unsigned int flags))
FASTER_NVJ_DECL(CUDART, int, cudaEventDestroy, (void *event))
FASTER_NVJ_DECL(CUDART, int, cudaEventRecord, (void *event, void *stream))
FASTER_NVJ_DECL(CUDART, int, cudaStreamWaitEvent, (void *stream, void *event, unsigned int flags))
/* cuda_runtime_api.h: cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr);
 * cudaIpcMemHandle_t (driver_types.h) is struct { char reserved[CUDA_IPC_HANDLE_SIZE]; },
 * CUDA_IPC_HANDLE_SIZE 64: a 64-byte buffer here (probe.cpp checks the size). Package serve
 * sends it to the consumer, which opens it with cudaIpcOpenMemHandle. */
FASTER_NVJ_DECL(CUDART, int, cudaIpcGetMemHandle, (void *handle, void *dev_ptr))
