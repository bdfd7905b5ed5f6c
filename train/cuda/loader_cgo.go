//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "dl.h"
#include "calls.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

var (
	loadOnce sync.Once
	attempts []Attempt
	opened   [len7]bool
)

const len7 = 7 // len(libraries); an array size must be constant

// load opens every library once, by the first soname that opens with all
// its symbols.
func load() []Attempt {
	loadOnce.Do(func() {
		buf := (*C.char)(C.malloc(1024))
		defer C.free(unsafe.Pointer(buf))
		for l, lib := range libraries {
			for _, so := range lib.sonames {
				cs := C.CString(so)
				bad := C.faster_dl_open(C.int(l), cs, buf, 1024)
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
	return attempts
}

// loaded reports whether l opened.
func loaded(l Library) bool { load(); return opened[l] }

// resolved is the loader's symbol table: name, library, and whether it
// resolved, in dl.c's order.
func resolved() (names []string, libs []Library, ok []bool) {
	for i := range int(C.faster_dl_nsym()) {
		names = append(names, C.GoString(C.faster_dl_sym_name(C.int(i))))
		libs = append(libs, Library(C.faster_dl_sym_lib(C.int(i))))
		ok = append(ok, C.faster_dl_sym_resolved(C.int(i)) != 0)
	}
	return
}

// requiredMissing returns the load error when a required library did not open.
func requiredMissing() error {
	a := load()
	for l, lib := range libraries {
		if lib.required && !opened[l] {
			return &LoadError{Attempts: a}
		}
	}
	return nil
}

// cuErr is the Error of a driver call, or nil.
func cuErr(call string, r C.int) error {
	if r == cudaSuccess {
		return nil
	}
	name := "unknown error"
	var s *C.char
	if C.call_cuGetErrorName(r, &s) == cudaSuccess && s != nil {
		name = C.GoString(s)
	}
	return &Error{Call: call, Code: int(r), Name: name}
}

// nvrtcErr is the Error of an NVRTC call, or nil.
func nvrtcErr(call string, r C.int) error {
	if r == nvrtcSuccess {
		return nil
	}
	return &Error{Call: call, Code: int(r), Name: C.GoString(C.call_nvrtcGetErrorString(r))}
}
