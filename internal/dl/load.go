package dl

import (
	"strings"
	"sync"
	"unsafe"
)

// Attempt is one soname tried for library Lib: Err is "" when it opened
// with every symbol, else why not (dlerror's words, or the symbols
// missing, "; "-separated). L is the caller's library enum. A caller may
// keep its own type of the same fields (Set returns that type).
type Attempt[L ~int] struct {
	Lib    L
	Soname string
	Err    string
}

// Table is a package's symbol table, read by index from 0 until ok is
// false: entry i's symbol name, the index of its library (into the
// Set), and the C function-pointer slot the symbol resolves into.
type Table func(i int) (name string, lib int, slot *unsafe.Pointer, ok bool)

// handle is one opened library.
type handle interface {
	sym(name string) unsafe.Pointer // nil when absent
	close()
}

// opener is dlopen: a handle, or why not.
type opener func(soname string) (handle, string)

// Set is a package's libraries, opened once: N of them, library l by the
// first of Sonames(l) that opens with every symbol Table lists for l,
// those symbols written into their slots. A soname that opens but lacks
// a symbol is closed and none of its library's slots is kept. A is the
// caller's attempt type: Attempt[L], or its own struct of the same
// fields.
type Set[A ~struct {
	Lib    L
	Soname string
	Err    string
}, L ~int] struct {
	N int
	// Sonames lists library l's sonames, tried in order. It is called
	// for l once the libraries before it were opened (or not), so it may
	// order them by what those report (train/cuda: the driver's version).
	Sonames func(l int) []string
	Table   Table
	// Names, when set, gives the names a symbol may be exported under,
	// tried in order, where a toolkit renamed it (CUDA 12.8's
	// cuEventElapsedTime_v2 beside the first); nil or empty: its own.
	Names func(symbol string) []string

	once     sync.Once
	attempts []A
	opened   []bool
}

// Open loads the set on its first call and returns what that found:
// every attempt in order and which libraries opened (N of them); every
// call the same slices, not to be modified. Safe for concurrent use.
func (s *Set[A, L]) Open() (attempts []A, opened []bool) {
	s.once.Do(func() { s.attempts, s.opened = load[A](s.N, s.Sonames, s.Table, s.Names, open) })
	return s.attempts, s.opened
}

// Opened reports whether library l opened (Open first).
func (s *Set[A, L]) Opened(l L) bool {
	_, opened := s.Open()
	return opened[l]
}

func load[A ~struct {
	Lib    L
	Soname string
	Err    string
}, L ~int](n int, sonames func(l int) []string, t Table, names func(string) []string, open opener) (attempts []A, opened []bool) {
	opened = make([]bool, n)
	for l := range n {
		for _, so := range sonames(l) {
			why := resolve(l, so, t, names, open)
			attempts = append(attempts, A(Attempt[L]{Lib: L(l), Soname: so, Err: why}))
			if why == "" {
				opened[l] = true
				break
			}
		}
	}
	return attempts, opened
}

// resolve opens soname and fills library l's slots, each symbol from the
// first of its names (names; nil: its own) the library exports: "" when
// every symbol resolved, else why not (then every slot of l is nil and
// the library closed).
func resolve(l int, soname string, t Table, names func(string) []string, open opener) string {
	h, why := open(soname)
	if h == nil {
		if why == "" {
			why = "dlopen failed"
		}
		return why
	}
	var missing []string
	for i := 0; ; i++ {
		name, lib, slot, ok := t(i)
		if !ok {
			break
		}
		if lib != l {
			continue
		}
		tries := []string{name}
		if names != nil {
			if alt := names(name); len(alt) > 0 {
				tries = alt
			}
		}
		var f unsafe.Pointer
		for _, n := range tries {
			if f = h.sym(n); f != nil {
				break
			}
		}
		if f == nil {
			missing = append(missing, strings.Join(tries, " or ")+" missing")
			continue
		}
		*slot = f
	}
	if len(missing) == 0 {
		return ""
	}
	for i := 0; ; i++ { // keep none of a library that lacks a symbol
		_, lib, slot, ok := t(i)
		if !ok {
			break
		}
		if lib == l {
			*slot = nil
		}
	}
	h.close()
	return strings.Join(missing, "; ")
}

// Symbols is t as the loader sees it, in order: each symbol's name, its
// library, and whether its slot holds a function.
func Symbols[L ~int](t Table) (names []string, libs []L, resolved []bool) {
	for i := 0; ; i++ {
		name, lib, slot, ok := t(i)
		if !ok {
			return names, libs, resolved
		}
		names = append(names, name)
		libs = append(libs, L(lib))
		resolved = append(resolved, *slot != nil)
	}
}
