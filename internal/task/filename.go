package task

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// FileStem is the stem of task i of n's files in a split job's parts
// folder: "task-00003-of-00010".
func FileStem(i, n int) string { return fmt.Sprintf("task-%05d-of-%05d", i, n) }

var fileName = regexp.MustCompile(`^task-(\d{5,})-of-(\d{5,})(\..+)$`)

// ParseFileName reads the name of a file in the parts folder dir,
// FileStem(i, n) followed by one of exts (".json", ".lock", …): ok is
// false for a name of another kind; err names a task file whose numbers
// are outside 0 <= i < n <= MaxCount (a stray
// "task-00000-of-1099511627776.json" once made a merge allocate by its
// count, and "-of-00000" merged no task at all).
func ParseFileName(dir, name string, exts ...string) (i, n int, ext string, ok bool, err error) {
	m := fileName.FindStringSubmatch(name)
	if m == nil || !slices.Contains(exts, m[3]) {
		return 0, 0, "", false, nil
	}
	i, err1 := strconv.Atoi(m[1])
	n, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || n < 1 || n > MaxCount || i >= n {
		num := func(d string) string {
			if d = strings.TrimLeft(d, "0"); d == "" {
				return "0"
			}
			return d
		}
		return 0, 0, "", false, fmt.Errorf("%s: not a task file of this build (task %s of %s: want 0 <= task < count <= %d); remove it", filepath.Join(dir, name), num(m[1]), num(m[2]), MaxCount)
	}
	return i, n, m[3], true, nil
}
