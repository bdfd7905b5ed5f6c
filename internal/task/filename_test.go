package task

import (
	"strings"
	"testing"
)

// TestParseFileName: a task file's name is read back as FileStem wrote
// it, names of other kinds are not task files, and numbers outside
// 0 <= i < n <= MaxCount are an error naming the file.
func TestParseFileName(t *testing.T) {
	exts := []string{".json", ".progress.json"}
	for _, c := range []struct{ i, n int }{{0, 1}, {3, 10}, {99_999, MaxCount}} {
		for _, ext := range exts {
			i, n, got, ok, err := ParseFileName("d", FileStem(c.i, c.n)+ext, exts...)
			if err != nil || !ok || i != c.i || n != c.n || got != ext {
				t.Errorf("%s%s: %d of %d %q ok %v err %v", FileStem(c.i, c.n), ext, i, n, got, ok, err)
			}
		}
	}
	for _, name := range []string{"task-00000-of-00002.lock", "task-0-of-2.json", "x-task-00000-of-00002.json", "task-00000-of-00002.json.tmp"} {
		if _, _, _, ok, err := ParseFileName("d", name, exts...); ok || err != nil {
			t.Errorf("%s: ok %v err %v, want another kind of file", name, ok, err)
		}
	}
	for _, name := range []string{"task-00000-of-1099511627776.json", "task-00000-of-00000.json", "task-00002-of-00002.json", "task-00000-of-99999999999999999999999.json"} {
		_, _, _, ok, err := ParseFileName("d", name, exts...)
		if ok || err == nil || !strings.Contains(err.Error(), "d/"+name) {
			t.Errorf("%s: ok %v err %v, want an error naming d/%s", name, ok, err, name)
		}
	}
}
