//go:build !cgo

package dl

import "unsafe"

// noDlopen is why every soname fails in a build without cgo.
const noDlopen = "built without cgo: no dlopen"

func open(string) (handle, string) { return nil, noDlopen }

// CTable is the empty Table: without cgo there is no C table to read.
func CTable(unsafe.Pointer) Table {
	return func(int) (string, int, *unsafe.Pointer, bool) { return "", 0, nil, false }
}
