package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/internal/lockfile"
)

// TuneCache keeps autotuning's choices across runs, as MIOpen's find-db
// does: the choice for an op's configuration on a machine, so that only the
// first run there pays for timing the candidates. Choices are kept by
// machine (the backend's description of the CPU and library it tuned on)
// and by configuration (the op, its shapes, layouts, precision and thread
// count, as the backend spells them); another machine's choices are kept in
// the file but never served.
//
// The file is JSON, written whole by atomic replacement; a writer merges
// what other processes recorded since it read (under a lock file beside
// it, so that concurrent runs do not drop each other's entries). A file
// that cannot be parsed is not used and is replaced at the next Record:
// a cache is never worth stopping a run for, and Problem says why it was
// dropped.
type TuneCache struct {
	path    string
	machine string

	mu      sync.Mutex
	entries map[string]TuneChoice // this machine's
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
// file is an empty cache; a path that is not a regular file is an error
// (naming it); unreadable contents leave the cache empty with Problem set.
func OpenTuneCache(path, machine string) (*TuneCache, error) {
	if path == "" || machine == "" {
		return nil, errors.New("train: tune cache: a path and a machine are needed")
	}
	c := &TuneCache{path: path, machine: machine, entries: map[string]TuneChoice{}}
	f, err := readTuneCache(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case errors.As(err, new(*tuneCacheCorrupt)):
		c.Problem = err
	case err != nil:
		return nil, err
	default:
		for k, v := range f.Machines[machine] {
			c.entries[k] = v
		}
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
// its size bounded before it is read.
func readTuneCache(path string) (tuneCacheFile, error) {
	var f tuneCacheFile
	fh, err := os.Open(path)
	if err != nil {
		return f, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return f, err
	}
	if !st.Mode().IsRegular() {
		return f, fmt.Errorf("%s: the tune cache is not a regular file (%s)", path, st.Mode().Type())
	}
	if st.Size() > maxTuneCacheBytes {
		return f, &tuneCacheCorrupt{path, fmt.Errorf("%d bytes, more than a tune cache holds (%d)", st.Size(), maxTuneCacheBytes)}
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxTuneCacheBytes+1))
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return tuneCacheFile{}, &tuneCacheCorrupt{path, err}
	}
	if f.Version != TuneCacheVersion {
		return tuneCacheFile{}, &tuneCacheCorrupt{path, fmt.Errorf("format version %d, this build reads %d", f.Version, TuneCacheVersion)}
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

// Record keeps ch for key on this machine and writes the file: what is
// there now (other processes' choices) merged with this one, replaced
// atomically.
func (c *TuneCache) Record(key string, ch TuneChoice) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = ch
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return err
	}
	unlock, err := lockWait(c.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	f, err := readTuneCache(c.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.As(err, new(*tuneCacheCorrupt)) {
		return err
	}
	if err != nil {
		f = tuneCacheFile{}
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
	for k, v := range c.entries {
		m[k] = v
	}
	for k, v := range m { // what others recorded, for the next Lookup
		if _, ok := c.entries[k]; !ok {
			c.entries[k] = v
		}
	}
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(c.path, append(b, '\n'), 0o644)
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
