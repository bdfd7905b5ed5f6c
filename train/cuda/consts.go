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
