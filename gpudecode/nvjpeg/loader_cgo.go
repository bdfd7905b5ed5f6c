//go:build cgo

package nvjpeg

/*
#include "dl.h"
*/
import "C"

import (
	"unsafe"

	"github.com/faster-training/faster/internal/dl"
	"github.com/faster-training/faster/train/cuda"
)

// libSet is nvJPEG and the runtime, opened once, each by the first soname
// that opens with all its symbols (internal/dl, over dl.c's table), those of
// a CUDA major the driver runs first (cuda.ForDriver).
var libSet = dl.Set[Attempt, Library]{
	N:       len(libraries),
	Sonames: func(l int) []string { return cuda.ForDriver(libraries[l].sonames, cuda.DriverVersion()) },
	Table:   dl.CTable(unsafe.Pointer(C.faster_nvj_dl_sym)),
}

// load opens both libraries (once): every attempt, and a *LoadError
// unless both opened.
func load() ([]Attempt, error) {
	attempts, opened := libSet.Open()
	if !opened[NVJPEG] || !opened[Runtime] {
		return attempts, &LoadError{Attempts: attempts}
	}
	return attempts, nil
}

// resolved is the loader's symbol table, in dl.c's order.
func resolved() (names []string, libs []Library, ok []bool) { return dl.Symbols[Library](libSet.Table) }
