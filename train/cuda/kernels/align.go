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

// param is one parameter of a KERNEL: its C text (spaces folded) and, for
// a pointer, the type it points at ("" for a value).
type param struct{ text, pointee string }

// params returns each KERNEL's name and parameters in Source, in its order.
func params() (names []string, ps [][]param) { return paramsOf(Source) }

// paramsOf returns each KERNEL's name and parameters in src, in its order.
func paramsOf(src string) (names []string, ps [][]param) {
	for _, m := range kernelParams.FindAllStringSubmatch(src, -1) {
		var k []param
		for _, p := range strings.Split(m[2], ",") {
			q := param{text: strings.Join(strings.Fields(p), " ")}
			if strings.Contains(p, "*") {
				f := strings.Fields(strings.ReplaceAll(p, "*", " * "))
				if q.pointee = f[0]; q.pointee == "const" && len(f) > 1 {
					q.pointee = f[1]
				}
			}
			k = append(k, q)
		}
		names, ps = append(names, m[1]), append(ps, k)
	}
	return names, ps
}

// aligns is AlignsOf(Source).
var aligns = sync.OnceValue(func() map[string][]int { return AlignsOf(Source) })

// AlignsOf is, for each KERNEL of a source in this package's dialect
// (kernels.cu's; nvJPEG's resize.cu shares it), each parameter's alignment
// in bytes: its element's size for a pointer (1 for a type elemSize lacks,
// which TestAlignTypes refuses for kernels.cu), 0 for a value.
func AlignsOf(src string) map[string][]int {
	t := map[string][]int{}
	names, ps := paramsOf(src)
	for i, name := range names {
		a := make([]int, len(ps[i]))
		for j, p := range ps[i] {
			if p.pointee != "" {
				a[j] = max(elemSize[p.pointee], 1)
			}
		}
		t[name] = a
	}
	return t
}

// CheckAlign returns an error when a pointer among args (one 8-byte slot
// per parameter of kernel name, as launched) is not aligned to the size of
// what it points at. On the GPU such a read or write faults
// (CUDA_ERROR_MISALIGNED_ADDRESS) and the context is lost; the CPU reads
// it as it is, so the backend checks before it launches, on both.
func CheckAlign(name string, args []uint64) error {
	return CheckAligned(name, aligns()[name], args)
}

// CheckAligned is CheckAlign with kernel name's alignments given (an
// entry of AlignsOf; nil, an unknown kernel, checks nothing: the launch
// itself says so).
func CheckAligned(name string, align []int, args []uint64) error {
	for i, s := range align {
		if i < len(args) && s > 1 && args[i] != 0 && args[i]%uint64(s) != 0 {
			return fmt.Errorf("kernels: %s: argument %d at %#x is not %d-byte aligned (on the GPU: CUDA_ERROR_MISALIGNED_ADDRESS)", name, i, args[i], s)
		}
	}
	return nil
}
