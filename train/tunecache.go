package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/internal/lockfile"
	"github.com/faster-training/faster/source"
)

// TuneCache keeps autotuning's choices across runs, as MIOpen's find-db
// does: the choice for an op's configuration on a machine, so that only the
// first run there pays for timing the candidates. Choices are kept by
// machine (the backend's description of the CPU and library it tuned on:
// what its library dispatches on) and by configuration (the op, its
// shapes, layouts, precision and thread count, as the backend spells
// them); another machine's choices are kept in the file but never served.
//
// A cache is never worth stopping a run for. The file is read by the
// data-file rules (a regular file, opened without blocking, its size
// bounded before it is read); one that cannot be read or parsed is not
// used, and Problem says why (naming the file). Choices are recorded in
// memory and written at Flush, once per run or per batch of new choices:
// the file whole, by atomic replacement, merged with what other processes
// recorded since it was read (under a lock file beside it, so that
// concurrent runs do not drop each other's entries). A file whose contents
// are damaged is replaced; one that is not a regular file, or cannot be
// read, is never written over. A backend checks a served choice against
// what it describes (that it builds, and runs the implementations it
// names) and Drops one that does not hold.
type TuneCache struct {
	path    string
	machine string

	mu      sync.Mutex
	entries map[string]TuneChoice // this machine's
	dirty   map[string]bool       // recorded or dropped since the last write
	// keep is why the file must not be written (nil: it may be);
	// failed is set once a Flush failed, so that a run warns once.
	keep   error
	failed bool
	// Problem is why the file's contents were not used (nil: read, or
	// absent).
	Problem error
}

// TuneCacheVersion is the version of the file's format.
const TuneCacheVersion = 1

// maxTuneCacheBytes bounds the file read: it holds a few hundred bytes per
// op configuration.
const maxTuneCacheBytes = 64 << 20

type tuneCacheFile struct {
	Version  int                              `json:"version"`
	Machines map[string]map[string]TuneChoice `json:"machines"`
}

// DefaultTuneCachePath is where a run keeps its choices unless told
// otherwise: $FASTER_TUNE_CACHE, else tune.json in faster's folder of the
// user's cache directory ($XDG_CACHE_HOME or ~/.cache). It is "" when no
// such directory is known.
func DefaultTuneCachePath() string {
	if p, ok := os.LookupEnv("FASTER_TUNE_CACHE"); ok {
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "faster", "tune.json")
}

// OpenTuneCache reads the choices recorded at path for machine. A missing
// file is an empty cache. A file that is not a regular file (a FIFO, a
// device, a directory, a dangling symlink), cannot be read, or does not
// parse leaves the cache empty with Problem set (naming it); the error is
// only for a path or machine that is "".
func OpenTuneCache(path, machine string) (*TuneCache, error) {
	if path == "" || machine == "" {
		return nil, errors.New("train: tune cache: a path and a machine are needed")
	}
	c := &TuneCache{path: path, machine: machine, entries: map[string]TuneChoice{}, dirty: map[string]bool{}}
	f, err := readTuneCache(path)
	switch {
	case err == nil:
		for k, v := range f.Machines[machine] {
			c.entries[k] = v
		}
	case errors.Is(err, fs.ErrNotExist) && !errors.Is(err, source.ErrBadFile):
	case errors.As(err, new(*tuneCacheCorrupt)):
		c.Problem = err
	default: // not a regular file, unreadable: not ours to replace
		c.keep = err
		c.Problem = fmt.Errorf("%w (the tune cache is not used, nor written: tuning afresh)", err)
	}
	return c, nil
}

type tuneCacheCorrupt struct {
	path string
	err  error
}

func (e *tuneCacheCorrupt) Error() string {
	return fmt.Sprintf("%s: not a tune cache (it will be replaced): %v", e.path, e.err)
}

