// probe.cpp: PREPARED, NOT YET RUN. Checks decls.h and consts.h, the cuda
// backend's own declarations, against the real CUDA headers of the GPU
// machine: every symbol must be declared there, with the same number of
// parameters and, for the return and each parameter, the same ABI class
// (pointer; integer or enum of the same size; floating point of the same
// size). A handle declared void * against CUcontext, an enum declared int:
// the same class, as intended. consts.h's and consts_dnn.h's values and
// gpu.h's copy of cuDNN's AlgoPerf layout are static_asserted too. Any
// mismatch is a compile error naming the symbol. Built by probe.sh with g++ -std=c++17 and the headers found
// there; never part of `go build` (no Go file in this directory).
#include <cstddef>
#include <cstdio>
#include <type_traits>

#ifdef FASTER_PROBE_DRIVER
#include <cuda.h>
#endif
#ifdef FASTER_PROBE_CUDART
#include <cuda_runtime_api.h>
#endif
#ifdef FASTER_PROBE_NVRTC
#include <nvrtc.h>
#endif
#ifdef FASTER_PROBE_CUBLAS
#include <cublas_v2.h>
#endif
#ifdef FASTER_PROBE_CUBLASLT
#include <cublasLt.h>
#endif
#ifdef FASTER_PROBE_CUDNN
#include <cudnn.h>
#endif
#ifdef FASTER_PROBE_NCCL
#include <nccl.h>
#endif

template <class T> constexpr int abi() {
	if constexpr (std::is_void_v<T>)
		return 0;
	else if constexpr (std::is_pointer_v<T>)
		return 1000 + int(sizeof(T));
	else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>)
		return 2000 + int(sizeof(T));
	else if constexpr (std::is_floating_point_v<T>)
		return 3000 + int(sizeof(T));
	else
		return 4000 + int(sizeof(T)); // a struct by value: never what decls.h says
}

template <class R1, class... A1, class R2, class... A2>
constexpr bool same_abi(R1 (*)(A1...), R2 (*)(A2...)) {
	if constexpr (sizeof...(A1) != sizeof...(A2))
		return false;
	else
		return abi<R1>() == abi<R2>() && ((abi<A1>() == abi<A2>()) && ... && true);
}

// Our declarations as pointer types.
#define FASTER_CUDA_DECL(lib, ret, name, params) typedef ret(*ours_##name) params;
#include "../decls.h"
#undef FASTER_CUDA_DECL

// The checks run inside namespace faster_probe, where a name the loader
// resolves unlike the header's plain declaration is shadowed by the
// function the loader gets: cublas_api.h adds, in C++ only, an inline
// cublasGemmEx overload taking the compute type as a cudaDataType beside
// the exported one (taking &::cublasGemmEx would be ambiguous); CUDA 12.8
// added cuEventElapsedTime_v2, which the loader takes first (13.0's
// cuda.h declares it alone) and cuEventElapsedTime where it is absent.
namespace faster_probe {
// Each a null pointer of the function's type: only its type is read (no
// symbol referenced, nothing to link).
#ifdef FASTER_PROBE_CUBLAS
constexpr decltype(static_cast<cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
						   const void *, cudaDataType, int, const void *, cudaDataType, int, const void *,
						   void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t)>(&::cublasGemmEx))
	cublasGemmEx = nullptr;
#endif
#if defined(FASTER_PROBE_DRIVER) && CUDA_VERSION >= 12080
constexpr decltype(&::cuEventElapsedTime_v2) cuEventElapsedTime = nullptr;
#endif

#define CHECK(name) static_assert(same_abi(ours_##name(nullptr), std::decay_t<decltype(name)>(nullptr)), "decls.h declares " #name " unlike the header");
#define SKIP(name)

#ifdef FASTER_PROBE_DRIVER
#define CHECK_DRIVER CHECK
#else
#define CHECK_DRIVER SKIP
#endif
#ifdef FASTER_PROBE_CUDART
#define CHECK_CUDART CHECK
#else
#define CHECK_CUDART SKIP
#endif
#ifdef FASTER_PROBE_NVRTC
#define CHECK_NVRTC CHECK
#else
#define CHECK_NVRTC SKIP
#endif
#ifdef FASTER_PROBE_CUBLAS
#define CHECK_CUBLAS CHECK
#else
#define CHECK_CUBLAS SKIP
#endif
#ifdef FASTER_PROBE_CUBLASLT
#define CHECK_CUBLASLT CHECK
#else
#define CHECK_CUBLASLT SKIP
#endif
#ifdef FASTER_PROBE_CUDNN
#define CHECK_CUDNN CHECK
#else
#define CHECK_CUDNN SKIP
#endif
#ifdef FASTER_PROBE_NCCL
#define CHECK_NCCL CHECK
#else
#define CHECK_NCCL SKIP
#endif

#define FASTER_CUDA_DECL(lib, ret, name, params) CHECK_##lib(name)
#include "../decls.h"
#undef FASTER_CUDA_DECL
} // namespace faster_probe

