//go:build cgo

package nvjpeg

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "dl.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

var (
	loadOnce sync.Once
	attempts []Attempt
	opened   [2]bool
)

// load opens both libraries once, each by the first soname that opens
// with all its symbols.
func load() ([]Attempt, error) {
	loadOnce.Do(func() {
		buf := (*C.char)(C.malloc(1024))
		defer C.free(unsafe.Pointer(buf))
		for l, lib := range libraries {
			for _, so := range lib.sonames {
				cs := C.CString(so)
				bad := C.faster_nvj_dl_open(C.int(l), cs, buf, 1024)
				C.free(unsafe.Pointer(cs))
				a := Attempt{Lib: Library(l), Soname: so}
				if bad != 0 {
					a.Err = C.GoString(buf)
				}
				attempts = append(attempts, a)
				if bad == 0 {
					opened[l] = true
					break
				}
			}
		}
	})
	if !opened[NVJPEG] || !opened[Runtime] {
		return attempts, &LoadError{Attempts: attempts}
	}
	return attempts, nil
}

// resolved is the loader's symbol table, in dl.c's order.
func resolved() (names []string, libs []Library, ok []bool) {
	for i := range int(C.faster_nvj_dl_nsym()) {
		names = append(names, C.GoString(C.faster_nvj_dl_sym_name(C.int(i))))
		libs = append(libs, Library(C.faster_nvj_dl_sym_lib(C.int(i))))
		ok = append(ok, C.faster_nvj_dl_sym_resolved(C.int(i)) != 0)
	}
	return
}
