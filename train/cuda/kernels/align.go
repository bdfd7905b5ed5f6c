package kernels

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// kernelParams matches a KERNEL definition and its parameter list.
var kernelParams = regexp.MustCompile(`(?ms)^KERNEL (\w+)\(([^)]*)\)\s*\{`)

// elemSize is the bytes of the element a pointer parameter of type typ
// points at; 1 for void (read as the flags say: no alignment known).
var elemSize = map[string]int{"double": 8, "i64": 8, "u64": 8, "float": 4, "i32": 4, "u32": 4, "int": 4, "u16": 2, "u8": 1, "void": 1}

// aligns is, for each kernel of Source, each parameter's alignment in
// bytes: its element's size for a pointer, 0 for a value.
var aligns = sync.OnceValue(func() map[string][]int {
	t := map[string][]int{}
	for _, m := range kernelParams.FindAllStringSubmatch(Source, -1) {
		var a []int
		for _, p := range strings.Split(m[2], ",") {
			f := strings.Fields(strings.ReplaceAll(p, "*", " * "))
			n := 0
			if len(f) > 0 && strings.Contains(p, "*") {
				typ := f[0]
				if typ == "const" && len(f) > 1 {
					typ = f[1]
				}
				if n = elemSize[typ]; n == 0 {
					n = 1
				}
			}
			a = append(a, n)
		}
		t[m[1]] = a
	}
	return t
})

// CheckAlign returns an error when a pointer among args (one 8-byte slot
// per parameter of kernel name, as launched) is not aligned to the size of
// what it points at. On the GPU such a read or write faults
// (CUDA_ERROR_MISALIGNED_ADDRESS) and the context is lost; the CPU reads
// it as it is, so the backend checks before it launches, on both.
func CheckAlign(name string, args []uint64) error {
	a, ok := aligns()[name]
	if !ok {
		return nil // an unknown kernel: the launch itself says so
	}
	for i, s := range a {
		if i < len(args) && s > 1 && args[i] != 0 && args[i]%uint64(s) != 0 {
			return fmt.Errorf("kernels: %s: argument %d at %#x is not %d-byte aligned (on the GPU: CUDA_ERROR_MISALIGNED_ADDRESS)", name, i, args[i], s)
		}
	}
	return nil
}
