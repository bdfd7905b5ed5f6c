//go:build cgo

package cuda

/*
#include "dl.h"
#include "calls.h"

// driver_version: cuDriverGetVersion's, once the driver opened; else 0.
static int driver_version(void) {
	int v = 0;
	if (faster_p_cuDriverGetVersion == 0 || faster_p_cuDriverGetVersion(&v) != 0)
		return 0;
	return v;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/faster-training/faster/internal/dl"
)

// libSet is every library, opened once, each by the first soname that opens
// with all its symbols (internal/dl, over dl.c's table), the driver first,
// so the toolkit's libraries are tried in the order its version runs
// (sonamesFor).
var libSet = dl.Set[Attempt, Library]{
	N:       len(libraries),
	Sonames: func(l int) []string { return sonamesFor(Library(l), int(C.driver_version())) },
	Table:   dl.CTable(unsafe.Pointer(C.faster_dl_sym)),
	Names:   func(s string) []string { return exportNames[s] },
}

// DriverVersion is the CUDA driver's version as cuDriverGetVersion gives
// it (12020 is 12.2; no cuInit needed), 0 without a driver. It opens the
// libraries (once).
func DriverVersion() int {
	load()
	return int(C.driver_version())
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
