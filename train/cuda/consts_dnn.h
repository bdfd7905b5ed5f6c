/* consts_dnn.h: the enum values of cuDNN 9, cuBLAS 13 and the driver's
 * stream flags that the backend's GPU machine passes, as the headers define
 * them, each with the header it comes from:
 *   FASTER_CUDA_CONST(name, value)
 * consts.go's dnnConsts has the same (a test checks); probe/probe.cpp
 * static_asserts each against the real headers (cudnn.h, cublas_v2.h). */
/* cudnn_graph.h (cuDNN 9): cudnnStatus_t, cudnnTensorFormat_t,
 * cudnnDataType_t, cudnnMathType_t */
FASTER_CUDA_CONST(CUDNN_STATUS_SUCCESS, 0)
FASTER_CUDA_CONST(CUDNN_TENSOR_NCHW, 0)
FASTER_CUDA_CONST(CUDNN_TENSOR_NHWC, 1)
FASTER_CUDA_CONST(CUDNN_DATA_FLOAT, 0)
FASTER_CUDA_CONST(CUDNN_DEFAULT_MATH, 0)
FASTER_CUDA_CONST(CUDNN_FMA_MATH, 3)
FASTER_CUDA_CONST(CUDNN_DATA_HALF, 2)
FASTER_CUDA_CONST(CUDNN_DATA_BFLOAT16, 9)
FASTER_CUDA_CONST(CUDNN_TENSOR_OP_MATH, 1)
/* cudnn_cnn.h (cuDNN 9): cudnnConvolutionMode_t */
FASTER_CUDA_CONST(CUDNN_CROSS_CORRELATION, 1)
/* cublas_api.h (CUDA 13): cublasStatus_t, cublasOperation_t, cublasMath_t */
FASTER_CUDA_CONST(CUBLAS_STATUS_SUCCESS, 0)
FASTER_CUDA_CONST(CUBLAS_OP_N, 0)
FASTER_CUDA_CONST(CUBLAS_OP_T, 1)
FASTER_CUDA_CONST(CUBLAS_DEFAULT_MATH, 0)
/* cublas_api.h (CUDA 13): cublasComputeType_t, cublasGemmAlgo_t */
FASTER_CUDA_CONST(CUBLAS_COMPUTE_32F, 68)
FASTER_CUDA_CONST(CUBLAS_GEMM_DEFAULT, -1)
/* library_types.h (CUDA 13): cudaDataType_t */
FASTER_CUDA_CONST(CUDA_R_32F, 0)
FASTER_CUDA_CONST(CUDA_R_16F, 2)
FASTER_CUDA_CONST(CUDA_R_16BF, 14)
/* cuda.h (CUDA 13): CUstream_flags */
FASTER_CUDA_CONST(CU_STREAM_NON_BLOCKING, 1)
/* cuda.h (CUDA 13): CUstreamCaptureMode */
FASTER_CUDA_CONST(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 1)
/* cuda.h (CUDA 13): CUevent_flags */
FASTER_CUDA_CONST(CU_EVENT_DISABLE_TIMING, 2)
