package pipeline

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// A batch arena larger than two huge pages is advised MADV_HUGEPAGE: the
// mapping holding it carries the "hg" flag in /proc/self/smaps (the
// advice, which does not depend on the kernel finding free huge pages).
func TestArenaAdvisedHuge(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("no transparent huge pages in this kernel")
	}
	const rowBytes = 3 << 20
	fill := func(row []byte, x int) error { row[0] = byte(x); return nil }
	n := 0
	for b, err := range Batch(FromSlice(ints(4)), 4).Arena(rowBytes, fill).Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(b.Data))) + uintptr(len(b.Data)/2)
		flags, err := vmFlags(addr)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(" "+flags+" ", " hg ") {
			t.Errorf("the arena's mapping (address %#x) has VmFlags %q, without hg (MADV_HUGEPAGE)", addr, flags)
		}
		b.Release()
	}
	if n != 1 {
		t.Fatalf("%d batches, want 1", n)
	}
}

// vmFlags returns the VmFlags line of the mapping that holds addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if k, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); k == 2 { // a mapping's header line
			in = lo <= addr && addr < hi
			continue
		}
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("no mapping holds %#x", addr)
}
