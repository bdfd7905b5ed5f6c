package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxFileSize is the largest file read whole as one sample (an image
// file, a tar member, a record): 256 MiB, above any photograph a model
// trains on. A larger one is a bad sample (ErrBadFile), refused before
// anything is allocated.
const MaxFileSize = 256 << 20

// ErrBadFile marks a path that cannot be a sample whatever its bytes: not
// a regular file (a FIFO, a device, a directory, a socket), a dangling
// symlink or a symlink loop, or a file larger than MaxFileSize. Only
// regular files are read as data; errors.Is(err, ErrBadFile) holds for
// every *FileError, so a skip-or-stop policy treats them like damaged
// samples.
var ErrBadFile error = &kindError{"not a readable sample file"}

// FileError is a path refused as data, and why.
type FileError struct {
	Path   string
	Reason string // "not a regular file (named pipe)", "5368709120 bytes, above the 268435456-byte cap", …
	Err    error  // the cause from the os package, if any
}

func (e *FileError) Error() string { return e.Path + ": " + e.Reason }

// Is reports ErrBadFile as matching.
func (e *FileError) Is(target error) bool { return target == ErrBadFile }

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// OpenFile opens path for reading if it is a regular file and returns it
// with its size. It never blocks on a FIFO: the file is opened
// non-blocking and checked with fstat before any read.
func OpenFile(path string) (*os.File, int64, error) {
	f, err := openNonblock(path)
	for try := 0; err != nil; try++ {
		var pe *fs.PathError
		if errors.As(err, &pe) && isLinkError(pe.Err) {
			return nil, 0, &FileError{Path: path, Reason: "symlink loop or too many links", Err: err}
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, 0, err
		}
		lst, lerr := os.Lstat(path)
		switch {
		case lerr != nil:
			return nil, 0, err
		case lst.Mode()&fs.ModeSymlink != 0:
			return nil, 0, &FileError{Path: path, Reason: "dangling symlink", Err: err}
		case try == 2:
			return nil, 0, err
		}
		// Missing when opened, there now: another process renamed it
		// into place between the two calls (not a dangling symlink).
		f, err = openNonblock(path)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, &FileError{Path: path, Reason: "not a regular file (" + modeName(st.Mode()) + ")"}
	}
	if err := clearNonblock(f); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// ReadFile reads a whole regular file of at most max bytes (MaxFileSize
// if max is 0): a larger one is a *FileError, refused before it is read.
func ReadFile(path string, max int64) ([]byte, error) {
	return readFileWith(path, max, func(n int) []byte { return make([]byte, n) })
}

// readFileInto is ReadFile into a pooled Buffer (nil with an error).
func readFileInto(path string, max int64) ([]byte, *Buffer, error) {
	var buf *Buffer
	data, err := readFileWith(path, max, func(n int) []byte {
		buf = GetBuffer(n)
		return buf.B[:n]
	})
	if err != nil {
		buf.Release()
		return nil, nil, err
	}
	return data, buf, nil
}

// readFileWith is ReadFile, the file's bytes read into alloc(size).
func readFileWith(path string, max int64, alloc func(int) []byte) ([]byte, error) {
	if max <= 0 {
		max = MaxFileSize
	}
	f, size, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > max {
		return nil, &FileError{Path: path, Reason: fmt.Sprintf("%d bytes, above the %d-byte cap on one sample", size, max)}
	}
	b := alloc(int(size))
	n, err := io.ReadFull(f, b)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return b[:n], nil // shrank since the stat: what is there
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Grown since the stat? Read at most up to the cap.
	var one [1]byte
	if m, _ := f.Read(one[:]); m > 0 {
		return nil, &FileError{Path: path, Reason: "file grows while read"}
	}
	return b, nil
}

func modeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	case m&fs.ModeIrregular != 0:
		return "irregular file"
	}
	return m.Type().String()
}