// readTuneCache reads the file by the data-file rules: a regular file,
// opened without blocking (source.OpenFile), its size bounded before it
// is read. Errors name path.
func readTuneCache(path string) (tuneCacheFile, error) {
	fh, size, err := source.OpenFile(path)
	if err != nil {
		if errors.As(err, new(*source.FileError)) {
			return tuneCacheFile{}, err
		}
		return tuneCacheFile{}, fmt.Errorf("tune cache %w", err) // *PathError: names path
	}
	defer fh.Close()
	if size > maxTuneCacheBytes {
		return tuneCacheFile{}, &tuneCacheCorrupt{path, fmt.Errorf("%d bytes, more than a tune cache holds (%d)", size, maxTuneCacheBytes)}
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxTuneCacheBytes+1))
	if err != nil {
		return tuneCacheFile{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxTuneCacheBytes {
		return tuneCacheFile{}, &tuneCacheCorrupt{path, fmt.Errorf("grew past %d bytes while read", maxTuneCacheBytes)}
	}
	f, err := parseTuneCache(b)
	if err != nil {
		return tuneCacheFile{}, &tuneCacheCorrupt{path, err}
	}
	return f, nil
}

// parseTuneCache parses a tune cache's bytes.
func parseTuneCache(b []byte) (tuneCacheFile, error) {
	var f tuneCacheFile
	if err := json.Unmarshal(b, &f); err != nil {
		return tuneCacheFile{}, err
	}
	if f.Version != TuneCacheVersion {
		return tuneCacheFile{}, fmt.Errorf("format version %d, this build reads %d", f.Version, TuneCacheVersion)
	}
	return f, nil
}

// Path is the file's path.
func (c *TuneCache) Path() string { return c.path }

// Lookup returns the choice recorded for the configuration key on this
// machine.
func (c *TuneCache) Lookup(key string) (TuneChoice, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.entries[key]
	return ch, ok
}

// Record keeps ch for key on this machine, served by Lookup at once and
// written at the next Flush.
func (c *TuneCache) Record(key string, ch TuneChoice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = ch
	c.dirty[key] = true
}

// Drop forgets the choice for key on this machine (one that does not
// hold here): the next Flush removes it from the file, unless a new one
// is Recorded first.
func (c *TuneCache) Drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
	c.dirty[key] = true
}

// Flush writes the choices recorded or dropped since the last Flush, if
// any: what the file holds now (other processes' choices) merged with
// them, replaced atomically (through a symlink, its target). A file that
// is not a regular file or cannot be read is left as it is. The error
// names the file; after one, later Flushes do nothing (a run warns once).
func (c *TuneCache) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.dirty) == 0 || c.failed {
		return nil
	}
	if err := c.write(); err != nil {
		c.failed = true
		return fmt.Errorf("autotune: the tune cache was not written (this run's choices are not kept): %w", err)
	}
	clear(c.dirty)
	return nil
}

func (c *TuneCache) write() error {
	if c.keep != nil {
		return c.keep
	}
	path := c.path
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("%s: %w", c.path, err)
	}
	unlock, err := lockWait(path + ".lock")
	if err != nil {
		return fmt.Errorf("%s: %w", c.path, err)
	}
	defer unlock()
	f, err := readTuneCache(path)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist) && !errors.Is(err, source.ErrBadFile),
		errors.As(err, new(*tuneCacheCorrupt)):
		f = tuneCacheFile{}
	default:
		return err
	}
	f.Version = TuneCacheVersion
	if f.Machines == nil {
		f.Machines = map[string]map[string]TuneChoice{}
	}
	m := f.Machines[c.machine]
	if m == nil {
		m = map[string]TuneChoice{}
		f.Machines[c.machine] = m
	}
	for k := range c.dirty {
		if v, ok := c.entries[k]; ok {
			m[k] = v
		} else {
			delete(m, k)
		}
	}
	for k, v := range m { // what others recorded, for the next Lookup
		if _, ok := c.entries[k]; !ok && !c.dirty[k] {
			c.entries[k] = v
		}
	}
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("%s: %w", c.path, err)
	}
	return nil
}

// lockWait takes the lock file at path, waiting for a concurrent writer
// (which holds it for one read and one write).
func lockWait(path string) (func(), error) {
	for i := 0; ; i++ {
		unlock, err := lockfile.Lock(path)
		if err == nil || !errors.Is(err, lockfile.ErrLocked) || i == 2000 {
			return unlock, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}
