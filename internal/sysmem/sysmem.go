// Package sysmem tells how much memory this process may use: the
// machine's memory, or its control group's limit when that is lower (a
// container's memory limit is the memory it has).
package sysmem

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Fallback is what Total returns when nothing can be read.
const Fallback = 16 << 30

// Total is min(MemTotal, the cgroup's memory limit) in bytes, or Fallback
// when neither can be read.
func Total() int64 {
	return total(os.ReadFile)
}

// total reads through read, so tests can give it any /proc and /sys.
func total(read func(string) ([]byte, error)) int64 {
	n := int64(0)
	if b, err := read("/proc/meminfo"); err == nil {
		n = memTotal(b)
	}
	for _, p := range []string{
		"/sys/fs/cgroup/memory.max",                   // v2
		"/sys/fs/cgroup/memory/memory.limit_in_bytes", // v1
	} {
		b, err := read(p)
		if err != nil {
			continue
		}
		lim, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64) // "max" (v2) fails: no limit
		if err == nil && lim > 0 && (n == 0 || lim < n) {
			n = lim // v1's "no limit" is a huge number, above MemTotal
		}
	}
	if n <= 0 {
		return Fallback
	}
	return n
}

// memTotal parses the MemTotal line of /proc/meminfo, 0 if absent.
func memTotal(b []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 || kb > 1<<43 {
			return 0
		}
		return kb << 10
	}
	return 0
}
