//go:build unix

package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/faster-training/faster/shard/shardtest"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfrecord"

	"github.com/faster-training/faster/internal/testenv"
)

// tfImageNetDir writes, with an independent writer (shardtest: pure
// Python), the shards of TensorFlow's build_imagenet_data.py: train 4×5
// records, validation 2×3, labels 1..3, no extension, no index.
func tfImageNetDir(t *testing.T, index string) string {
	t.Helper()
	dir := t.TempDir()
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Split: "train", Shards: 4, PerShard: 5, Index: index})
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Split: "validation", Shards: 2, PerShard: 3, Index: index})
	return dir
}

// TestTFImageNetDir: a directory of TensorFlow's ImageNet shards opens
// (before: "no *.tfrecord or *.tar files"), its train split by default,
// "val" and "validation" finding validation-*; records keep their stored
// 1-based labels, synsets and file names; counts are known without
// indexes (counted by the length headers).
func TestTFImageNetDir(t *testing.T) {
	dir := tfImageNetDir(t, "")
	s := wantStreaming(t, open(t, dir, OpenOptions{}), 4, []int{5, 5, 5, 5})
	if f := s.Files(); filepath.Base(f[0]) != "train-00000-of-00004" || filepath.Base(f[3]) != "train-00003-of-00004" {
		t.Fatalf("files %v", f)
	}
	recs := readAll(t, s)
	var labels []int
	for _, r := range recs {
		labels = append(labels, r.Label)
	}
	slices.Sort(labels)
	if len(recs) != 20 || labels[0] != 1 || labels[19] != 3 || recs[0].Key != "n00000000_0.JPEG" || recs[1].Synset != "n00000001" {
		t.Fatalf("%d records, labels %v, first %q %q", len(recs), labels, recs[0].Key, recs[1].Synset)
	}
	for _, split := range []string{"val", "validation"} {
		v := wantStreaming(t, open(t, dir, OpenOptions{Split: split}), 2, []int{3, 3})
		if !strings.HasPrefix(filepath.Base(v.Files()[0]), "validation-") {
			t.Fatalf("split %s: %v", split, v.Files())
		}
	}
	if _, err := Open(context.Background(), dir, OpenOptions{Split: "test"}); err == nil || !strings.Contains(err.Error(), `no shards of split "test"`) || !strings.Contains(err.Error(), "train, validation") {
		t.Fatalf("split test: %v", err)
	}
	// One file, named without an extension, is a TFRecord by its bytes.
	wantStreaming(t, open(t, filepath.Join(dir, "validation-00001-of-00002"), OpenOptions{}), 1, []int{3})
}

// TestTFImageNetGlobLeavesIndexes: a glob matching the .idx files beside
// the shards reads the shards only, through those indexes (global shuffle
// needs them); before, the .idx files were read as TFRecords.
func TestTFImageNetGlobLeavesIndexes(t *testing.T) {
	dir := tfImageNetDir(t, "stem")
	glob := filepath.Join(dir, "train-*")
	if m, _ := filepath.Glob(glob); len(m) != 8 {
		t.Fatalf("glob matches %d files, want 4 shards and 4 indexes", len(m))
	}
	wantStreaming(t, open(t, glob, OpenOptions{}), 4, []int{5, 5, 5, 5})
	x := wantIndexed(t, open(t, glob, OpenOptions{GlobalShuffle: true}), "shards", 20)
	if r, err := x.Record(19); err != nil || r.Key != "n00000001_19.JPEG" {
		t.Fatalf("record 19: %q %v", r.Key, err)
	}
	// The same through several paths (a shell's expansion of the glob).
	m, _ := filepath.Glob(glob)
	wantStreaming(t, open(t, m[0], OpenOptions{Paths: m[1:]}), 4, []int{5, 5, 5, 5})
	// Only indexes: no shards.
	if _, err := Open(context.Background(), filepath.Join(dir, "*.idx"), OpenOptions{}); err == nil || !strings.Contains(err.Error(), "no shards") {
		t.Fatalf("only indexes: %v", err)
	}
	// A file of no format in the glob is named, not read as a damaged
	// TFRecord.
	os.WriteFile(filepath.Join(dir, "train-notes.txt"), []byte("these are the ImageNet shards\n"), 0o644)
	if _, err := Open(context.Background(), glob, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "train-notes.txt: not a dataset file") {
		t.Fatalf("a text file in the glob: %v", err)
	}
}

