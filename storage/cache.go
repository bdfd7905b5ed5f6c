package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faster-training/faster/internal/atomicfile"
)

// DefaultCacheSize is the cap of a Cache opened with size 0.
const DefaultCacheSize = 50 << 30

// ErrNotCached is returned by Cache.Open for an object that cannot be kept
// under the cap (larger than it, or every other entry is in use): read it
// from the store.
var ErrNotCached = errors.New("storage: object does not fit in the cache")

// Cache keeps whole objects of remote stores on local disk, under a size
// cap, so that reading them again (epoch 2 of a training run, or the next
// run) is a local read. Entries are evicted whole, least recently used
// first. Every entry is a data file and a small JSON file of its size and
// SHA-256, both written atomically (temporary file, fsync, rename); an
// entry whose data does not match (truncated, corrupted, half written by a
// process that died) is detected when it is opened and fetched again. The
// SHA-256 of an entry is checked once per process (then remembered by its
// size, modification time and inode), and against the dataset manifest's
// when the caller gives it.
//
// Processes (data-parallel ranks) may share one directory: an entry is
// fetched under an exclusive lock on its lock file (the others wait for
// it, then read it), and eviction runs under a lock on the directory. A
// file being read by one process may be evicted by another; its reads go
// on (the data stays until closed).
//
// Entries are named by the store's root (without query or credentials) and
// the object's name: objects are taken to be immutable, as a packed
// dataset's shards are; pass the manifest's SHA-256 (Want) to notice a
// dataset packed anew under the same name.
type Cache struct {
	dir string
	max int64

	mu      sync.Mutex
	checked map[string]stamp // entries whose hash this process checked
	inUse   map[string]int   // entries this process has open

	stats CacheStats
}

// CacheStats count a Cache's work (this process's).
type CacheStats struct {
	Hits        atomic.Int64 // opens served from disk
	Fetches     atomic.Int64 // objects fetched from their store
	FetchBytes  atomic.Int64 // bytes fetched
	Refetches   atomic.Int64 // of the fetches, entries found damaged or stale
	Evictions   atomic.Int64 // entries removed to stay under the cap
	Passthrough atomic.Int64 // opens that did not fit (ErrNotCached)
}

// Want is what the caller knows an object should be: its size (-1 if
// unknown) and hex SHA-256 ("" if unknown), from a dataset's manifest.
type Want struct {
	Size   int64
	SHA256 string
}

// stamp identifies the contents of a file that has not been rewritten.
type stamp struct {
	size, mtime int64
	ino         uint64
}

