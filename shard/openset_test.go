package shard

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/shard/shardtest"
	"github.com/faster-training/faster/source"
)

// What a set of shards' names promise (issue 41 item 2) is checked by
// Open and Verify alike: a split, one format, all N of -of-N, a task pack
// merged.

// verifyProblems runs Verify on dir and returns its problems as text.
func verifyProblems(t *testing.T, dir string) string {
	t.Helper()
	rep, err := Verify(context.Background(), []string{dir}, VerifyOptions{Workers: 1})
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, p := range rep.Problems {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// A directory of WebDataset tars without a manifest reads the split its
// names carry, as TFRecord shards do (before: train and val served
// together whatever --split said); an unknown split is an error listing
// the splits there are.
func TestWDSSplitWithoutManifest(t *testing.T) {
	_, dir := packedDir(t, FormatWDS)
	os.Remove(filepath.Join(dir, ManifestName))
	for _, split := range []string{"train", "val", "validation"} {
		x := open(t, dir, OpenOptions{Split: split}).(source.Indexed)
		want := strings.TrimSuffix(split, "idation") + "-"
		for i := range x.Len() {
			rec, err := x.Record(i)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(filepath.Base(rec.Path), want) {
				t.Fatalf("split %s: sample %d from %s", split, i, rec.Path)
			}
		}
		if x.Len() != 21 {
			t.Fatalf("split %s: %d samples, want 21", split, x.Len())
		}
	}
	_, err := Open(context.Background(), dir, OpenOptions{Split: "test"})
	if err == nil || !strings.Contains(err.Error(), `split "test"`) || !strings.Contains(err.Error(), "train, val") {
		t.Fatalf("split test: %v, want an error naming the splits train, val", err)
	}
}

// twoFormats is a directory holding a TFRecord shard and a tar shard of
// one split, without a manifest.
func twoFormats(t *testing.T) (dir, tfr, tar string) {
	_, tdir := packedDir(t, FormatTFRecord)
	_, wdir := packedDir(t, FormatWDS)
	dir = t.TempDir()
	tfr = filepath.Join(dir, Name("train", 0, 3))
	tar = filepath.Join(dir, FormatName(FormatWDS, "train", 1, 3))
	copyFile(t, filepath.Join(tdir, filepath.Base(tfr)), tfr)
	copyFile(t, filepath.Join(tdir, Name("train", 2, 3)), filepath.Join(dir, Name("train", 2, 3)))
	copyFile(t, filepath.Join(wdir, filepath.Base(tar)), tar)
	return dir, tfr, tar
}

// A directory holding shards of two formats is refused by Open and
// Verify, naming a file of each (before: Open read the tars and dropped
// the TFRecord shards; Verify counted both, OK).
func TestTwoFormatsRefused(t *testing.T) {
	dir, tfr, tar := twoFormats(t)
	_, err := Open(context.Background(), dir, OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "two formats") || !strings.Contains(err.Error(), tfr) || !strings.Contains(err.Error(), tar) {
		t.Fatalf("Open: %v, want \"two formats\" naming %s and %s", err, tfr, tar)
	}
	if p := verifyProblems(t, dir); !strings.Contains(p, "two formats") || !strings.Contains(p, filepath.Base(tar)) {
		t.Fatalf("Verify: %q, want \"two formats\"", p)
	}
}

// A split whose names say -of-00010 with shards missing is refused by
// Open and Verify, naming the missing shards (before: verified OK and
// served half).
func TestMissingShardsRefused(t *testing.T) {
	for _, format := range []string{FormatTFRecord, FormatWDS} {
		t.Run(format, func(t *testing.T) {
			root := makeFolder(t, []string{"a", "b"}, 5)
			src, err := source.OpenImageFolder(root)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if _, err := Pack(context.Background(), src, root, dir, PackOptions{Shards: 10, Format: format}); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, ManifestName))
			for _, i := range []int{3, 5, 6, 7, 8, 9} {
				name := FormatName(format, "train", i, 10)
				os.Remove(filepath.Join(dir, name))
				os.Remove(filepath.Join(dir, IndexName(name)))
			}
			_, err = Open(context.Background(), dir, OpenOptions{})
			if err == nil || !strings.Contains(err.Error(), "train-00003-of-00010") || !strings.Contains(err.Error(), "train-00009-of-00010") || !strings.Contains(err.Error(), "6 of 10") {
				t.Fatalf("Open: %v, want the missing shards named", err)
			}
			if p := verifyProblems(t, dir); !strings.Contains(p, "train-00003-of-00010") || !strings.Contains(p, "6 of 10") {
				t.Fatalf("Verify: %q, want the missing shards named", p)
			}
			// Two shard counts in one split are refused too.
			other := filepath.Join(dir, FormatName(format, "train", 0, 4))
			copyFile(t, filepath.Join(dir, FormatName(format, "train", 0, 10)), other)
			if _, err = Open(context.Background(), dir, OpenOptions{}); err == nil || !strings.Contains(err.Error(), filepath.Base(other)) {
				t.Fatalf("Open with -of-00004 beside -of-00010: %v", err)
			}
		})
	}
}