// TestDALIIndexNames: X.tfrecord.idx (DALI's tfrecord2idx as commonly
// run: `tfrecord2idx X.tfrecord X.tfrecord.idx`) is found beside
// X.tfrecord, as X.idx is; before, only X.idx was looked for.
func TestDALIIndexNames(t *testing.T) {
	dir := t.TempDir()
	shardtest.WriteTFImageNet(t, dir, shardtest.TFImageNet{Shards: 2, PerShard: 3, Ext: ".tfrecord", Index: "full"})
	if _, err := os.Stat(filepath.Join(dir, "train-00000-of-00002.tfrecord.idx")); err != nil {
		t.Fatal(err)
	}
	wantIndexed(t, open(t, dir, OpenOptions{GlobalShuffle: true}), "shards", 6)
	// The index is read and checked: a stale one is named.
	os.WriteFile(filepath.Join(dir, "train-00001-of-00002.tfrecord.idx"), []byte("0 10\n"), 0o644)
	_, err := Open(context.Background(), dir, OpenOptions{GlobalShuffle: true})
	if err == nil || !strings.Contains(err.Error(), "train-00001-of-00002.tfrecord.idx") {
		t.Fatalf("stale DALI-named index: %v", err)
	}
}

// TestTFImageNetCounts: shards without index or manifest are counted by
// reading their length headers (len() is known), and the counts are kept
// beside them keyed by size and modification time, so the next open
// reads the counts file, a changed shard is counted again, and a
// directory that cannot be written keeps them in the user cache.
func TestTFImageNetCounts(t *testing.T) {
	dir := tfImageNetDir(t, "")
	wantStreaming(t, open(t, dir, OpenOptions{}), 4, []int{5, 5, 5, 5})
	cf := readCounts(filepath.Join(dir, CountsName))
	if cf == nil || len(cf.Shards) != 4 || cf.Shards["train-00002-of-00004"].Records != 5 {
		t.Fatalf("counts file: %+v", cf)
	}
	// The next open takes the kept count (a count no header scan gives).
	e := cf.Shards["train-00002-of-00004"]
	e.Records = 99
	cf.Shards["train-00002-of-00004"] = e
	b, _ := json.Marshal(cf)
	os.WriteFile(filepath.Join(dir, CountsName), b, 0o644)
	wantStreaming(t, open(t, dir, OpenOptions{}), 4, []int{5, 5, 99, 5})
	// A shard that changed (here: two records more) is counted again.
	other := t.TempDir()
	shardtest.WriteTFImageNet(t, other, shardtest.TFImageNet{Shards: 4, PerShard: 7})
	copyFile(t, filepath.Join(other, "train-00002-of-00004"), filepath.Join(dir, "train-00002-of-00004"))
	wantStreaming(t, open(t, dir, OpenOptions{}), 4, []int{5, 5, 7, 5})
	if cf := readCounts(filepath.Join(dir, CountsName)); cf.Shards["train-00002-of-00004"].Records != 7 {
		t.Fatalf("recounted shard kept as %+v", cf.Shards["train-00002-of-00004"])
	}

	// A data directory that cannot be written (here: the counts file's
	// name is taken by a directory, which holds for root too): the counts
	// go to the user cache directory.
	ro := tfImageNetDir(t, "")
	os.Mkdir(filepath.Join(ro, CountsName), 0o755)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	wantStreaming(t, open(t, ro, OpenOptions{Split: "val"}), 2, []int{3, 3})
	p, err := userCountsPath(ro)
	if err != nil {
		t.Fatal(err)
	}
	if cf := readCounts(p); cf == nil || cf.Shards["validation-00001-of-00002"].Records != 3 {
		t.Fatalf("user cache counts %s: %+v", p, cf)
	}
}

