/* dl.h: the loader of dl.c. */
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

/* faster_dl_open opens library lib by soname (dlopen, RTLD_NOW) and
 * resolves its symbols. It returns 0 when every symbol resolved; otherwise
 * 1 with why in report (cap bytes, NUL-terminated): dlerror's words, or
 * the symbols missing (then none of the library's is kept). Not safe for
 * concurrent calls (Go calls it under a sync.Once). */
int faster_dl_open(int lib, const char *soname, char *report, size_t cap);

/* The symbol table, for the test that compares it with Go's. */
int faster_dl_nsym(void);
const char *faster_dl_sym_name(int i);
int faster_dl_sym_lib(int i);
int faster_dl_sym_resolved(int i);
