//go:build cgo

package dl

import (
	"strings"
	"testing"
	"unsafe"
)

// With the real dlopen: libm opens and resolves; an absent soname fails
// with dlerror's words; a library lacking a symbol is refused by name.
func TestLoadLibm(t *testing.T) {
	ft := &fakeTable{
		names: []string{"cos", "sin", "cos", "faster_dl_no_such_symbol"},
		libs:  []int{0, 0, 1, 1},
		slots: make([]unsafe.Pointer, 4),
	}
	sonames := [][]string{
		{"libm.so.6"},
		{"libfaster-absent.so.1", "libm.so.6"},
	}
	set := &Set[Attempt[lib3], lib3]{N: len(sonames), Sonames: func(l int) []string { return sonames[l] }, Table: ft.table}
	attempts, opened := set.Open()
	if len(attempts) != 3 || len(opened) != 2 {
		t.Fatalf("attempts %v, opened %v", attempts, opened)
	}
	if a := attempts[0]; a.Lib != 0 || a.Soname != "libm.so.6" || a.Err != "" || !opened[0] {
		t.Errorf("libm: %+v, opened %v", a, opened[0])
	}
	if a := attempts[1]; a.Lib != 1 || !strings.HasPrefix(a.Err, "libfaster-absent.so.1: cannot open shared object file") {
		t.Errorf("absent: %+v, want dlerror's words", a)
	}
	if a := attempts[2]; a.Soname != "libm.so.6" || a.Err != "faster_dl_no_such_symbol missing" || opened[1] {
		t.Errorf("lacking a symbol: %+v, opened %v", a, opened[1])
	}
	if ft.slots[0] == nil || ft.slots[1] == nil || ft.slots[0] == ft.slots[1] {
		t.Errorf("cos %p, sin %p: want two functions", ft.slots[0], ft.slots[1])
	}
	if ft.slots[2] != nil || ft.slots[3] != nil {
		t.Errorf("library 1 lacks a symbol, yet slots %p %p kept", ft.slots[2], ft.slots[3])
	}
}