// TestCountRecordsDamage: counting checks each length CRC and that the
// records tile the file; a damaged shard's count is unknown (-1) at open
// and its damage is the reader's, at its offset.
func TestCountRecordsDamage(t *testing.T) {
	dir := tfImageNetDir(t, "")
	p := filepath.Join(dir, "train-00001-of-00004")
	b, _ := os.ReadFile(p)
	n, err := CountRecords(context.Background(), p)
	if err != nil || n != 5 {
		t.Fatalf("count %d %v", n, err)
	}
	os.WriteFile(p, b[:len(b)-3], 0o644) // cut inside the last record
	var ce *tfrecord.CorruptError
	if _, err := CountRecords(context.Background(), p); !errors.As(err, &ce) || !strings.Contains(ce.Reason, "truncated record") {
		t.Fatalf("cut shard: %v", err)
	}
	bad := append([]byte(nil), b...)
	bad[3] ^= 1 // the first record's length
	os.WriteFile(p, bad, 0o644)
	if _, err := CountRecords(context.Background(), p); !errors.As(err, &ce) || ce.Offset != 0 || ce.Reason != "length CRC mismatch" {
		t.Fatalf("flipped length: %v", err)
	}
	s := wantStreaming(t, open(t, dir, OpenOptions{}), 4, []int{5, -1, 5, 5})
	r, err := s.Open(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Next(); !errors.As(err, &ce) || ce.Offset != 0 {
		t.Fatalf("reading the damaged shard: %v", err)
	}
	if _, err := Open(context.Background(), dir, OpenOptions{Ranks: 2}); err == nil || !strings.Contains(err.Error(), "length CRC mismatch") {
		t.Fatalf("two ranks with a shard that cannot be counted: %v", err)
	}
}

// TestFormatOf: containers are told by their bytes, as other tools write
// them: TFRecord (no extension), tar in GNU tar's gnu, pax, ustar and v7
// formats and Python's tarfile, gzip, an LMDB's data.mdb; an .idx is none.
func TestFormatOf(t *testing.T) {
	dir := tfImageNetDir(t, "stem")
	want := map[string]string{
		filepath.Join(dir, "train-00000-of-00004"):     "tfrecord",
		filepath.Join(dir, "train-00000-of-00004.idx"): "",
	}
	member := filepath.Join(dir, "x.cls")
	os.WriteFile(member, []byte("1"), 0o644)
	if _, err := exec.LookPath("tar"); err == nil {
		for _, f := range []string{"gnu", "pax", "ustar", "v7"} {
			out := filepath.Join(dir, "s-"+f+".bin") // no telling name
			if b, err := exec.Command("tar", "--format="+f, "-cf", out, "-C", dir, "x.cls").CombinedOutput(); err != nil {
				t.Fatalf("tar --format=%s: %v %s", f, err, b)
			}
			want[out] = "tar"
		}
	} else if testenv.Required() {
		t.Fatal("GNU tar missing")
	}
	py := testenv.Python
	gz, pytar, mdb := filepath.Join(dir, "s.bin"), filepath.Join(dir, "t.bin"), filepath.Join(dir, "lmdb")
	script := `import gzip, lmdb, sys, tarfile
open(sys.argv[1], "wb").write(gzip.compress(b"not a shard"))
with tarfile.open(sys.argv[2], "w", format=tarfile.USTAR_FORMAT) as t: t.add(sys.argv[4], "x.cls")
e = lmdb.open(sys.argv[3], map_size=1 << 20)
with e.begin(write=True) as x: x.put(b"k", b"v")
e.close()`
	if b, err := exec.Command(py, "-c", script, gz, pytar, mdb, member).CombinedOutput(); err != nil {
		if testenv.Required() {
			t.Fatalf("python3 gzip/tarfile/lmdb: %v %s", err, b)
		}
		t.Logf("python3 gzip/tarfile/lmdb unavailable: %v %s", err, b)
	} else {
		want[gz], want[pytar], want[filepath.Join(mdb, "data.mdb")] = "gzip", "tar", "lmdb"
	}
	for p, w := range want {
		if got, err := FormatOf(p); err != nil || got != w {
			t.Errorf("%s: %q %v, want %q", filepath.Base(p), got, err, w)
		}
	}
	// A gzip file is refused naming gzip, not as a damaged TFRecord.
	if _, ok := want[gz]; ok {
		os.Rename(gz, filepath.Join(dir, "s-00000-of-00001.tar.gz"))
		_, err := Open(context.Background(), filepath.Join(dir, "s-00000-of-00001.tar.gz"), OpenOptions{})
		if err == nil || !strings.Contains(err.Error(), "gzip") || errors.Is(err, tfrecord.ErrCorrupt) {
			t.Fatalf("gzip: %v", err)
		}
		rep, err := Verify(context.Background(), []string{filepath.Join(dir, "s-00000-of-00001.tar.gz")}, VerifyOptions{})
		if err != nil || len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0].Reason, "gzip") {
			t.Fatalf("verify gzip: %+v %v", rep, err)
		}
	}
	// A FIFO is refused, not waited on.
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err == nil {
		if _, err := FormatOf(fifo); !errors.Is(err, source.ErrBadFile) {
			t.Fatalf("FIFO: %v", err)
		}
	}
}

