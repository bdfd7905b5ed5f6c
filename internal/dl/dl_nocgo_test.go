//go:build !cgo

package dl

import (
	"testing"
	"unsafe"
)

// Without cgo every soname fails, saying why, and nothing opens.
func TestLoadNoCgo(t *testing.T) {
	ft := &fakeTable{names: []string{"cos"}, libs: []int{0}, slots: make([]unsafe.Pointer, 1)}
	set := &Set[Attempt[lib3], lib3]{N: 1, Sonames: func(int) []string { return []string{"libm.so.6"} }, Table: ft.table}
	attempts, opened := set.Open()
	if len(attempts) != 1 || attempts[0].Err != noDlopen || opened[0] || ft.slots[0] != nil {
		t.Errorf("attempts %v, opened %v, slots %v", attempts, opened, ft.slots)
	}
	if _, _, _, ok := CTable(nil)(0); ok {
		t.Error("CTable has an entry without cgo")
	}
}
