/* dl.h: the function pointers of dl.c, their table, and the types and
 * values nvj.c passes. */
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

/* faster_nvj_dl_sym is the symbol table, for internal/dl's loader and
 * the test that compares it with Go's Decls: entry i's name and library,
 * and the slot the loader writes its address into (NULL past the end). */
void **faster_nvj_dl_sym(int i, const char **name, int *lib);
