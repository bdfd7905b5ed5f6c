/* dl.h: the loader of dl.c and the calls of nvj.c. */
#include <stddef.h>

/* nvjpegImage_t, as nvjpeg.h declares it (probe.cpp checks the layout). */
struct faster_nvjpeg_image {
	unsigned char *channel[4];
	size_t pitch[4];
};

/* The libraries, in the order Go's libraries table lists them. */
enum { FASTER_NVJ_LIB_NVJPEG, FASTER_NVJ_LIB_CUDART, FASTER_NVJ_NLIB };

/* The function pointers, named faster_nvj_p_<symbol>; NULL until loaded. */
#define FASTER_NVJ_DECL(lib, ret, name, params) extern ret(*faster_nvj_p_##name) params;
#include "decls.h"
#undef FASTER_NVJ_DECL

/* The enum values. */
#define FASTER_NVJ_CONST(name, value) enum { FASTER_##name = value };
#include "consts.h"
#undef FASTER_NVJ_CONST

/* faster_nvj_dl_open opens library lib by soname (dlopen, RTLD_NOW) and
 * resolves its symbols: 0 when every symbol resolved; else 1 with why in
 * report (dlerror's words, or the symbols missing; none kept). Not safe
 * for concurrent calls (Go calls it under a sync.Once). */
int faster_nvj_dl_open(int lib, const char *soname, char *report, size_t cap);

/* The symbol table, for the test that compares it with Go's. */
int faster_nvj_dl_nsym(void);
const char *faster_nvj_dl_sym_name(int i);
int faster_nvj_dl_sym_lib(int i);
int faster_nvj_dl_sym_resolved(int i);
