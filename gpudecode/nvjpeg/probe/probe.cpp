// probe.cpp: PREPARED, NOT YET RUN. Checks gpudecode/nvjpeg's own
// declarations (decls.h, consts.h, dl.h's struct faster_nvjpeg_image)
// against the real nvjpeg.h and cuda_runtime_api.h of the GPU machine:
// every symbol declared there with the same parameter count and, for the
// return and each parameter, the same ABI class (pointer; integer or enum
// of the same size; floating point of the same size); every enum value
// equal; nvjpegImage_t laid out as ours. A mismatch is a compile error
// naming it. Built by probe.sh with nvcc's host compiler (g++) and the
// toolkit's headers; never part of `go build` (no Go file here).
#include <cstddef>
#include <cstdio>
#include <type_traits>

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

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
		return 4000 + int(sizeof(T));
}

template <class R1, class... A1, class R2, class... A2>
constexpr bool same_abi(R1 (*)(A1...), R2 (*)(A2...)) {
	if constexpr (sizeof...(A1) != sizeof...(A2))
		return false;
	else
		return abi<R1>() == abi<R2>() && ((abi<A1>() == abi<A2>()) && ... && true);
}

#include "../dl.h"

#define FASTER_NVJ_DECL(lib, ret, name, params) \
	static_assert(same_abi((ret(*) params) nullptr, &::name), "decls.h declares " #name " unlike the header");
#include "../decls.h"
#undef FASTER_NVJ_DECL

#define FASTER_NVJ_CONST(name, value) static_assert(int(name) == value, "consts.h: " #name " is not " #value);
#include "../consts.h"
#undef FASTER_NVJ_CONST

static_assert(CUDA_IPC_HANDLE_SIZE == 64 && sizeof(cudaIpcMemHandle_t) == 64,
	"cudaIpcMemHandle_t is not 64 bytes (decls.h's cudaIpcGetMemHandle, serve's IPCHandleBytes)");
static_assert(NVJPEG_MAX_COMPONENT == 4, "NVJPEG_MAX_COMPONENT is not 4");
static_assert(sizeof(nvjpegImage_t) == sizeof(faster_nvjpeg_image), "nvjpegImage_t's size");
static_assert(offsetof(nvjpegImage_t, pitch) == offsetof(faster_nvjpeg_image, pitch), "nvjpegImage_t's pitch");
static_assert(MAJOR_VERSION == 0 && MINOR_VERSION == 1, "libraryPropertyType (Probe's nvjpegGetProperty)");

int main() {
	int n = 0;
#define FASTER_NVJ_DECL(lib, ret, name, params) n++;
#include "../decls.h"
#undef FASTER_NVJ_DECL
	std::printf("probe: %d declarations, the enum values and nvjpegImage_t agree with nvjpeg.h %d.%d.%d\n", n,
		    NVJPEG_VER_MAJOR, NVJPEG_VER_MINOR, NVJPEG_VER_PATCH);
	return 0;
}
