//go:build cgo

package cuda

/*
#include "dl.h"
#include "calls.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/faster-training/faster/internal/dl"
)

// libSet is every library, opened once, each by the first soname that opens
// with all its symbols (internal/dl, over dl.c's table).
var libSet = dl.Set[Attempt, Library]{
	N:       len(libraries),
	Sonames: func(l int) []string { return libraries[l].sonames },
	Table:   dl.CTable(unsafe.Pointer(C.faster_dl_sym)),
	Names:   func(s string) []string { return exportNames[s] },
}

// load opens the libraries (once) and returns every attempt.
func load() []Attempt { a, _ := libSet.Open(); return a }

// loaded reports whether l opened.
func loaded(l Library) bool { return libSet.Opened(l) }

// resolved is the loader's symbol table: name, library, and whether it
// resolved, in dl.c's order.
func resolved() (names []string, libs []Library, ok []bool) { return dl.Symbols[Library](libSet.Table) }

// requiredMissing returns the load error when a required library did not open.
func requiredMissing() error {
	a := load()
	for l, lib := range libraries {
		if lib.required && !loaded(Library(l)) {
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

// nvrtcVersion is the opened NVRTC's version, "major.minor".
func nvrtcVersion() string {
	var a, b C.int
	C.call_nvrtcVersion(&a, &b)
	return fmt.Sprintf("%d.%d", a, b)
}
