package shard

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfrecord"
)

// CountsName is the file beside local TFRecord shards that have neither
// an .idx index nor a manifest, where Open keeps the record counts it
// learned by reading the shards' length headers, so the next open does
// not read them again:
//
//	{"version": 1, "shards": {"train-00000-of-01024":
//	    {"size": 146923912, "mtime_ns": 1733200000000000000, "records": 1251}}}
//
// An entry holds while the shard keeps its size, modification time and
// stamp (source.FileStamp: inode and status-change time too, so a shard
// edited in place with its mtime set back is counted again), and while
// its count is one the shard's size can hold; a changed shard is counted
// again. A count is a cached fact, checked against the shard as it is
// read: a shard that holds a record past it, or ends before it, drops the
// entry and is an error naming this file (never an epoch cut at the
// count). Where the shards' directory cannot be written, the file is kept
// in the user's cache directory instead
// (os.UserCacheDir()/faster/counts/<sha256 of the directory>.json).
const CountsName = ".faster-counts.json"

// countsVersion is the version of the counts file; must not change
// meaning.
const countsVersion = 1

type countEntry struct {
	Size    int64  `json:"size"`
	MTimeNs int64  `json:"mtime_ns"`
	Records int    `json:"records"`
	Stamp   string `json:"stamp,omitempty"` // source.FileStamp of the shard when counted
}

// holds reports whether e is the count of a file whose stat is st and
// stamp stamp: the same size, modification time and stamp, and a count
// its size can hold, each record at least minRecord bytes (a TFRecord
// record a 16-byte frame: an empty shard holds none, a shard of some
// bytes at least one; 0 for a gzip-compressed tar, whose size says
// little).
func (e countEntry) holds(st os.FileInfo, stamp string, minRecord int64) bool {
	if e.Size != st.Size() || e.MTimeNs != st.ModTime().UnixNano() || e.Stamp == "" || e.Stamp != stamp || e.Records < 0 {
		return false
	}
	return minRecord == 0 || int64(e.Records) <= e.Size/minRecord && (e.Records == 0) == (e.Size == 0)
}

type countsFile struct {
	Version int                   `json:"version"`
	Shards  map[string]countEntry `json:"shards"`
	path    string                // where it was read from ("" when new)
}

// maxCountsFile bounds the counts file read (64 MiB, as the manifest).
const maxCountsFile = MaxManifestSize

// counter counts the records of local shards without an index, through
// the counts files of their directories. Safe for concurrent use.
type counter struct {
	mu    sync.Mutex
	dirs  map[string]*countsFile // by directory
	dirty map[string]bool
	from  map[string]string // the counts file each count read from one came from, by path
}

func newCounter() *counter {
	return &counter{dirs: map[string]*countsFile{}, dirty: map[string]bool{}}
}

// userCountsPath is where the counts of dir are kept when dir cannot be
// written.
func userCountsPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(base, "faster", "counts", hex.EncodeToString(sum[:16])+".json"), nil
}

// load reads dir's counts file beside the shards, else the user cache's
// copy; a missing or unreadable one is empty (the shards are counted).
func (c *counter) load(dir string) *countsFile {
	if f := c.dirs[dir]; f != nil {
		return f
	}
	f := readCounts(filepath.Join(dir, CountsName))
	if f == nil {
		if p, err := userCountsPath(dir); err == nil {
			f = readCounts(p)
		}
	}
	if f == nil {
		f = &countsFile{Version: countsVersion, Shards: map[string]countEntry{}}
	}
	c.dirs[dir] = f
	return f
}

func readCounts(p string) *countsFile {
	b, err := source.ReadFile(p, maxCountsFile)
	if err != nil {
		return nil
	}
	f, err := parseCounts(b)
	if err != nil {
		return nil
	}
	f.path = p
	return f
}

// parseCounts parses a counts file: its version must be countsVersion and
// it must list its shards; entries are checked against their shards when
// used (countEntry.holds).
func parseCounts(b []byte) (*countsFile, error) {
	var f countsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	if f.Version != countsVersion || f.Shards == nil {
		return nil, fmt.Errorf("counts file version %d (want %d) or no shards", f.Version, countsVersion)
	}
	return &f, nil
}

// count returns the number of records of the local TFRecord shard at
// path: from the counts file while its entry holds (countEntry.holds),
// else by reading its length headers. from names the counts file the
// count was read from ("" when the shard was counted).
func (c *counter) count(ctx context.Context, path string) (n int, from string, _ error) {
	n, from, ok, err := c.kept(path, tfrecord.FrameSize)
	if err != nil || ok {
		return n, from, err
	}
	st, stamp, err := statStamp(path)
	if err != nil {
		return 0, "", err
	}
	if n, err = CountRecords(ctx, path); err != nil {
		return 0, "", err
	}
	c.keep(path, st, stamp, n)
	return n, "", nil
}

// kept returns the count the counts file keeps for the file at path, if
// its entry holds, and the counts file's path.
// minRecord is the least bytes a record takes (see countEntry.holds).
func (c *counter) kept(path string, minRecord int64) (n int, from string, ok bool, _ error) {
	st, stamp, err := statStamp(path)
	if err != nil {
		return 0, "", false, err
	}
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.load(dir)
	e, ok := f.Shards[name]
	if !ok || !e.holds(st, stamp, minRecord) || f.path == "" {
		return 0, "", false, nil
	}
	if c.from == nil {
		c.from = map[string]string{}
	}
	c.from[path] = f.path
	return e.Records, f.path, true, nil
}

