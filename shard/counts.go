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
// An entry holds while the shard keeps its size and modification time; a
// changed shard is counted again. Where the shards' directory cannot be
// written, the file is kept in the user's cache directory instead
// (os.UserCacheDir()/faster/counts/<sha256 of the directory>.json).
const CountsName = ".faster-counts.json"

// countsVersion is the version of the counts file; must not change
// meaning.
const countsVersion = 1

type countEntry struct {
	Size    int64 `json:"size"`
	MTimeNs int64 `json:"mtime_ns"`
	Records int   `json:"records"`
}

type countsFile struct {
	Version int                   `json:"version"`
	Shards  map[string]countEntry `json:"shards"`
}

// maxCountsFile bounds the counts file read (64 MiB, as the manifest).
const maxCountsFile = MaxManifestSize

// counter counts the records of local shards without an index, through
// the counts files of their directories. Safe for concurrent use.
type counter struct {
	mu    sync.Mutex
	dirs  map[string]*countsFile // by directory
	dirty map[string]bool
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
	var f countsFile
	if json.Unmarshal(b, &f) != nil || f.Version != countsVersion || f.Shards == nil {
		return nil
	}
	return &f
}

// count returns the number of records of the local TFRecord shard at
// path: from the counts file while the shard keeps its size and
// modification time, else by reading its length headers.
func (c *counter) count(ctx context.Context, path string) (int, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	c.mu.Lock()
	e, ok := c.load(dir).Shards[name]
	c.mu.Unlock()
	if ok && e.Size == st.Size() && e.MTimeNs == st.ModTime().UnixNano() && e.Records >= 0 {
		return e.Records, nil
	}
	n, err := CountRecords(ctx, path)
	if err != nil {
		return 0, err
	}
	c.keep(path, st, n)
	return n, nil
}

// index reads the local TFRecord shard's length headers into an index
// (as tfrecord2idx would write it) and keeps its count.
func (c *counter) index(ctx context.Context, path string) ([]tfrecord.IndexEntry, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	entries := []tfrecord.IndexEntry{}
	if err := scanRecords(ctx, path, func(off, size int64) {
		entries = append(entries, tfrecord.IndexEntry{Offset: off, Size: size})
	}); err != nil {
		return nil, err
	}
	c.keep(path, st, len(entries))
	return entries, nil
}

// keep records n as the count of the shard at path whose stat is st.
func (c *counter) keep(path string, st os.FileInfo, n int) {
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	c.mu.Lock()
	c.load(dir).Shards[name] = countEntry{Size: st.Size(), MTimeNs: st.ModTime().UnixNano(), Records: n}
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
