package cuda

import (
	"fmt"
	"strconv"
	"strings"
)

// The cuBLAS handle's workspace is the backend's own device memory, given
// to it once when the machine opens (cublasSetWorkspace_v2, after
// cublasSetStream_v2, which would put the handle back on cuBLAS's pool).
// Left to its pool, cuBLAS allocates when it first needs memory: inside a
// captured step that is an allocation in the capture (before CUDA 12.2 a
// cudaMalloc, refused or made anew by every capture; since, a
// stream-ordered one in the graph), and outside the step memory check. A
// workspace of our own is allocated before any capture, counted, and
// the same for every replay, as PyTorch does (its CublasHandlePool).

// blasWorkspaceEnv is the variable cuBLAS and PyTorch read for the
// workspace's configuration: ":SIZE:COUNT" pairs, SIZE in KiB.
const blasWorkspaceEnv = "CUBLAS_WORKSPACE_CONFIG"

// blasWorkspaceBytes is the workspace for a device of architecture arch
// ("sm_90"): with config (CUBLAS_WORKSPACE_CONFIG) set, the sum of its
// pairs' SIZE KiB × COUNT, as PyTorch sizes it (":4096:8", the value its
// deterministic mode asks for, is 32 MiB); else what cublasSetWorkspace's
// documentation recommends, 32 MiB from Hopper (sm_90) on and 4 MiB
// before. A config that is not such pairs is an error naming it.
func blasWorkspaceBytes(arch, config string) (int, error) {
	if config == "" {
		major := 0
		if s, ok := strings.CutPrefix(arch, "sm_"); ok && len(s) >= 2 {
			major, _ = strconv.Atoi(s[:len(s)-1])
		}
		if major >= 9 {
			return 32 << 20, nil
		}
		return 4 << 20, nil
	}
	bad := fmt.Errorf("cuda: %s=%q: want \":SIZE:COUNT\" pairs, SIZE in KiB (\":4096:8\")", blasWorkspaceEnv, config)
	f := strings.Split(config, ":")
	if f[0] != "" || len(f) < 3 || len(f)%2 != 1 {
		return 0, bad
	}
	total := 0
	for i := 1; i < len(f); i += 2 {
		size, err1 := strconv.Atoi(f[i])
		count, err2 := strconv.Atoi(f[i+1])
		if err1 != nil || err2 != nil || size <= 0 || count <= 0 || size > 1<<22 || count > 1<<10 {
			return 0, bad
		}
		total += size << 10 * count
	}
	return total, nil
}

// cublasStatusName is cuBLAS's name of a cublasStatus_t, for errors.
func cublasStatusName(code int) string {
	switch code {
	case cublasStatusNotInitialized:
		return "CUBLAS_STATUS_NOT_INITIALIZED"
	case cublasStatusAllocFailed:
		return "CUBLAS_STATUS_ALLOC_FAILED"
	case cublasStatusInvalidValue:
		return "CUBLAS_STATUS_INVALID_VALUE"
	case cublasStatusArchMismatch:
		return "CUBLAS_STATUS_ARCH_MISMATCH"
	case cublasStatusMappingError:
		return "CUBLAS_STATUS_MAPPING_ERROR"
	case cublasStatusExecutionFailed:
		return "CUBLAS_STATUS_EXECUTION_FAILED"
	case cublasStatusInternalError:
		return "CUBLAS_STATUS_INTERNAL_ERROR"
	case cublasStatusNotSupported:
		return "CUBLAS_STATUS_NOT_SUPPORTED"
	case cublasStatusLicenseError:
		return "CUBLAS_STATUS_LICENSE_ERROR"
	case cublasStatusSuccess:
		return "CUBLAS_STATUS_SUCCESS"
	}
	return "cublasStatus"
}
