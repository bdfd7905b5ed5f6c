package loader

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfrecord"
)

// firstShard returns the first shard of the packed dataset dir and its index.
func firstShard(t *testing.T, dir string) (data, idx string) {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.tfrecord"))
	if err != nil || len(m) == 0 {
		t.Fatal("no shards")
	}
	return m[0], strings.TrimSuffix(m[0], ".tfrecord") + ".idx"
}

// openErr opens dir and runs one epoch, returning the first error.
func openErr(t *testing.T, dir string, opts Options) error {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		return err
	}
	defer l.Close()
	for b, err := range l.IterEpoch(context.Background(), 0) {
		if err != nil {
			return err
		}
		b.Release()
	}
	return nil
}

// TestCorruptIndexSizes: sizes and offsets of an .idx that the shard cannot
// hold are refused at open, naming the index, for the streaming and the
// global-shuffle reads (before: global shuffle allocated the size).
func TestCorruptIndexSizes(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"huge size", "0 4611686018427387904"},
		{"overflowing end", "9223372036854775800 100"},
		{"size past the shard", "0 99999"},
	} {
		for _, global := range []bool{false, true} {
			t.Run(tc.name+"/global="+strconv.FormatBool(global), func(t *testing.T) {
				_, dir := makeTree(t, 4)
				_, idx := firstShard(t, dir)
				os.WriteFile(idx, []byte(tc.line+"\n"), 0o644)
				err := openErr(t, dir, Options{Transform: None, Batch: 4, GlobalShuffle: global})
				if !errors.Is(err, tfrecord.ErrCorrupt) || !strings.Contains(err.Error(), idx) {
					t.Fatalf("want a corrupt-index error naming %s, got %v", idx, err)
				}
			})
		}
	}
}

// TestStaleIndexOrShard: an index that disagrees with its shard (empty;
// the shard cut at a record boundary) is an error naming the file, with
// and without a manifest, not an epoch short of samples with no error.
func TestStaleIndexOrShard(t *testing.T) {
	for _, manifest := range []bool{true, false} {
		t.Run("empty index/manifest="+strconv.FormatBool(manifest), func(t *testing.T) {
			_, dir := makeTree(t, 4)
			_, idx := firstShard(t, dir)
			os.WriteFile(idx, nil, 0o644)
			if !manifest {
				os.Remove(filepath.Join(dir, shard.ManifestName))
			}
			err := openErr(t, dir, Options{Transform: None, Batch: 4})
			if err == nil || !strings.Contains(err.Error(), idx) {
				t.Fatalf("want an error naming %s, got %v", idx, err)
			}
		})
		t.Run("shard cut at a record/manifest="+strconv.FormatBool(manifest), func(t *testing.T) {
			_, dir := makeTree(t, 4)
			data, idx := firstShard(t, dir)
			f, _ := os.Open(idx)
			entries, err := tfrecord.ReadIndex(bufio.NewReader(f), idx)
			f.Close()
			if err != nil || len(entries) < 2 {
				t.Fatalf("index: %v (%d entries)", err, len(entries))
			}
			os.Truncate(data, entries[len(entries)-1].Offset)
			if !manifest {
				os.Remove(filepath.Join(dir, shard.ManifestName))
			}
			err = openErr(t, dir, Options{Transform: None, Batch: 4})
			if err == nil || !strings.Contains(err.Error(), filepath.Base(data)) {
				t.Fatalf("want an error naming %s, got %v", data, err)
			}
		})
	}
	t.Run("shard cut at a record under the skip policy", func(t *testing.T) {
		_, dir := makeTree(t, 4)
		data, idx := firstShard(t, dir)
		f, _ := os.Open(idx)
		entries, _ := tfrecord.ReadIndex(f, idx)
		f.Close()
		os.Truncate(data, entries[len(entries)-1].Offset)
		l, err := Open(dir, Options{Transform: None, Batch: 4, BadData: BadDataPolicy{Skip: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		// The epoch keeps the 12 rows the manifest plans (the same steps on
		// every rank): 11 records and one repeat making up the lost one.
		got := runEpoch(t, l, 0)
		n := len(got.first)
		bad := l.Bad()
		if n != 11 || len(got.keys) != 12 || got.repeats != 1 || len(bad) != 1 || bad[0].Path != data {
			t.Fatalf("served %d of 12 (%d rows, %d repeats) with %v quarantined; want 11, 12 rows, 1 repeat and the cut shard listed", n, len(got.keys), got.repeats, bad)
		}
	})
	t.Run("record count disagrees with the manifest", func(t *testing.T) {
		_, dir := makeTree(t, 4)
		m, _ := shard.LoadManifest(dir)
		m.Splits["train"].Shards[0].Records++
		m.Save(dir)
		err := openErr(t, dir, Options{Transform: None, Batch: 4})
		if err == nil || !strings.Contains(err.Error(), "manifest records") {
			t.Fatalf("want a record-count error, got %v", err)
		}
	})
}

// TestUnreadableManifest: a manifest that cannot be read is an error, not
// a reason to read every *.tfrecord of the directory (which mixes splits).
func TestUnreadableManifest(t *testing.T) {
	_, dir := makeTree(t, 4)
	p := filepath.Join(dir, shard.ManifestName)
	os.WriteFile(p, []byte("{"), 0o644)
	err := openErr(t, dir, Options{Transform: None, Batch: 4})
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("want an error naming %s, got %v", p, err)
	}
	// A glob of the shards reads the manifest beside them as well.
	err = openErr(t, filepath.Join(dir, "*.tfrecord"), Options{Transform: None, Batch: 4})
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("glob: want an error naming %s, got %v", p, err)
	}
}

// TestInterruptedPack: a split the packer did not finish says so.
func TestInterruptedPack(t *testing.T) {
	_, dir := makeTree(t, 4)
	b, _ := os.ReadFile(filepath.Join(dir, shard.ManifestName))
	var m shard.Manifest
	json.Unmarshal(b, &m)
	m.Splits["train"].Complete = false
	m.Save(dir)
	err := openErr(t, dir, Options{Transform: None, Batch: 4})
	if err == nil || !strings.Contains(err.Error(), "this pack did not finish: rerun faster pack") {
		t.Fatalf("want a did-not-finish error, got %v", err)
	}
}

// hugeJPEG returns a small JPEG whose frame header claims w x h pixels.
func hugeJPEG(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, 16, 16)), nil)
	data := b.Bytes()
	for i := 0; i+8 < len(data); i++ {
		if data[i] == 0xff && data[i+1] == 0xc0 {
			data[i+5], data[i+6] = byte(h>>8), byte(h)
			data[i+7], data[i+8] = byte(w>>8), byte(w)
			return data
		}
	}
	t.Fatal("no SOF0 marker")
	return nil
}