// statStamp returns the stat and the stamp (source.FileStamp) of the
// file at path, taken before it is counted.
func statStamp(path string) (os.FileInfo, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	stamp, err := source.FileStamp(path)
	return st, stamp, err
}

// keptIn returns the counts file the count of path was read from, "" when
// it was counted (or not asked).
func (c *counter) keptIn(path string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.from[path]
}

// drop removes the entry of the file at path, found wrong as the file was
// read (a record past its count, or its end before it), and saves the
// counts file: the next open counts the file again.
func (c *counter) drop(path string) {
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	c.mu.Lock()
	if f := c.dirs[dir]; f != nil {
		delete(f.Shards, name)
		c.dirty[dir] = true
	}
	delete(c.from, path)
	c.mu.Unlock()
	c.save()
}

// wrongCount is the error of a count kept in the counts file at from that
// the file at path, as read, disagrees with: more said how.
func wrongCount(from, path string, n int, more string) error {
	return fmt.Errorf("%s: its entry for %s says %d records, and %s: a stale or forged entry (the entry is dropped: the next run counts the shard again)", from, path, n, more)
}

// index reads the local TFRecord shard's length headers into an index
// (as tfrecord2idx would write it) and keeps its count.
func (c *counter) index(ctx context.Context, path string) ([]tfrecord.IndexEntry, error) {
	st, stamp, err := statStamp(path)
	if err != nil {
		return nil, err
	}
	entries := []tfrecord.IndexEntry{}
	if err := scanRecords(ctx, path, func(off, size int64) {
		entries = append(entries, tfrecord.IndexEntry{Offset: off, Size: size})
	}); err != nil {
		return nil, err
	}
	c.keep(path, st, stamp, len(entries))
	return entries, nil
}

// keep records n as the count of the shard at path whose stat and stamp
// were st and stamp before it was counted.
func (c *counter) keep(path string, st os.FileInfo, stamp string, n int) {
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	c.mu.Lock()
	c.load(dir).Shards[name] = countEntry{Size: st.Size(), MTimeNs: st.ModTime().UnixNano(), Records: n, Stamp: stamp}
	c.dirty[dir] = true
	c.mu.Unlock()
}

// save writes the counts files that changed, beside the shards or, where
// that directory cannot be written, in the user cache directory. A count
// that cannot be kept is counted again next time: no error.
func (c *counter) save() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for dir := range c.dirty {
		b, err := json.MarshalIndent(c.dirs[dir], "", " ")
		if err != nil {
			continue
		}
		if writeCounts(filepath.Join(dir, CountsName), b) != nil {
			if p, err := userCountsPath(dir); err == nil {
				if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
					writeCounts(p, b)
				}
			}
		}
		delete(c.dirty, dir)
	}
}

func writeCounts(p string, b []byte) error {
	f, err := atomicfile.Create(p, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return err
	}
	return f.Commit()
}

// CountRecords counts the records of a local TFRecord file by reading
// only their length headers: the 8-byte length and its CRC at each
// record's offset, then a seek past the data. The length CRC is checked
// (the data CRCs are not: a reader checks them as it reads), and the
// records must end exactly at the file's end; damage is a
// *tfrecord.CorruptError at its offset.
func CountRecords(ctx context.Context, path string) (int, error) {
	n := 0
	err := scanRecords(ctx, path, func(int64, int64) { n++ })
	return n, err
}

// scanRecords calls fn with the offset and framed size of each record of
// a local TFRecord file, reading only the length headers (see
// CountRecords).
func scanRecords(ctx context.Context, path string, fn func(off, size int64)) error {
	f, size, err := source.OpenFile(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var hdr [tfrecord.HeaderSize]byte
	for n, off := 0, int64(0); off < size; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if size-off < tfrecord.HeaderSize {
			return &tfrecord.CorruptError{Path: path, Offset: off, Reason: fmt.Sprintf("truncated header (%d of %d bytes)", size-off, tfrecord.HeaderSize), Err: io.ErrUnexpectedEOF}
		}
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return fmt.Errorf("%s: offset %d: %w", path, off, err)
		}
		length := binary.LittleEndian.Uint64(hdr[:8])
		if tfrecord.MaskedCRC(hdr[:8]) != binary.LittleEndian.Uint32(hdr[8:]) {
			return &tfrecord.CorruptError{Path: path, Offset: off, Reason: "length CRC mismatch"}
		}
		if left := uint64(size - off - tfrecord.FrameSize); size-off < tfrecord.FrameSize || length > left {
			return &tfrecord.CorruptError{Path: path, Offset: off, Reason: fmt.Sprintf("truncated record: %d of %d bytes present", size-off, length+tfrecord.FrameSize), Err: io.ErrUnexpectedEOF}
		}
		fn(off, int64(length)+tfrecord.FrameSize)
		off += int64(length) + tfrecord.FrameSize
	}
	return nil
}
