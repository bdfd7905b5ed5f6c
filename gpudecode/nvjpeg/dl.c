//go:build cgo

/* dl.c: the function pointers faster_nvj_p_<symbol> (decls.h) and their
 * table, which internal/dl fills: it opens libnvjpeg and libcudart with
 * dlopen by soname and resolves their symbols with dlsym into these
 * slots. */
#include <stddef.h>

#include "dl.h"

#define FASTER_NVJ_DECL(lib, ret, name, params) ret(*faster_nvj_p_##name) params;
#include "decls.h"
#undef FASTER_NVJ_DECL

static const struct {
	int lib;
	const char *name;
	void **slot;
} syms[] = {
#define FASTER_NVJ_DECL(lib, ret, name, params) {FASTER_NVJ_LIB_##lib, #name, (void **)&faster_nvj_p_##name},
#include "decls.h"
#undef FASTER_NVJ_DECL
};

void **faster_nvj_dl_sym(int i, const char **name, int *lib) {
	if (i < 0 || i >= (int)(sizeof syms / sizeof syms[0]))
		return NULL;
	*name = syms[i].name;
	*lib = syms[i].lib;
	return syms[i].slot;
}
