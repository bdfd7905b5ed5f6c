package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
)

// IsTempOf reports whether name (a base name) is a temporary file Create
// made for the final base name base: TempStem(base) and the decimal
// suffix os.CreateTemp puts for its "*".
func IsTempOf(name, base string) bool {
	suffix, ok := strings.CutPrefix(name, TempStem(base))
	if !ok || suffix == "" {
		return false
	}
	for _, r := range suffix {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// RemoveStale removes the temporary files that writers of path killed
// before Commit or Abort (kill -9, a power cut) left beside it, and returns
// their names. Only the holder of a lock on path may call it: another
// writer's temporary would be taken from under it. A final name longer
// than MaxTempBase shares its temporaries' stem with the other names of
// that prefix, so none of them is removed; nor is anything but a regular
// file.
func RemoveStale(path string) (removed []string, err error) {
	dir, base := filepath.Split(path)
	if len(base) > MaxTempBase || base == "" {
		return nil, nil
	}
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !IsTempOf(e.Name(), base) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}
