package loader

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/faster-training/faster/internal/atomicfile"
)

// ErrQuarantinePath marks a quarantine path that cannot hold the list (a
// directory, a FIFO, a device): a mistake in how a command was called.
var ErrQuarantinePath = errors.New("not a regular file")

// QuarantineFile is the list of skipped samples (--quarantine FILE): the
// file is created when the run starts, so that a path that cannot be
// written fails before the run and not after it, and the list is written
// into it whole, atomically, when the run ends (however it ends). The one
// writer of the quarantine format: a JSON line per sample (source.Damage:
// path, offset, key, reason), used by train, serve and bench load alike.
type QuarantineFile struct {
	path string
	f    *atomicfile.File
}

// CreateQuarantine creates the quarantine file at path; the list appears
// there only on Commit. A path that names something other than a regular
// file is refused (errors.Is ErrQuarantinePath): the list is renamed into
// place at the end, and a directory there would lose it after the whole
// run.
func CreateQuarantine(path string) (*QuarantineFile, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("--quarantine %s: %w (%s): name a file to write the list to", path, ErrQuarantinePath, fi.Mode().Type())
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--quarantine %s: %w", path, err)
	}
	return &QuarantineFile{path: path, f: f}, nil
}

// Commit writes list and puts the file in place. Its error must fail the
// run: a lost list would be a silent loss.
func (q *QuarantineFile) Commit(list []BadSample) error {
	w := bufio.NewWriter(q.f)
	for _, s := range list {
		line, _ := json.Marshal(s)
		w.Write(append(line, '\n'))
	}
	err := w.Flush()
	if err == nil {
		err = q.f.Commit()
	}
	if err != nil {
		return fmt.Errorf("--quarantine %s: %w", q.path, err)
	}
	return nil
}

// Abort removes the file being written unless Commit put it in place.
func (q *QuarantineFile) Abort() { q.f.Abort() }
