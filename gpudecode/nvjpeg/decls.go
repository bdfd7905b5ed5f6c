package nvjpeg

// IPCHandleBytes is the size of a cudaIpcMemHandle_t (CUDA_IPC_HANDLE_SIZE
// in driver_types.h; probe/ checks it).
const IPCHandleBytes = 64

// Library is one of the libraries the decoder opens.
type Library int

// The libraries, in dl.h's order (FASTER_NVJ_LIB_*).
const (
	NVJPEG  Library = iota // libnvjpeg: the decode
	Runtime                // libcudart: device memory, copies, the device
)

// library is how a Library is found: by soname, the first that dlopen
// takes (no path: the system's search, LD_LIBRARY_PATH included).
type library struct {
	name    string
	sonames []string
}

var libraries = []library{
	NVJPEG:  {"nvjpeg", []string{"libnvjpeg.so.13", "libnvjpeg.so.12"}},
	Runtime: {"cudart", []string{"libcudart.so.13", "libcudart.so.12"}},
}

func (l Library) String() string { return libraries[l].name }

// Decl is one library function the decoder calls, as decls.h declares it.
type Decl struct {
	Symbol string
	Lib    Library
	C      string
}

// Decls lists decls.h's declarations in its order (a test checks them
// against the file and the loader's table; probe/ against the headers).
var Decls = []Decl{
	{"nvjpegGetProperty", NVJPEG, "int nvjpegGetProperty(int type, int *value)"},
	{"nvjpegCreateEx", NVJPEG, "int nvjpegCreateEx(int backend, void *dev_allocator, void *pinned_allocator, unsigned int flags, void **handle)"},
	{"nvjpegDestroy", NVJPEG, "int nvjpegDestroy(void *handle)"},
	{"nvjpegSetDeviceMemoryPadding", NVJPEG, "int nvjpegSetDeviceMemoryPadding(size_t padding, void *handle)"},
	{"nvjpegSetPinnedMemoryPadding", NVJPEG, "int nvjpegSetPinnedMemoryPadding(size_t padding, void *handle)"},
	{"nvjpegJpegStateCreate", NVJPEG, "int nvjpegJpegStateCreate(void *handle, void **state)"},
	{"nvjpegJpegStateDestroy", NVJPEG, "int nvjpegJpegStateDestroy(void *state)"},
	{"nvjpegDecodeBatchedInitialize", NVJPEG, "int nvjpegDecodeBatchedInitialize(void *handle, void *state, int batch_size, int max_cpu_threads, int output_format)"},
	{"nvjpegDecodeBatchedPreAllocate", NVJPEG, "int nvjpegDecodeBatchedPreAllocate(void *handle, void *state, int batch_size, int width, int height, int chroma_subsampling, int output_format)"},
	{"nvjpegDecodeBatchedEx", NVJPEG, "int nvjpegDecodeBatchedEx(void *handle, void *state, const unsigned char *const *data, const size_t *lengths, struct faster_nvjpeg_image *destinations, void **decode_params, void *stream)"},
	{"nvjpegDecodeBatchedSupportedEx", NVJPEG, "int nvjpegDecodeBatchedSupportedEx(void *handle, void *jpeg_stream, void *decode_params, int *is_supported)"},
	{"nvjpegJpegStreamCreate", NVJPEG, "int nvjpegJpegStreamCreate(void *handle, void **jpeg_stream)"},
	{"nvjpegJpegStreamDestroy", NVJPEG, "int nvjpegJpegStreamDestroy(void *jpeg_stream)"},
	{"nvjpegJpegStreamParse", NVJPEG, "int nvjpegJpegStreamParse(void *handle, const unsigned char *data, size_t length, int save_metadata, int save_stream, void *jpeg_stream)"},
	{"nvjpegJpegStreamParseHeader", NVJPEG, "int nvjpegJpegStreamParseHeader(void *handle, const unsigned char *data, size_t length, void *jpeg_stream)"},
	{"nvjpegDecodeParamsCreate", NVJPEG, "int nvjpegDecodeParamsCreate(void *handle, void **decode_params)"},
	{"nvjpegDecodeParamsDestroy", NVJPEG, "int nvjpegDecodeParamsDestroy(void *decode_params)"},
	{"nvjpegDecodeParamsSetOutputFormat", NVJPEG, "int nvjpegDecodeParamsSetOutputFormat(void *decode_params, int output_format)"},
	{"nvjpegDecodeParamsSetROI", NVJPEG, "int nvjpegDecodeParamsSetROI(void *decode_params, int offset_x, int offset_y, int roi_width, int roi_height)"},
	{"nvjpegDecoderCreate", NVJPEG, "int nvjpegDecoderCreate(void *handle, int implementation, void **decoder)"},
	{"nvjpegDecoderDestroy", NVJPEG, "int nvjpegDecoderDestroy(void *decoder)"},
	{"nvjpegDecoderStateCreate", NVJPEG, "int nvjpegDecoderStateCreate(void *handle, void *decoder, void **decoder_state)"},
	{"nvjpegBufferPinnedCreate", NVJPEG, "int nvjpegBufferPinnedCreate(void *handle, void *pinned_allocator, void **buffer)"},
	{"nvjpegBufferPinnedDestroy", NVJPEG, "int nvjpegBufferPinnedDestroy(void *buffer)"},
	{"nvjpegBufferDeviceCreate", NVJPEG, "int nvjpegBufferDeviceCreate(void *handle, void *device_allocator, void **buffer)"},
	{"nvjpegBufferDeviceDestroy", NVJPEG, "int nvjpegBufferDeviceDestroy(void *buffer)"},
	{"nvjpegStateAttachPinnedBuffer", NVJPEG, "int nvjpegStateAttachPinnedBuffer(void *decoder_state, void *pinned_buffer)"},
	{"nvjpegStateAttachDeviceBuffer", NVJPEG, "int nvjpegStateAttachDeviceBuffer(void *decoder_state, void *device_buffer)"},
	{"nvjpegDecodeJpegHost", NVJPEG, "int nvjpegDecodeJpegHost(void *handle, void *decoder, void *decoder_state, void *decode_params, void *jpeg_stream)"},
	{"nvjpegDecodeJpegTransferToDevice", NVJPEG, "int nvjpegDecodeJpegTransferToDevice(void *handle, void *decoder, void *decoder_state, void *jpeg_stream, void *stream)"},
	{"nvjpegDecodeJpegDevice", NVJPEG, "int nvjpegDecodeJpegDevice(void *handle, void *decoder, void *decoder_state, struct faster_nvjpeg_image *destination, void *stream)"},
	{"cudaRuntimeGetVersion", Runtime, "int cudaRuntimeGetVersion(int *version)"},
	{"cudaGetDeviceCount", Runtime, "int cudaGetDeviceCount(int *count)"},
	{"cudaSetDevice", Runtime, "int cudaSetDevice(int device)"},
	{"cudaGetErrorString", Runtime, "const char * cudaGetErrorString(int error)"},
	{"cudaMalloc", Runtime, "int cudaMalloc(void **ptr, size_t size)"},
	{"cudaFree", Runtime, "int cudaFree(void *ptr)"},
	{"cudaHostAlloc", Runtime, "int cudaHostAlloc(void **ptr, size_t size, unsigned int flags)"},
	{"cudaFreeHost", Runtime, "int cudaFreeHost(void *ptr)"},
	{"cudaStreamCreateWithFlags", Runtime, "int cudaStreamCreateWithFlags(void **stream, unsigned int flags)"},
	{"cudaStreamDestroy", Runtime, "int cudaStreamDestroy(void *stream)"},
	{"cudaStreamSynchronize", Runtime, "int cudaStreamSynchronize(void *stream)"},
	{"cudaMemcpyAsync", Runtime, "int cudaMemcpyAsync(void *dst, const void *src, size_t count, int kind, void *stream)"},
	{"cudaEventCreateWithFlags", Runtime, "int cudaEventCreateWithFlags(void **event, unsigned int flags)"},
	{"cudaEventDestroy", Runtime, "int cudaEventDestroy(void *event)"},
	{"cudaEventRecord", Runtime, "int cudaEventRecord(void *event, void *stream)"},
	{"cudaStreamWaitEvent", Runtime, "int cudaStreamWaitEvent(void *stream, void *event, unsigned int flags)"},
	{"cudaIpcGetMemHandle", Runtime, "int cudaIpcGetMemHandle(void *handle, void *dev_ptr)"},
}

// Const is one enum value the decoder passes (consts.h).
type Const struct {
	Name  string
	Value int
}

// Consts lists consts.h, in its order: nvjpeg.h's nvjpegStatus_t,
// nvjpegBackend_t, nvjpegChromaSubsampling_t and nvjpegOutputFormat_t,
// driver_types.h's
// cudaMemcpyKind, cudaHostAllocDefault, cudaStreamNonBlocking and
// cudaEventDisableTiming.
var Consts = []Const{
	{"NVJPEG_STATUS_SUCCESS", 0},
	{"NVJPEG_STATUS_JPEG_NOT_SUPPORTED", 4},
	{"NVJPEG_BACKEND_HYBRID", 1},
	{"NVJPEG_BACKEND_HARDWARE", 3},
	{"NVJPEG_CSS_444", 0},
	{"NVJPEG_OUTPUT_RGBI", 5},
	{"cudaSuccess", 0},
	{"cudaMemcpyHostToDevice", 1},
	{"cudaMemcpyDeviceToHost", 2},
	{"cudaHostAllocDefault", 0},
	{"cudaStreamNonBlocking", 1},
	{"cudaEventDisableTiming", 2},
}
