package pipeline

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the platforms that
// have them (x86-64, arm64 with 4 KiB base pages).
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the whole huge pages inside b with
// transparent huge pages when they are first touched (MADV_HUGEPAGE, which
// the kernel's default "madvise" mode honours). A batch arena of 224x224
// float32 rows is 38 MB: 9,400 page faults of 4 KiB, each zeroing its page,
// against 19 of 2 MiB. The first batches of every loader paid them (about
// 0.2 s of system time on this VM, where a fault costs several µs). Only
// advice: b stays Go memory, and an error (no THP in this kernel) changes
// nothing.
func adviseHuge(b []byte) {
	if len(b) < 2*hugePage {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := int((start+hugePage-1)&^(hugePage-1) - start) // where the first whole huge page begins
	unix.Madvise(b[lo:lo+(len(b)-lo)&^(hugePage-1)], unix.MADV_HUGEPAGE)
}
