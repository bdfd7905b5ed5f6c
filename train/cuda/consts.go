package cuda

// The enum values the backend passes, as consts.h lists them (a test
// checks; probe/probe.cpp checks them against cuda.h).
const (
	attrMaxThreadsPerBlock = 1  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	attrSMs                = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	attrMaxThreadsPerSM    = 39 // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR
	attrCCMajor            = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrCCMinor            = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	cudaSuccess            = 0  // CUDA_SUCCESS
	nvrtcSuccess           = 0  // NVRTC_SUCCESS
)

// consts maps consts.h's names to the values above.
var consts = map[string]int{
	"CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK":          attrMaxThreadsPerBlock,
	"CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT":           attrSMs,
	"CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR": attrMaxThreadsPerSM,
	"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR":       attrCCMajor,
	"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR":       attrCCMinor,
	"CUDA_SUCCESS":  cudaSuccess,
	"NVRTC_SUCCESS": nvrtcSuccess,
}

// The enum values of cuDNN, cuBLAS and the driver's streams that the GPU
// machine passes, as consts_dnn.h lists them with the header each comes
// from (a test checks; probe/probe.cpp checks them against cudnn.h and
// cublas_v2.h). gpu.c uses the same values through consts_dnn.h.
const (
	cudnnStatusSuccess          = 0  // CUDNN_STATUS_SUCCESS (cudnn_graph.h)
	cudnnTensorNCHW             = 0  // CUDNN_TENSOR_NCHW (cudnn_graph.h)
	cudnnTensorNHWC             = 1  // CUDNN_TENSOR_NHWC (cudnn_graph.h): channels_last
	cudnnDataFloat              = 0  // CUDNN_DATA_FLOAT (cudnn_graph.h)
	cudnnDefaultMath            = 0  // CUDNN_DEFAULT_MATH (cudnn_graph.h): TF32 allowed for fp32, PyTorch's cudnn.allow_tf32 default
	cudnnFMAMath                = 3  // CUDNN_FMA_MATH (cudnn_graph.h): no tensor cores (allow_tf32 off)
	cudnnDataHalf               = 2  // CUDNN_DATA_HALF (cudnn_graph.h): fp16 tensors
	cudnnDataBFloat16           = 9  // CUDNN_DATA_BFLOAT16 (cudnn_graph.h): bf16 tensors
	cudnnTensorOpMath           = 1  // CUDNN_TENSOR_OP_MATH (cudnn_graph.h): tensor cores, as PyTorch sets for half convolutions
	cudnnCrossCorrelation       = 1  // CUDNN_CROSS_CORRELATION (cudnn_cnn.h)
	cublasStatusSuccess         = 0  // CUBLAS_STATUS_SUCCESS (cublas_api.h)
	cublasStatusNotInitialized  = 1  // CUBLAS_STATUS_NOT_INITIALIZED (cublas_api.h)
	cublasStatusAllocFailed     = 3  // CUBLAS_STATUS_ALLOC_FAILED (cublas_api.h)
	cublasStatusInvalidValue    = 7  // CUBLAS_STATUS_INVALID_VALUE (cublas_api.h)
	cublasStatusArchMismatch    = 8  // CUBLAS_STATUS_ARCH_MISMATCH (cublas_api.h)
	cublasStatusMappingError    = 11 // CUBLAS_STATUS_MAPPING_ERROR (cublas_api.h)
	cublasStatusExecutionFailed = 13 // CUBLAS_STATUS_EXECUTION_FAILED (cublas_api.h)
	cublasStatusInternalError   = 14 // CUBLAS_STATUS_INTERNAL_ERROR (cublas_api.h)
	cublasStatusNotSupported    = 15 // CUBLAS_STATUS_NOT_SUPPORTED (cublas_api.h)
	cublasStatusLicenseError    = 16 // CUBLAS_STATUS_LICENSE_ERROR (cublas_api.h)
	cublasOpN                   = 0  // CUBLAS_OP_N (cublas_api.h)
	cublasOpT                   = 1  // CUBLAS_OP_T (cublas_api.h)
	cublasDefaultMath           = 0  // CUBLAS_DEFAULT_MATH (cublas_api.h): fp32, PyTorch's matmul.allow_tf32 default (off)
	cuStreamNonBlocking         = 1  // CU_STREAM_NON_BLOCKING (cuda.h)
	cublasCompute32F            = 68 // CUBLAS_COMPUTE_32F (cublas_api.h): float accumulation
	cublasGemmDefault           = -1 // CUBLAS_GEMM_DEFAULT (cublas_api.h)
	cudaR32F                    = 0  // CUDA_R_32F (library_types.h)
	cudaR16F                    = 2  // CUDA_R_16F (library_types.h)
	cudaR16BF                   = 14 // CUDA_R_16BF (library_types.h)
	cuCaptureModeThread         = 1  // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL (cuda.h)
	cuEventDisableTiming        = 2  // CU_EVENT_DISABLE_TIMING (cuda.h): the cheapest event, for ordering only
)