// TestBadFilesAreBadSamples: every kind of file that cannot be a sample
// (FIFO, dangling symlink, symlink loop, symlink to a device, a file above
// the size cap, an image above the pixel limit) is one bad sample: skipped
// and quarantined under the skip policy, naming the file, and a clear
// stop otherwise; never a hang or an out-of-memory.
func TestBadFilesAreBadSamples(t *testing.T) {
	folder, _ := makeTree(t, 2)
	cls := filepath.Join(folder, "ant")
	bad := map[string]func(p string) error{
		"pipe.jpg":     func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"dangling.jpg": func(p string) error { return os.Symlink(filepath.Join(cls, "missing"), p) },
		"loop.jpg":     func(p string) error { return os.Symlink("loop.jpg", p) },
		"zero.jpg":     func(p string) error { return os.Symlink("/dev/zero", p) },
		"sparse.jpg": func(p string) error {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
			return os.Truncate(p, source.MaxFileSize+1)
		},
		"huge.jpg": func(p string) error { return os.WriteFile(p, hugeJPEG(t, 30000, 30000), 0o644) },
	}
	for name, mk := range bad {
		if err := mk(filepath.Join(cls, name)); err != nil {
			t.Fatal(name, err)
		}
	}
	l, err := Open(folder, Options{Resolution: 16, Batch: 4, BadData: BadDataPolicy{Skip: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := runEpoch(t, l, 0)
	if len(got.first) != 6 || len(got.keys) != 12 || got.repeats != 6 {
		t.Fatalf("%d good samples in %d rows (%d repeats), want 6 in the 12 planned rows", len(got.first), len(got.keys), got.repeats)
	}
	quarantined := map[string]bool{}
	for _, b := range l.Bad() {
		quarantined[filepath.Base(b.Path)] = true
	}
	for name := range bad {
		if !quarantined[name] {
			t.Errorf("%s not quarantined (list %v)", name, l.Bad())
		}
	}
	// Stop policy: the first bad file stops the epoch, naming it.
	l2, err := Open(folder, Options{Resolution: 16, Batch: 4, Shuffle: ShuffleOff})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	stop := epochErr(l2, 0)
	if stop == nil || !strings.Contains(stop.Error(), cls) {
		t.Fatalf("stop policy: want an error naming a file of %s, got %v", cls, stop)
	}
}

// TestMemoryBudget: a resolution above the pixel limit, or batches in
// flight above the memory budget, are refused at Open.
func TestMemoryBudget(t *testing.T) {
	folder, _ := makeTree(t, 1)
	if _, err := Open(folder, Options{Resolution: 100000}); err == nil || !strings.Contains(err.Error(), "pixel") {
		t.Fatalf("resolution 100000: %v", err)
	}
	// 2^32 squared is 0 in 64 bits, and so was every product of it
	// (before: "arena of 0 bytes per row"); a schedule's side too.
	for _, o := range []Options{{Resolution: 1 << 32}, {Resolution: 64, Schedule: []int{64, 1 << 32}}} {
		if _, err := Open(folder, o); err == nil || !strings.Contains(err.Error(), "resolution 4294967296: at most 16384") {
			t.Fatalf("resolution %d, schedule %v: %v", o.Resolution, o.Schedule, err)
		}
	}
	_, err := Open(folder, Options{Resolution: 4096, Batch: 64, MaxBatchMemory: 8 << 30})
	if err == nil || !strings.Contains(err.Error(), "memory budget") {
		t.Fatalf("resolution 4096 over an 8 GiB budget: %v", err)
	}
	l, err := Open(folder, Options{Resolution: 64, Batch: 64, Workers: 2, MaxBatchMemory: 8 << 30})
	if err != nil {
		t.Fatalf("a batch within the budget: %v", err)
	}
	l.Close()
}

// packWDS packs a tree into WebDataset shards, train and val in one
// directory.
func packWDS(t *testing.T) string {
	t.Helper()
	folder, _ := makeTree(t, 4)
	src, err := source.OpenImageFolder(folder)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, split := range []string{"train", "val"} {
		if _, err := shard.Pack(context.Background(), src, folder, dir, shard.PackOptions{Shards: 2, Split: split, Format: shard.FormatWDS}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestWDSManifest: a WebDataset directory is read through its manifest
// (one split, not every tar), and the manifest's sizes and counts are
// checked (before: every *.tar was read, mixing splits, and a rewritten
// shard was trusted).
func TestWDSManifest(t *testing.T) {
	dir := packWDS(t)
	l, err := Open(dir, Options{Transform: None, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(runEpoch(t, l, 0).keys); n != 12 {
		t.Fatalf("train split of WebDataset shards: %d samples, want 12", n)
	}
	l.Close()
	m, _ := shard.LoadManifest(dir)
	m.Splits["train"].Shards[0].Records--
	m.Save(dir)
	err = openErr(t, dir, Options{Transform: None, Batch: 4})
	if err == nil || !strings.Contains(err.Error(), m.Splits["train"].Shards[0].Name) {
		t.Fatalf("want an error naming the shard whose count disagrees, got %v", err)
	}
	os.WriteFile(filepath.Join(dir, shard.ManifestName), []byte("{"), 0o644)
	if err := openErr(t, dir, Options{Transform: None, Batch: 4}); err == nil || !strings.Contains(err.Error(), shard.ManifestName) {
		t.Fatalf("unreadable manifest: %v", err)
	}
}

// A record that does not decode, inside a shard: under the stop policy
// the error names the shard and the record's offset (the key alone does
// not say where), the same place the skip policy's list gives.
func TestUndecodableRecordNamesShardAndOffset(t *testing.T) {
	folder, _ := makeTree(t, 3)
	good, err := os.ReadFile(filepath.Join(folder, "ant", "000.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "ant", "cut.jpg"), good[:len(good)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := source.OpenImageFolder(folder)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if _, err := shard.Pack(context.Background(), src, folder, dst, shard.PackOptions{Shards: 2}); err != nil {
		t.Fatal(err)
	}
	for _, global := range []bool{false, true} {
		skip, err := Open(dst, Options{Resolution: 16, Batch: 4, GlobalShuffle: global, BadData: BadDataPolicy{Skip: true}})
		if err != nil {
			t.Fatal(err)
		}
		runEpoch(t, skip, 0)
		bad := skip.Bad()
		skip.Close()
		if len(bad) != 1 || bad[0].Offset < 0 {
			t.Fatalf("global shuffle %v: skip policy listed %v, want the one cut record with its offset", global, bad)
		}
		stop, err := Open(dst, Options{Resolution: 16, Batch: 4, GlobalShuffle: global})
		if err != nil {
			t.Fatal(err)
		}
		got := epochErr(stop, 0)
		stop.Close()
		want := fmt.Sprintf("%s: offset %d: ", bad[0].Path, bad[0].Offset)
		if got == nil || !strings.HasPrefix(got.Error(), want) {
			t.Fatalf("global shuffle %v: stop policy error %v, want it to begin %q", global, got, want)
		}
	}
}

// epochErr runs epoch e of l, releasing every batch, and returns the
// error that ended it (nil: none).
func epochErr(l *Loader, e int) error {
	for b, err := range l.IterEpoch(context.Background(), e) {
		if err != nil {
			return err
		}
		b.Release()
	}
	return nil
}
