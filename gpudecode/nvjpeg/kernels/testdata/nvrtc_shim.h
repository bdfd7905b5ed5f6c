/* nvrtc_shim.h: CUDA's device-side names as plain C++, so that g++ can
 * parse what NVRTC compiles (source_test.go). Not CUDA: only the names. */
#define __global__
#define __device__
#define __forceinline__ inline
struct faster_dim3 { unsigned x, y, z; };
static faster_dim3 blockIdx, blockDim, gridDim, threadIdx;