// consts.h: every value as the headers define it (driver and NVRTC).
#if defined(FASTER_PROBE_DRIVER) && defined(FASTER_PROBE_NVRTC)
#define FASTER_CUDA_CONST(name, value) static_assert(int(name) == value, "consts.h: " #name " is not " #value);
#include "../consts.h"
#undef FASTER_CUDA_CONST
#endif

// consts_dnn.h: cuDNN's, cuBLAS's and the stream flag's values.
#if defined(FASTER_PROBE_DRIVER) && defined(FASTER_PROBE_CUBLAS) && defined(FASTER_PROBE_CUDNN)
#define FASTER_CUDA_CONST(name, value) static_assert(int(name) == value, "consts_dnn.h: " #name " is not " #value);
#include "../consts_dnn.h"
#undef FASTER_CUDA_CONST
#endif

// consts_nccl.h: NCCL's values; the by-value unique id's size.
#ifdef FASTER_PROBE_NCCL
#define FASTER_CUDA_CONST(name, value) static_assert(int(name) == value, "consts_nccl.h: " #name " is not " #value);
#include "../consts_nccl.h"
#undef FASTER_CUDA_CONST
static_assert(sizeof(ncclUniqueId) == sizeof(faster_nccl_id), "decls.h: faster_nccl_id is not the size of ncclUniqueId");
#endif

// gpu.h's faster_conv_perf is the layout of cuDNN's three AlgoPerf structs.
#ifdef FASTER_PROBE_CUDNN
#include <cstddef>
#include "../gpu.h"
#define PERF_LAYOUT(T)                                                                                                 \
	static_assert(sizeof(T) == sizeof(faster_conv_perf), "gpu.h: faster_conv_perf is not the size of " #T);        \
	static_assert(offsetof(T, algo) == offsetof(faster_conv_perf, algo), #T ".algo moved");                        \
	static_assert(offsetof(T, status) == offsetof(faster_conv_perf, status), #T ".status moved");                  \
	static_assert(offsetof(T, time) == offsetof(faster_conv_perf, time), #T ".time moved");                        \
	static_assert(offsetof(T, memory) == offsetof(faster_conv_perf, memory), #T ".memory moved");                  \
	static_assert(offsetof(T, determinism) == offsetof(faster_conv_perf, determinism), #T ".determinism moved");   \
	static_assert(offsetof(T, mathType) == offsetof(faster_conv_perf, math_type), #T ".mathType moved");
PERF_LAYOUT(cudnnConvolutionFwdAlgoPerf_t)
PERF_LAYOUT(cudnnConvolutionBwdDataAlgoPerf_t)
PERF_LAYOUT(cudnnConvolutionBwdFilterAlgoPerf_t)
#endif

int main() {
	int n = 0, checked = 0;
#define FASTER_CUDA_DECL(lib, ret, name, params) n++;
#include "../decls.h"
#undef FASTER_CUDA_DECL
#define SKIP_COUNT(name)
#define FASTER_CUDA_DECL(lib, ret, name, params) checked += PROBE_ON_##lib;
#ifdef FASTER_PROBE_DRIVER
#define PROBE_ON_DRIVER 1
#else
#define PROBE_ON_DRIVER 0
#endif
#ifdef FASTER_PROBE_CUDART
#define PROBE_ON_CUDART 1
#else
#define PROBE_ON_CUDART 0
#endif
#ifdef FASTER_PROBE_NVRTC
#define PROBE_ON_NVRTC 1
#else
#define PROBE_ON_NVRTC 0
#endif
#ifdef FASTER_PROBE_CUBLAS
#define PROBE_ON_CUBLAS 1
#else
#define PROBE_ON_CUBLAS 0
#endif
#ifdef FASTER_PROBE_CUBLASLT
#define PROBE_ON_CUBLASLT 1
#else
#define PROBE_ON_CUBLASLT 0
#endif
#ifdef FASTER_PROBE_CUDNN
#define PROBE_ON_CUDNN 1
#else
#define PROBE_ON_CUDNN 0
#endif
#ifdef FASTER_PROBE_NCCL
#define PROBE_ON_NCCL 1
#else
#define PROBE_ON_NCCL 0
#endif
#include "../decls.h"
#undef FASTER_CUDA_DECL
	std::printf("probe: %d of %d declarations checked against the headers; all agree\n", checked, n);
#ifdef FASTER_PROBE_DRIVER
	std::printf("probe: cuda.h CUDA_VERSION %d\n", int(CUDA_VERSION));
#endif
#ifdef FASTER_PROBE_CUBLAS
	std::printf("probe: cuBLAS %d.%d.%d\n", int(CUBLAS_VER_MAJOR), int(CUBLAS_VER_MINOR), int(CUBLAS_VER_PATCH));
#endif
#ifdef FASTER_PROBE_CUDNN
	std::printf("probe: cuDNN %d\n", int(CUDNN_VERSION));
#endif
	return 0;
}
