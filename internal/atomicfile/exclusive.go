package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists is returned by CommitNew when the final name already exists.
var ErrExists = errors.New("already exists")

// CommitNew is Commit that never replaces: the file takes its final name
// only if nothing has it, atomically (a hard link of the synced temporary
// file, which fails when the name exists, also over NFS; then the
// temporary name is removed). When the name exists the file is discarded
// and the error wraps ErrExists and fs.ErrExist.
func (f *File) CommitNew() error {
	if f.done {
		return fmt.Errorf("atomicfile: %s: already committed or aborted", f.final)
	}
	f.done = true
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Sync(); err != nil {
		f.File.Close()
		return err
	}
	if err := f.File.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp, f.final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w (%w)", f.final, ErrExists, fs.ErrExist)
		}
		return err
	}
	if d, err := os.Open(filepath.Dir(f.final)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// WriteNew writes data to path as WriteFile does, but only if path does
// not exist yet (see CommitNew).
func WriteNew(path string, data []byte, perm os.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.CommitNew()
}
