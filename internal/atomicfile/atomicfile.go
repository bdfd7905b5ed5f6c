// Package atomicfile writes files so that a reader never sees a partial
// one: bytes go to a temporary file in the same directory, which is synced
// and renamed over the final name on Commit. An interrupted writer leaves
// at most a hidden temporary file (".NAME.tmp-*"), never a file under the
// final name that looks complete.
//
// The temporary name keeps at most the first MaxTempBase bytes of the final
// name (cut at a UTF-8 boundary), so it fits in NAME_MAX (255 bytes) for
// every legal final name: a 250-byte name is written like a short one.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// File is a file being written atomically. Write to it, then Commit or
// Abort; Abort after Commit is a no-op, so `defer f.Abort()` is safe.
type File struct {
	*os.File
	final string
	done  bool
}

// TempPrefix starts the names of temporary files, so cleanups can find them.
const TempPrefix = "."

// MaxTempBase is how many bytes of the final name a temporary name keeps:
// with the prefix, ".tmp-" and a random suffix of at most 20 digits it stays
// far below NAME_MAX (255 bytes).
const MaxTempBase = 64

// TempStem returns the start of a temporary name for the final base name
// base: TempPrefix, base cut to MaxTempBase bytes, and ".tmp-". A writer
// appends a random suffix and creates the file with O_EXCL in the final
// name's directory; IsTemp recognises the result.
func TempStem(base string) string {
	if len(base) > MaxTempBase {
		n := MaxTempBase
		for n > 0 && !utf8.RuneStart(base[n]) {
			n--
		}
		base = base[:n]
	}
	return TempPrefix + base + ".tmp-"
}

// Create starts writing path atomically, with permission perm.
func Create(path string, perm os.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, TempStem(base)+"*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{File: f, final: path}, nil
}

// Commit syncs the data and renames the file to its final name.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("atomicfile: %s: already committed or aborted", f.final)
	}
	f.done = true
	tmp := f.Name()
	if err := f.Sync(); err != nil {
		f.File.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.File.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, f.final); err != nil {
		os.Remove(tmp)
		return err
	}
	// Make the rename durable.
	if d, err := os.Open(filepath.Dir(f.final)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Abort discards the temporary file. It is a no-op after Commit.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.Name())
}

// WriteFile writes data to path atomically.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// IsTemp reports whether name (a base name) is one of this package's
// temporary files.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, TempPrefix) && strings.Contains(name, ".tmp-")
}

// CheckDir reports why a file cannot be created at path: its folder is
// missing, is not a folder, or refuses a new file (a temporary one is
// created and removed, which also catches a read-only mount). Checked
// before a long run, so that the run does not fail at its first save.
func CheckDir(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("folder %s does not exist", dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	}
	f, err := os.CreateTemp(dir, ".faster-write-check-*")
	if err != nil {
		return fmt.Errorf("folder %s is not writable: %w", dir, errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}