// TestSeveralPaths: several paths are one dataset; a directory among
// them, or files of two formats, are refused naming them.
func TestSeveralPaths(t *testing.T) {
	dir := tfImageNetDir(t, "")
	a, b := filepath.Join(dir, "train-00000-of-00004"), filepath.Join(dir, "validation-0000*")
	wantStreaming(t, open(t, a, OpenOptions{Paths: []string{b}}), 3, []int{5, 3, 3})
	if _, err := Open(context.Background(), a, OpenOptions{Paths: []string{dir}}); err == nil || !strings.Contains(err.Error(), "a directory") {
		t.Fatalf("a directory among paths: %v", err)
	}
	tarFile := filepath.Join(dir, "w-00000-of-00001.tar")
	if err := exec.Command("tar", "-cf", tarFile, "-C", dir, "train-00001-of-00004").Run(); err != nil {
		t.Skip("tar:", err)
	}
	if _, err := Open(context.Background(), a, OpenOptions{Paths: []string{tarFile}}); err == nil || !strings.Contains(err.Error(), "one format") {
		t.Fatalf("a TFRecord and a tar: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTFImageNetOverS3: under a storage URL too, the split's
// <split>-NNNNN-of-NNNNN objects are the shards (val finding validation),
// the .idx objects beside them their indexes.
func TestTFImageNetOverS3(t *testing.T) {
	dir := tfImageNetDir(t, "stem")
	url := s3Dataset(t, dir, "tfimagenet")
	wantStreaming(t, open(t, url, OpenOptions{}), 4, []int{5, 5, 5, 5})
	wantStreaming(t, open(t, url, OpenOptions{Split: "val"}), 2, []int{3, 3})
	wantIndexed(t, open(t, url, OpenOptions{GlobalShuffle: true}), "shards", 20)
	if _, err := Open(context.Background(), url, OpenOptions{Split: "test"}); err == nil || !strings.Contains(err.Error(), `no shards of split "test"`) {
		t.Fatalf("split test: %v", err)
	}
}

// TestTFImageNetGlobalShuffleWithoutIndex: local shards without an index
// are indexed by their length headers for a global shuffle (before:
// "global shuffle needs an .idx index"); each record is CRC-checked as it
// is read, and a shard that cannot be indexed is named.
func TestTFImageNetGlobalShuffleWithoutIndex(t *testing.T) {
	dir := tfImageNetDir(t, "")
	x := wantIndexed(t, open(t, dir, OpenOptions{GlobalShuffle: true}), "shards", 20)
	for i := range 20 {
		if r, err := x.Record(i); err != nil || r.Key != fmt.Sprintf("n%08d_%d.JPEG", i%3, i) {
			t.Fatalf("record %d: %q %v", i, r.Key, err)
		}
	}
	p := filepath.Join(dir, "train-00003-of-00004")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)-1], 0o644)
	if _, err := Open(context.Background(), dir, OpenOptions{GlobalShuffle: true}); err == nil || !strings.Contains(err.Error(), "train-00003-of-00004") || !strings.Contains(err.Error(), "truncated record") {
		t.Fatalf("a cut shard: %v", err)
	}
}

// TestTFImageNetDamagedHead: a shard named as TensorFlow names them whose
// first length is damaged is a damaged TFRecord (its reader's error at
// offset 0), not "not a dataset file"; a glob's directories are left out.
func TestTFImageNetDamagedHead(t *testing.T) {
	dir := tfImageNetDir(t, "")
	p := filepath.Join(dir, "train-00000-of-00004")
	b, _ := os.ReadFile(p)
	b[0] ^= 0x40
	os.WriteFile(p, b, 0o644)
	os.Mkdir(filepath.Join(dir, "train-extra"), 0o755)
	for path, files := range map[string]int{p: 1, filepath.Join(dir, "train-*"): 4} {
		s := wantStreaming(t, open(t, path, OpenOptions{}), files, nil)
		r, err := s.Open(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Next()
		r.Close()
		var ce *tfrecord.CorruptError
		if !errors.As(err, &ce) || ce.Offset != 0 || ce.Path != p {
			t.Fatalf("%s: %v", path, err)
		}
	}
}
