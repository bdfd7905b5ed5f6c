/* nvrtc_shim.h: just enough of CUDA's device-side names for g++ to parse
 * GPUSource() as the C++ NVRTC compiles (TestGPUSourceIsCXX). Not CUDA:
 * it checks the language subset, not the semantics. */
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
struct faster_dim3 { unsigned x, y, z; };
extern faster_dim3 threadIdx, blockIdx, blockDim, gridDim;
void __syncthreads(void);
unsigned __float_as_uint(float);
float __uint_as_float(unsigned);
float expf(float);
float logf(float);
float fmaf(float, float, float);
double sqrt(double);
