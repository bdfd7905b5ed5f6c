package testenv

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// AdvisedHuge reports whether the mapping holding addr was advised
// MADV_HUGEPAGE: its VmFlags in /proc/self/smaps carry "hg" (the advice
// itself, whether or not the kernel found free huge pages). It skips the
// test on a kernel without transparent huge pages.
func AdvisedHuge(t testing.TB, addr uintptr) bool {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("no transparent huge pages in this kernel")
	}
	flags, err := vmFlags(addr)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(" "+flags+" ", " hg ")
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
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no mapping holds %#x", addr)
}
