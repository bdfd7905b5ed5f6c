//go:build cgo

package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// faster_dlopen opens soname (RTLD_NOW | RTLD_LOCAL) into *h, or returns
// dlerror's words (malloc'd; the caller frees them). dlerror is per
// thread: it is read in the same C call as dlopen.
static char *faster_dlopen(const char *soname, void **h) {
	dlerror();
	*h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (*h)
		return NULL;
	const char *why = dlerror();
	return strdup(why ? why : "dlopen failed");
}

// faster_dl_entry reads entry i of a caller's table through its function
// sym (see CTable).
typedef void **(*faster_dl_table)(int i, const char **name, int *lib);
static void **faster_dl_entry(void *sym, int i, const char **name, int *lib) {
	return ((faster_dl_table)sym)(i, name, lib);
}
*/
import "C"

import "unsafe"

// lib is a dlopen handle.
type lib struct{ h unsafe.Pointer }

func open(soname string) (handle, string) {
	cs := C.CString(soname)
	defer C.free(unsafe.Pointer(cs))
	var h unsafe.Pointer
	if why := C.faster_dlopen(cs, &h); why != nil {
		defer C.free(unsafe.Pointer(why))
		return nil, C.GoString(why)
	}
	return lib{h}, ""
}

func (l lib) sym(name string) unsafe.Pointer {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return C.dlsym(l.h, cs)
}

func (l lib) close() { C.dlclose(l.h) }

// CTable is the Table read from a caller's C function
//
//	void **sym(int i, const char **name, int *lib); // NULL past the end
//
// given as unsafe.Pointer(C.sym): it returns entry i's slot and sets its
// name and library.
func CTable(sym unsafe.Pointer) Table {
	return func(i int) (string, int, *unsafe.Pointer, bool) {
		var name *C.char
		var lib C.int
		slot := C.faster_dl_entry(sym, C.int(i), &name, &lib)
		if slot == nil {
			return "", 0, nil, false
		}
		return C.GoString(name), int(lib), (*unsafe.Pointer)(unsafe.Pointer(slot)), true
	}
}
