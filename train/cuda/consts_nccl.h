/* consts_nccl.h: the enum values of NCCL that the GPU machine passes, as
 * nccl.h defines them:
 *   FASTER_CUDA_CONST(name, value)
 * consts.go's ncclConsts has the same (a test checks); probe/probe.cpp
 * static_asserts each against nccl.h. */
/* nccl.h (NCCL 2.28): ncclResult_t, ncclDataType_t, ncclRedOp_t */
FASTER_CUDA_CONST(ncclSuccess, 0)
FASTER_CUDA_CONST(ncclFloat32, 7)
FASTER_CUDA_CONST(ncclSum, 0)
