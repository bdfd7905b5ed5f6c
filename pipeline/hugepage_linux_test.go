package pipeline

import (
	"context"
	"testing"
	"unsafe"

	"github.com/faster-training/faster/internal/testenv"
)

// A batch arena larger than two huge pages is advised MADV_HUGEPAGE.
func TestArenaAdvisedHuge(t *testing.T) {
	const rowBytes = 3 << 20
	fill := func(row []byte, x int) error { row[0] = byte(x); return nil }
	n := 0
	for b, err := range Batch(FromSlice(ints(4)), 4).Arena(rowBytes, fill).Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(b.Data))) + uintptr(len(b.Data)/2)
		if !testenv.AdvisedHuge(t, addr) {
			t.Errorf("the arena's mapping (address %#x) is not advised MADV_HUGEPAGE", addr)
		}
		b.Release()
	}
	if n != 1 {
		t.Fatalf("%d batches, want 1", n)
	}
}
