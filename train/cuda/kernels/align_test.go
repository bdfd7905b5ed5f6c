package kernels

import (
	"slices"
	"strings"
	"testing"
)

// TestAligns: each kernel's parameters, read from kernels.cu, give their
// alignments; CheckAlign refuses a pointer off its element's size, and
// takes nil pointers, values and void pointers as they are.
func TestAligns(t *testing.T) {
	a := aligns()
	if len(a) != len(Names()) {
		t.Fatalf("%d kernels' alignments, %d kernels", len(a), len(Names()))
	}
	for name, want := range map[string][]int{
		"cast_f32_f16": {4, 2, 0},                         // const float *in, u16 *out, i64 n
		"ce_sums":      {4, 0, 8},                         // const float *rowstat, i32 n, double *sums
		"fill_f32":     {4, 0, 0},                         // float *v, i64 n, float value
		"bn_apply":     {1, 1, 4, 4, 8, 4, 2, 0, 0, 0, 0}, // x and y are void *
	} {
		if got := a[name]; !slices.Equal(got, want) {
			t.Errorf("%s: alignments %v, want %v", name, got, want)
		}
	}
	if err := CheckAlign("ce_sums", []uint64{0x1000, 7, 0x2004}); err == nil || !strings.Contains(err.Error(), "argument 2") {
		t.Errorf("ce_sums with double *sums at 0x2004: %v, want argument 2 refused", err)
	}
	if err := CheckAlign("cast_f32_f16", []uint64{0x1002, 0x2000, 3}); err == nil || !strings.Contains(err.Error(), "argument 0") {
		t.Errorf("cast_f32_f16 with float *in at 0x1002: %v, want argument 0 refused", err)
	}
	for _, ok := range []struct {
		name string
		args []uint64
	}{
		{"cast_f32_f16", []uint64{0x1004, 0x2002, 3}}, // u16 at 2
		{"ce_sums", []uint64{0x1000, 7, 0}},           // nil
		{"bn_apply", []uint64{0x1001, 0x2003, 0x10, 0x20, 0x40, 0, 0, 5, 6, 7, 8}},
		{"no_such_kernel", []uint64{1}},
	} {
		if err := CheckAlign(ok.name, ok.args); err != nil {
			t.Errorf("%s %#x: %v", ok.name, ok.args, err)
		}
	}
}

// TestAlignTypes: every pointer parameter of kernels.cu points at a type
// elemSize knows, so none is checked as void by mistake.
func TestAlignTypes(t *testing.T) {
	names, ps := params()
	for i, name := range names {
		for _, p := range ps[i] {
			if _, ok := elemSize[p.pointee]; p.pointee != "" && !ok {
				t.Errorf("kernel %s: parameter %q: element type %s has no size in elemSize", name, p.text, p.pointee)
			}
		}
	}
}
