//go:build cgo && !faster_serveonly

package onednn

import (
	"testing"
	"unsafe"

	"github.com/faster-training/faster/internal/testenv"
)

// A oneDNN buffer of 4 MiB or more is advised MADV_HUGEPAGE (the first
// step's activations fault 2 MiB pages, not 4 KiB ones).
func TestBuffersAdvisedHuge(t *testing.T) {
	if _, err := newStream(1); err != nil {
		t.Fatal(err)
	}
	big, err := newMD([]int{64, 32, 32, 32}, false) // 8 MiB of f32
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMem(big)
	if err != nil {
		t.Fatal(err)
	}
	defer m.free()
	f := m.floats(64 * 32 * 32 * 32)
	addr := uintptr(unsafe.Pointer(&f[len(f)/2]))
	if !testenv.AdvisedHuge(t, addr) {
		t.Errorf("an 8 MiB oneDNN buffer (address %#x) is not advised MADV_HUGEPAGE", addr)
	}
}
