package sysmem

import (
	"io/fs"
	"testing"
)

func TestTotal(t *testing.T) {
	const meminfo = "MemTotal:       24576000 kB\nMemFree:  100 kB\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"meminfo only", map[string]string{"/proc/meminfo": meminfo}, 24576000 << 10},
		{"v2 limit below", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "4294967296\n"}, 4 << 30},
		{"v2 no limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "max\n"}, 24576000 << 10},
		{"v1 unlimited", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 24576000 << 10},
		{"v1 limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824"}, 1 << 30},
		{"limit without meminfo", map[string]string{"/sys/fs/cgroup/memory.max": "2147483648"}, 2 << 30},
		{"garbage", map[string]string{"/proc/meminfo": "MemTotal: lots\n"}, Fallback},
		{"nothing", nil, Fallback},
	} {
		read := func(p string) ([]byte, error) {
			if s, ok := c.files[p]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		}
		if got := total(read); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if Total() <= 0 {
		t.Error("Total of this machine is not positive")
	}
}