// cacheMeta is an entry's JSON file.
type cacheMeta struct {
	URL    string `json:"url"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// OpenCache opens (creating it if need be) the cache directory dir with a
// cap of max bytes of data (DefaultCacheSize when 0).
func OpenCache(dir string, max int64) (*Cache, error) {
	if max == 0 {
		max = DefaultCacheSize
	}
	if dir == "" || max < 0 {
		return nil, fmt.Errorf("storage: cache %q of %d bytes: want a directory and a positive size", dir, max)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: cache: %w", err)
	}
	return &Cache{dir: dir, max: max, checked: map[string]stamp{}, inUse: map[string]int{}}, nil
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Stats returns the cache's counters.
func (c *Cache) Stats() *CacheStats { return &c.stats }

// key names the entry of object name of store s.
func (c *Cache) key(s *Store, name string) string {
	h := sha256.Sum256([]byte(s.root + "\n" + name))
	base := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < ' ' {
			return '_'
		}
		return r
	}, path.Base(name))
	if len(base) > 64 {
		base = base[len(base)-64:]
	}
	return hex.EncodeToString(h[:12]) + "-" + strings.TrimLeft(base, ".")
}

func (c *Cache) dataPath(key string) string { return filepath.Join(c.dir, key) }
func (c *Cache) metaPath(key string) string { return filepath.Join(c.dir, key+".meta") }
func (c *Cache) lockPath(key string) string { return filepath.Join(c.dir, key+".lock") }

// CachedFile is an open cache entry: a local file. Close it when done.
type CachedFile struct {
	*os.File
	c    *Cache
	key  string
	once sync.Once
}

// Close closes the file and lets the entry be evicted by this process.
func (f *CachedFile) Close() error {
	err := f.File.Close()
	f.once.Do(func() { f.c.release(f.key) })
	return err
}

func (c *Cache) release(key string) {
	c.mu.Lock()
	if c.inUse[key]--; c.inUse[key] <= 0 {
		delete(c.inUse, key)
	}
	c.mu.Unlock()
}

// Open returns the cached copy of object name of store s, fetching the
// whole object into the cache first when it is missing or its copy is
// damaged or does not match want. It returns ErrNotCached, having kept
// nothing, when the object cannot be kept under the cap.
func (c *Cache) Open(ctx context.Context, s *Store, name string, want Want) (*CachedFile, error) {
	key := c.key(s, name)
	if f := c.lookup(key, want); f != nil {
		return f, nil
	}
	if want.Size > c.max {
		c.stats.Passthrough.Add(1)
		return nil, ErrNotCached
	}
	unlock, err := lockFile(ctx, c.lockPath(key))
	if err != nil {
		return nil, fmt.Errorf("storage: cache %s: %w", c.lockPath(key), err)
	}
	defer unlock()
	// Another process (or goroutine) may have fetched it meanwhile.
	if f := c.lookup(key, want); f != nil {
		return f, nil
	}
	_, derr := os.Stat(c.dataPath(key))
	_, merr := os.Stat(c.metaPath(key))
	if derr == nil || merr == nil {
		c.stats.Refetches.Add(1) // there, but damaged, partial or stale
		os.Remove(c.metaPath(key))
		os.Remove(c.dataPath(key))
	}
	return c.fetch(ctx, s, name, key, want)
}

// maxMetaBytes bounds an entry's .meta file (a few hundred bytes of JSON).
const maxMetaBytes = 64 << 10

// openRegular opens path if it is a regular file, by the data-file rules:
// a FIFO, device or directory in the cache directory is never read (an
// open would block, a read never end); the caller treats it as no entry.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := openNonblock(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file (%v)", path, st.Mode().Type())
	}
	if err == nil {
		err = clearNonblock(f)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// readMeta reads an entry's .meta by the data-file rules: a regular file
// of at most maxMetaBytes, its size checked before it is read.
func readMeta(path string) ([]byte, error) {
	f, st, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > maxMetaBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than a cache entry's metadata (%d)", path, st.Size(), maxMetaBytes)
	}
	return io.ReadAll(io.LimitReader(f, maxMetaBytes))
}

// lookup opens entry key if it is complete and matches want, or returns nil.
func (c *Cache) lookup(key string, want Want) *CachedFile {
	mb, err := readMeta(c.metaPath(key))
	if err != nil {
		return nil
	}
	var m cacheMeta
	if json.Unmarshal(mb, &m) != nil || len(m.SHA256) != 64 {
		return nil
	}
	if (want.Size >= 0 && m.Size != want.Size) || (want.SHA256 != "" && !strings.EqualFold(m.SHA256, want.SHA256)) {
		return nil
	}
	f, _, err := openRegular(c.dataPath(key))
	if err != nil {
		return nil
	}
	st, ok := statOf(f)
	if !ok || st.size != m.Size {
		f.Close()
		return nil
	}
	c.mu.Lock()
	seen := c.checked[key] == st
	c.mu.Unlock()
	if !seen {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, st.size)); err != nil || hex.EncodeToString(h.Sum(nil)) != strings.ToLower(m.SHA256) {
			f.Close()
			return nil
		}
	}
	c.mu.Lock()
	c.checked[key] = st
	c.inUse[key]++
	c.mu.Unlock()
	now := time.Now()
	os.Chtimes(c.metaPath(key), now, now) // the LRU clock, shared by every process
	c.stats.Hits.Add(1)
	return &CachedFile{File: f, c: c, key: key}
}

func statOf(f *os.File) (stamp, bool) {
	fi, err := f.Stat()
	if err != nil {
		return stamp{}, false
	}
	return stampOf(fi), true
}

func stampOf(fi os.FileInfo) stamp {
	return stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: inode(fi)}
}

// fetch downloads object name into entry key (the caller holds its lock)
// and opens it. The entry is opened before the directory lock is let go:
// another process making room may evict it as soon as it is (its own
// in-use list does not know ours), and an open file outlives its removal.
func (c *Cache) fetch(ctx context.Context, s *Store, name, key string, want Want) (*CachedFile, error) {
	r, err := s.NewReader(ctx, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := atomicfile.Create(c.dataPath(key), 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: cache: %w", err)
	}
	defer f.Abort()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	c.stats.FetchBytes.Add(n)
	if err != nil {
		return nil, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if want.Size >= 0 && n != want.Size {
		return nil, fmt.Errorf("storage: %s: %d bytes, the manifest says %d", s.URL(name), n, want.Size)
	}
	if want.SHA256 != "" && !strings.EqualFold(sum, want.SHA256) {
		return nil, fmt.Errorf("storage: %s: sha256 %s, the manifest says %s", s.URL(name), sum, want.SHA256)
	}
	c.stats.Fetches.Add(1)
	if n > c.max {
		c.stats.Passthrough.Add(1)
		return nil, ErrNotCached
	}
	unlock, err := lockFile(ctx, filepath.Join(c.dir, ".lock"))
	if err != nil {
		return nil, fmt.Errorf("storage: cache: %w", err)
	}
	defer unlock()
	if !c.makeRoom(key, n) {
		c.stats.Passthrough.Add(1)
		return nil, ErrNotCached
	}
	if err := f.Commit(); err != nil {
		return nil, fmt.Errorf("storage: cache: %w", err)
	}
	mb, _ := json.Marshal(cacheMeta{URL: s.URL(name), Size: n, SHA256: sum})
	if err := atomicfile.WriteFile(c.metaPath(key), mb, 0o644); err != nil {
		os.Remove(c.dataPath(key))
		return nil, fmt.Errorf("storage: cache: %w", err)
	}
	// What was just written and hashed needs no second hashing.
	if fi, err := os.Stat(c.dataPath(key)); err == nil && fi.Size() == n {
		c.mu.Lock()
		c.checked[key] = stampOf(fi)
		c.mu.Unlock()
	}
	if f := c.lookup(key, want); f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("storage: cache: %s fetched to %s but does not check out", s.URL(name), c.dataPath(key))
}

// makeRoom evicts least recently used entries (not open in this process,
// not key) until n more bytes fit under the cap, and reports whether they
// do. The caller holds the directory lock.
func (c *Cache) makeRoom(key string, n int64) bool {
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return false
	}
	type entry struct {
		key  string
		size int64
		used time.Time
	}
	var all []entry
	var total int64
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".meta") || strings.HasSuffix(name, ".lock") || name == key {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		en := entry{key: name, size: fi.Size(), used: fi.ModTime()}
		if mi, err := os.Stat(c.metaPath(name)); err == nil {
			en.used = mi.ModTime()
		} else {
			en.used = time.Time{} // no meta: an orphan, evicted first
		}
		all = append(all, en)
		total += en.size
	}
	// Temporary files of fetches that died long ago.
	for _, e := range ents {
		if atomicfile.IsTemp(e.Name()) {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
				os.Remove(filepath.Join(c.dir, e.Name()))
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.Before(all[j].used) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, en := range all {
		if total+n <= c.max {
			break
		}
		if c.inUse[en.key] > 0 {
			continue
		}
		os.Remove(c.metaPath(en.key)) // meta first: a reader never trusts data without it
		if os.Remove(c.dataPath(en.key)) == nil {
			c.stats.Evictions.Add(1)
		}
		delete(c.checked, en.key)
		total -= en.size
	}
	return total+n <= c.max
}
