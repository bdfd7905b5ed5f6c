/* dl.h: the function pointers of dl.c and their table. */
#include <stddef.h>

/* The libraries, in the order Go's libraries table lists them. */
enum {
	FASTER_LIB_DRIVER,
	FASTER_LIB_CUDART,
	FASTER_LIB_NVRTC,
	FASTER_LIB_CUBLAS,
	FASTER_LIB_CUBLASLT,
	FASTER_LIB_CUDNN,
	FASTER_LIB_NCCL,
	FASTER_NLIB
};

/* The function pointers, named faster_p_<symbol>; NULL until loaded. */
#define FASTER_CUDA_DECL(lib, ret, name, params) extern ret(*faster_p_##name) params;
#include "decls.h"
#undef FASTER_CUDA_DECL

/* faster_dl_sym is the symbol table, for internal/dl's loader and the
 * test that compares it with Go's Decls: entry i's name and library, and
 * the slot the loader writes its address into (NULL past the end). */
void **faster_dl_sym(int i, const char **name, int *lib);
