// Package dl opens shared libraries by soname with dlopen and resolves a
// package's table of C function pointers with dlsym: the one loader of
// the CUDA packages (train/cuda, gpudecode/nvjpeg), which keep only their
// declarations, their Library enum and the table of slots their C
// wrappers call through.
//
// What it owns:
//   - Set: a package's libraries, opened once (Open, Opened): each in
//     order by the first of its sonames that opens with every symbol the
//     table lists for it (dlopen with RTLD_NOW | RTLD_LOCAL, no path: the
//     system's search, LD_LIBRARY_PATH included). A library that lacks a
//     symbol is closed and none of its slots is kept. Every try is an
//     Attempt: the soname and, when it failed, why: dlerror's words, or
//     the symbols missing ("cuGetErrorName missing; cuInit missing").
//   - Table and CTable: the symbol table, read from the caller's C.
//   - Symbols: the table as the loader left it (name, library,
//     resolved), for the tests that compare a package's C table with its
//     Go one.
//
// The table stays in the caller's C (its X-macro over its decls.h):
//
//	void **faster_x_sym(int i, const char **name, int *lib); // NULL past the end
//
// and the caller's Go names its libraries:
//
//	var libSet = dl.Set[Attempt, Library]{
//		N:       len(libraries),
//		Sonames: func(l int) []string { return libraries[l].sonames },
//		Table:   dl.CTable(unsafe.Pointer(C.faster_x_sym)),
//	}
//	attempts, opened := libSet.Open()
//
// where Attempt is the caller's own struct of Attempt's fields (its Lib
// its own Library enum), so its errors keep their own type and words.
//
// The loader writes the slots, which live in C memory and receive C
// function addresses only (no Go pointer is stored in C), once, under the
// Set's sync.Once: callers call through the slots only after Open.
//
// Without cgo there is no dlopen: every soname fails ("built without
// cgo: no dlopen") and no library opens.
package dl