// A destination holding a task pack's parts (.faster-parts) is refused
// until the merge, by Open and Verify (before: one of two tasks done
// verified OK and served half).
func TestUnmergedTaskPackRefused(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 4)
	src, err := source.OpenImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	pack := func(i int, split string) {
		if _, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 4, Workers: 1, TaskIndex: i, TaskCount: 2, Split: split}); err != nil {
			t.Fatal(err)
		}
	}
	pack(0, "train")
	check := func(what string) {
		t.Helper()
		_, err := Open(context.Background(), dst, OpenOptions{})
		if err == nil || !strings.Contains(err.Error(), "not merged: run faster pack --merge") {
			t.Fatalf("%s: Open: %v, want \"not merged\"", what, err)
		}
		if _, err := Open(context.Background(), filepath.Join(dst, "train-*"), OpenOptions{}); err == nil || !strings.Contains(err.Error(), "not merged") {
			t.Fatalf("%s: Open of a glob: %v, want \"not merged\"", what, err)
		}
		if p := verifyProblems(t, dst); !strings.Contains(p, "not merged: run faster pack --merge") {
			t.Fatalf("%s: Verify: %q, want \"not merged\"", what, p)
		}
	}
	check("one task of two")
	pack(1, "train")
	check("both tasks, not merged")
	if _, err := MergeParts(context.Background(), dst, "train", 1); err != nil {
		t.Fatal(err)
	}
	open(t, dst, OpenOptions{})
	// Another split's parts beside a merged one: that split is refused.
	pack(0, "val")
	if _, err := Open(context.Background(), dst, OpenOptions{Split: "val"}); err == nil || !strings.Contains(err.Error(), "not merged") {
		t.Fatalf("split val with parts: %v", err)
	}
	open(t, dst, OpenOptions{Split: "train"})
}

// countsDir is a directory of 2 TFRecord shards of 6 records without
// indexes or manifest, opened once so that its counts file is written.
func countsDir(t *testing.T) (string, []int) {
	t.Helper()
	_, dir := packFolder(t, 6)
	os.Remove(filepath.Join(dir, ManifestName))
	for i := range 2 {
		os.Remove(filepath.Join(dir, IndexName(Name("train", i, 2))))
	}
	counts := wantStreaming(t, open(t, dir, OpenOptions{}), 2, nil).Counts()
	if _, err := os.Stat(filepath.Join(dir, CountsName)); err != nil || counts[0] < 4 {
		t.Fatalf("counts %v, counts file: %v", counts, err)
	}
	return dir, counts
}