// NCCL's values, as consts_nccl.h lists them (a test checks; probe.cpp
// checks them against nccl.h).
const (
	ncclSuccess = 0 // ncclSuccess (nccl.h: ncclResult_t)
	ncclFloat32 = 7 // ncclFloat32 (nccl.h: ncclDataType_t)
	ncclSum     = 0 // ncclSum (nccl.h: ncclRedOp_t)
)

// ncclConsts maps consts_nccl.h's names to the values above.
var ncclConsts = map[string]int{"ncclSuccess": ncclSuccess, "ncclFloat32": ncclFloat32, "ncclSum": ncclSum}

// dnnConsts maps consts_dnn.h's names to the values above.
var dnnConsts = map[string]int{
	"CUDNN_STATUS_SUCCESS":                cudnnStatusSuccess,
	"CUDNN_TENSOR_NCHW":                   cudnnTensorNCHW,
	"CUDNN_TENSOR_NHWC":                   cudnnTensorNHWC,
	"CUDNN_DATA_FLOAT":                    cudnnDataFloat,
	"CUDNN_DEFAULT_MATH":                  cudnnDefaultMath,
	"CUDNN_FMA_MATH":                      cudnnFMAMath,
	"CUDNN_CROSS_CORRELATION":             cudnnCrossCorrelation,
	"CUBLAS_STATUS_SUCCESS":               cublasStatusSuccess,
	"CUBLAS_STATUS_NOT_INITIALIZED":       cublasStatusNotInitialized,
	"CUBLAS_STATUS_ALLOC_FAILED":          cublasStatusAllocFailed,
	"CUBLAS_STATUS_INVALID_VALUE":         cublasStatusInvalidValue,
	"CUBLAS_STATUS_ARCH_MISMATCH":         cublasStatusArchMismatch,
	"CUBLAS_STATUS_MAPPING_ERROR":         cublasStatusMappingError,
	"CUBLAS_STATUS_EXECUTION_FAILED":      cublasStatusExecutionFailed,
	"CUBLAS_STATUS_INTERNAL_ERROR":        cublasStatusInternalError,
	"CUBLAS_STATUS_NOT_SUPPORTED":         cublasStatusNotSupported,
	"CUBLAS_STATUS_LICENSE_ERROR":         cublasStatusLicenseError,
	"CUBLAS_OP_N":                         cublasOpN,
	"CUBLAS_OP_T":                         cublasOpT,
	"CUBLAS_DEFAULT_MATH":                 cublasDefaultMath,
	"CU_STREAM_NON_BLOCKING":              cuStreamNonBlocking,
	"CUDNN_DATA_HALF":                     cudnnDataHalf,
	"CUDNN_DATA_BFLOAT16":                 cudnnDataBFloat16,
	"CUDNN_TENSOR_OP_MATH":                cudnnTensorOpMath,
	"CUBLAS_COMPUTE_32F":                  cublasCompute32F,
	"CUBLAS_GEMM_DEFAULT":                 cublasGemmDefault,
	"CUDA_R_32F":                          cudaR32F,
	"CUDA_R_16F":                          cudaR16F,
	"CUDA_R_16BF":                         cudaR16BF,
	"CU_STREAM_CAPTURE_MODE_THREAD_LOCAL": cuCaptureModeThread,
	"CU_EVENT_DISABLE_TIMING":             cuEventDisableTiming,
}
