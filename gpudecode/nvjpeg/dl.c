//go:build cgo

/* dl.c: libnvjpeg and libcudart opened with dlopen by soname and their
 * functions resolved with dlsym into faster_nvj_p_<symbol> (decls.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "dl.h"

#define FASTER_NVJ_DECL(lib, ret, name, params) ret(*faster_nvj_p_##name) params;
#include "decls.h"
#undef FASTER_NVJ_DECL

struct sym {
	int lib;
	const char *name;
	void **slot;
};

static struct sym syms[] = {
#define FASTER_NVJ_DECL(lib, ret, name, params) {FASTER_NVJ_LIB_##lib, #name, (void **)&faster_nvj_p_##name},
#include "decls.h"
#undef FASTER_NVJ_DECL
};

enum { NSYM = sizeof syms / sizeof syms[0] };

int faster_nvj_dl_nsym(void) { return NSYM; }
const char *faster_nvj_dl_sym_name(int i) { return syms[i].name; }
int faster_nvj_dl_sym_lib(int i) { return syms[i].lib; }
int faster_nvj_dl_sym_resolved(int i) { return *syms[i].slot != NULL; }

int faster_nvj_dl_open(int lib, const char *soname, char *report, size_t cap) {
	report[0] = 0;
	dlerror();
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		snprintf(report, cap, "%s", why ? why : "dlopen failed");
		return 1;
	}
	int bad = 0;
	for (int i = 0; i < NSYM; i++) {
		if (syms[i].lib != lib)
			continue;
		dlerror();
		void *f = dlsym(h, syms[i].name);
		if (!f) {
			size_t len = strlen(report);
			if (len + 1 < cap)
				snprintf(report + len, cap - len, "%s%s missing", len ? "; " : "", syms[i].name);
			bad = 1;
			continue;
		}
		*syms[i].slot = f;
	}
	if (bad) { /* keep none of a library that lacks a symbol */
		for (int i = 0; i < NSYM; i++)
			if (syms[i].lib == lib)
				*syms[i].slot = NULL;
		dlclose(h);
	}
	return bad;
}