// editCounts sets shard name's record count in dir's counts file, its
// size, modification time and stamp kept.
func editCounts(t *testing.T, dir, name string, records int64) {
	t.Helper()
	p := filepath.Join(dir, CountsName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // nanoseconds are more digits than a float64 keeps
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	m["shards"].(map[string]any)[name].(map[string]any)["records"] = records
	b, _ = json.Marshal(m)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A counts file whose entry disagrees with its shard (stale or forged,
// size and modification time matching) is an error naming the counts
// file as soon as the shard holds a record past the count (or ends before
// it), never an epoch cut at the count; the entry is dropped, so the next
// open counts the shard again (before: 3 of 6 served with no error, or
// the shard blamed as changed). A count the shard's size cannot hold (0
// records in a shard of some bytes, more records than 16-byte frames) is
// no count: the shard is counted again at open.
func TestCountsFileDisagreeing(t *testing.T) {
	name := Name("train", 0, 2)
	for _, delta := range []int64{-3, -1, 1, 2} {
		dir, counts := countsDir(t)
		records := int64(counts[0]) + delta
		editCounts(t, dir, name, records)
		ds, err := Open(context.Background(), dir, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, err := readShardRecords(ds.(source.Streaming), 0)
		ds.Close()
		if err == nil || !strings.Contains(err.Error(), CountsName) || !strings.Contains(err.Error(), name) {
			t.Fatalf("count %d: read %d records, err %v; want an error naming %s and the shard", records, n, err, CountsName)
		}
		if int64(n) > records {
			t.Fatalf("count %d: %d records served past the count", records, n)
		}
		// The entry was dropped: the shard is counted again.
		wantStreaming(t, open(t, dir, OpenOptions{}), 2, counts)
	}
	for _, records := range []int64{0, -1, 1 << 40} {
		dir, counts := countsDir(t)
		editCounts(t, dir, name, records)
		wantStreaming(t, open(t, dir, OpenOptions{}), 2, counts)
	}
}

// The counts of gzip-compressed tars, kept in the counts file when several
// ranks need them, are checked the same way as they are read.
func TestCountsFileDisagreeingTarGz(t *testing.T) {
	for _, delta := range []int64{-2, -1, 1} {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		os.Mkdir(data, 0o755)
		names := shardtest.WriteTree(t, filepath.Join(dir, "tree"), wdsSamples(t, 5))
		p := filepath.Join(data, "train-0.tar.gz")
		shardtest.PyTar(t, "pax", filepath.Join(dir, "tree"), p, names)
		o := OpenOptions{Ranks: 2}
		if got := open(t, data, o).(source.Streaming).Counts(); got[0] != 5 {
			t.Fatalf("counts %v", got)
		}
		editCounts(t, data, "train-0.tar.gz", 5+delta)
		ds := open(t, data, o).(source.Streaming)
		if ds.Counts()[0] != int(5+delta) {
			t.Fatalf("counts %v: the forged entry was not read", ds.Counts())
		}
		n, err := readShardRecords(ds, 0)
		if err == nil || !strings.Contains(err.Error(), CountsName) || !strings.Contains(err.Error(), p) || int64(n) > 5+delta {
			t.Fatalf("count %d: read %d samples, err %v; want an error naming %s", 5+delta, n, err, CountsName)
		}
		if got := open(t, data, o).(source.Streaming).Counts(); got[0] != 5 {
			t.Fatalf("after the error: counts %v, want the file counted again", got)
		}
	}
}

// Shards that hold no record at all are no dataset: Open refuses them,
// as it refuses an ImageFolder of no images and a tar of no samples
// (before: an empty epoch, exit 0).
func TestEmptyShardsRefused(t *testing.T) {
	dir := t.TempDir()
	for i := range 2 {
		os.WriteFile(filepath.Join(dir, Name("train", i, 2)), nil, 0o644)
	}
	for _, global := range []bool{false, true} {
		if _, err := Open(context.Background(), dir, OpenOptions{GlobalShuffle: global}); err == nil || !strings.Contains(err.Error(), "no records") {
			t.Fatalf("global shuffle %v: %v, want \"no records\"", global, err)
		}
	}
}

// Under a storage URL too, a split named -of-N is read only whole.
func TestMissingShardsRefusedOverS3(t *testing.T) {
	dir := tfImageNetDir(t, "stem")
	os.Remove(filepath.Join(dir, "train-00002-of-00004"))
	url := s3Dataset(t, dir, "tfimagenet")
	if _, err := Open(context.Background(), url, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "train-00002-of-00004") || !strings.Contains(err.Error(), "1 of 4") {
		t.Fatalf("Open: %v, want the missing shard named", err)
	}
	wantStreaming(t, open(t, url, OpenOptions{Split: "validation"}), 2, []int{3, 3})
}

// pyWDS writes WebDataset tars as Python's tarfile writes them (PAX, as
// webdataset's TarWriter does), named as webdataset's brace notation
// expands: argv[1] the folder, then "name:count" per tar, each sample a
// .cls and a .txt.
const pyWDS = `
import io, sys, tarfile
for spec in sys.argv[2:]:
    name, n = spec.split(':')
    with tarfile.open(sys.argv[1] + '/' + name, 'w', format=tarfile.PAX_FORMAT) as t:
        for i in range(int(n)):
            for ext, data in (('cls', b'%d' % (i % 2)), ('txt', name.encode())):
                m = tarfile.TarInfo('s%03d.%s' % (i, ext)); m.size = len(data)
                t.addfile(m, io.BytesIO(data))
`

// WebDataset's own names carry a sequence number and no count
// ("train-000000.tar", "imagenet-val-000001.tar"): --split reads its
// split's tars, an unknown split lists those there are (before: every tar
// served whatever --split said), and names with no split word
// ("shard-000000.tar") are one dataset, as before.
func TestWDSSplitBySequenceNames(t *testing.T) {
	if _, err := os.Stat(testenv.Python); err != nil {
		testenv.Missing(t, "%s missing", testenv.Python)
	}
	write := func(specs ...string) string {
		dir := t.TempDir()
		if out, err := exec.Command(testenv.Python, append([]string{"-c", pyWDS, dir}, specs...)...).CombinedOutput(); err != nil {
			t.Fatalf("python tarfile: %v\n%s", err, out)
		}
		return dir
	}
	count := func(dir, split string) int {
		t.Helper()
		return open(t, dir, OpenOptions{Split: split, Unlabeled: true}).(source.Indexed).Len()
	}
	dir := write("imagenet-train-000000.tar:3", "imagenet-train-000001.tar:3", "imagenet-val-000000.tar:2")
	if n := count(dir, "train"); n != 6 {
		t.Errorf("split train: %d samples, want 6", n)
	}
	if n := count(dir, "val"); n != 2 {
		t.Errorf("split val: %d samples, want 2", n)
	}
	if n := count(dir, "validation"); n != 2 {
		t.Errorf("split validation (val's alias): %d samples, want 2", n)
	}
	if s := EvalSplit(dir); s != "val" {
		t.Errorf("EvalSplit %q, want val", s)
	}
	_, err := Open(context.Background(), dir, OpenOptions{Split: "test", Unlabeled: true})
	if err == nil || !strings.Contains(err.Error(), `split "test"`) || !strings.Contains(err.Error(), "train, val") {
		t.Errorf("split test: %v, want an error naming the splits train, val", err)
	}
	plain := write("shard-000000.tar:3", "shard-000001.tar:2")
	if n := count(plain, "train"); n != 5 {
		t.Errorf("names without a split: %d samples, want all 5", n)
	}
}
