package shard

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/storage"
	"github.com/faster-training/faster/storage/s3test"
	"github.com/faster-training/faster/tfrecord"

	"github.com/faster-training/faster/internal/testenv"
)

// packedDir packs a folder of 3 classes × 7 images (plus one broken file
// the packer skips) into train (3 shards) and val (2 shards) splits of
// format, and returns the folder and the packed directory.
func packedDir(t *testing.T, format string) (folder, dst string) {
	t.Helper()
	folder = makeFolder(t, []string{"cat", "dog", "emu"}, 7)
	src, err := source.OpenImageFolder(folder)
	if err != nil {
		t.Fatal(err)
	}
	dst = t.TempDir()
	for split, n := range map[string]int{"train": 3, "val": 2} {
		if _, err := Pack(context.Background(), src, folder, dst, PackOptions{Shards: n, Split: split, Format: format}); err != nil {
			t.Fatal(err)
		}
	}
	return folder, dst
}

// open opens path and fails the test on error, closing the dataset at
// the test's end.
func open(t *testing.T, path string, o OpenOptions) source.Dataset {
	t.Helper()
	ds, err := Open(context.Background(), path, o)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { ds.Close() })
	return ds
}

func wantIndexed(t *testing.T, ds source.Dataset, kind string, n int) source.Indexed {
	t.Helper()
	x, ok := ds.(source.Indexed)
	if !ok {
		t.Fatalf("%s dataset is %T, want indexed", ds.Kind(), ds)
	}
	if _, ok := ds.(source.Streaming); ok {
		t.Fatalf("%T is both indexed and streaming", ds)
	}
	if ds.Kind() != kind || x.Len() != n {
		t.Fatalf("kind %q with %d records, want %q with %d", ds.Kind(), x.Len(), kind, n)
	}
	return x
}

func wantStreaming(t *testing.T, ds source.Dataset, files int, counts []int) source.Streaming {
	t.Helper()
	s, ok := ds.(source.Streaming)
	if !ok {
		t.Fatalf("%s dataset is %T, want streaming", ds.Kind(), ds)
	}
	if ds.Kind() != "shards" || len(s.Files()) != files || (counts != nil && !slices.Equal(s.Counts(), counts)) {
		t.Fatalf("kind %q, files %v, counts %v; want shards, %d files, counts %v", ds.Kind(), s.Files(), s.Counts(), files, counts)
	}
	return s
}

// readAll reads every record of every file of s, in order.
func readAll(t *testing.T, s source.Streaming) []source.Record {
	t.Helper()
	var out []source.Record
	for i := range s.Files() {
		r, err := s.Open(context.Background(), i)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				if _, err := r.Next(); err != io.EOF {
					t.Fatalf("after EOF: %v, want io.EOF again (sticky)", err)
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rec)
		}
		r.Close()
	}
	return out
}

// TestOpenLayouts: every layout opens as the right kind with the right
// counts.
func TestOpenLayouts(t *testing.T) {
	folder, tfr := packedDir(t, FormatTFRecord)
	_, wds := packedDir(t, FormatWDS)
	m, err := LoadManifest(tfr)
	if err != nil {
		t.Fatal(err)
	}
	var trainCounts []int
	for _, s := range m.Splits["train"].Shards {
		trainCounts = append(trainCounts, int(s.Records))
	}

	t.Run("imagefolder", func(t *testing.T) {
		x := wantIndexed(t, open(t, folder, OpenOptions{}), "imagefolder", 22) // the broken file is a sample: the decoder judges it
		if r, err := x.Record(3); err != nil || r.ID != 3 || r.Offset != -1 || len(r.Data) == 0 || r.Path != filepath.Join(folder, filepath.FromSlash(r.Key)) {
			t.Fatalf("record 3: %+v %v", r, err)
		}
	})
	t.Run("tfrecord dir with manifest", func(t *testing.T) {
		ds := open(t, tfr, OpenOptions{})
		s := wantStreaming(t, ds, 3, trainCounts)
		if !slices.Equal(ds.Classes(), []string{"cat", "dog", "emu"}) || s.Files()[0] != filepath.Join(tfr, Name("train", 0, 3)) {
			t.Fatalf("classes %v files %v", ds.Classes(), s.Files())
		}
		recs := readAll(t, s)
		if len(recs) != 21 {
			t.Fatalf("%d records, want 21", len(recs))
		}
		// IDs are file<<32|record; the indexed read of the same shards
		// gives the same records and IDs in the same order.
		x := wantIndexed(t, open(t, tfr, OpenOptions{GlobalShuffle: true}), "shards", 21)
		k := 0
		for f, c := range trainCounts {
			for r := range c {
				got, err := x.Record(k)
				if err != nil || recs[k].ID != uint64(f)<<32|uint64(r) || got.ID != recs[k].ID || got.Key != recs[k].Key ||
					got.Offset != recs[k].Offset || got.Label != recs[k].Label || string(got.Data) != string(recs[k].Data) {
					t.Fatalf("record %d: streamed %+v, indexed %+v %v", k, recs[k].Key, got.Key, err)
				}
				k++
			}
		}
	})
	t.Run("tfrecord split", func(t *testing.T) {
		s := wantStreaming(t, open(t, tfr, OpenOptions{Split: "val"}), 2, nil)
		if n := len(readAll(t, s)); n != 21 {
			t.Fatalf("val: %d records", n)
		}
		if _, err := Open(context.Background(), tfr, OpenOptions{Split: "test"}); err == nil || !strings.Contains(err.Error(), `no split "test"`) {
			t.Fatalf("missing split: %v", err)
		}
	})
	t.Run("glob", func(t *testing.T) {
		wantStreaming(t, open(t, filepath.Join(tfr, "train-*.tfrecord"), OpenOptions{}), 3, trainCounts)
	})
	t.Run("single file", func(t *testing.T) {
		p := filepath.Join(tfr, Name("val", 1, 2))
		s := wantStreaming(t, open(t, p, OpenOptions{}), 1, nil)
		if s.Counts()[0] != len(readAll(t, s)) {
			t.Fatalf("count %v", s.Counts())
		}
	})
	t.Run("tfrecord dir without index or manifest", func(t *testing.T) {
		dir := t.TempDir()
		for i := range 3 {
			b, _ := os.ReadFile(filepath.Join(tfr, Name("train", i, 3)))
			os.WriteFile(filepath.Join(dir, Name("train", i, 3)), b, 0o644)
		}
		// Counted by their length headers (TestTFImageNetCounts): known,
		// so two ranks can plan their steps.
		wantStreaming(t, open(t, dir, OpenOptions{}), 3, trainCounts)
		wantStreaming(t, open(t, dir, OpenOptions{Ranks: 2}), 3, trainCounts)
		// Global shuffle: indexed by their length headers.
		wantIndexed(t, open(t, dir, OpenOptions{GlobalShuffle: true}), "shards", 21)
	})
	t.Run("wds packed dir", func(t *testing.T) {
		wantIndexed(t, open(t, wds, OpenOptions{}), "wds", 21)
		wantIndexed(t, open(t, wds, OpenOptions{Split: "val"}), "wds", 21)
	})
	t.Run("wds tar and dir of tars", func(t *testing.T) {
		mw, _ := LoadManifest(wds)
		first := mw.Splits["train"].Shards[0]
		x := wantIndexed(t, open(t, filepath.Join(wds, first.Name), OpenOptions{}), "wds", int(first.Records))
		if r, err := x.Record(0); err != nil || r.ID != 0 || r.Path != filepath.Join(wds, first.Name) || len(r.Data) == 0 {
			t.Fatalf("record 0: %+v %v", r, err)
		}
		dir := t.TempDir()
		for _, s := range mw.Splits["train"].Shards {
			b, _ := os.ReadFile(filepath.Join(wds, s.Name))
			os.WriteFile(filepath.Join(dir, s.Name), b, 0o644)
		}
		wantIndexed(t, open(t, dir, OpenOptions{}), "wds", 21)
	})
	t.Run("s3", func(t *testing.T) {
		url := s3Dataset(t, tfr, "open")
		ds := open(t, url, OpenOptions{})
		s := wantStreaming(t, ds, 3, trainCounts)
		if r, ok := ds.(source.Remote); !ok || !r.Remote() {
			t.Fatal("a dataset under s3:// is not Remote")
		}
		recs := readAll(t, s)
		if len(recs) != 21 || !strings.HasPrefix(recs[0].Path, "s3://") {
			t.Fatalf("%d records, first at %q", len(recs), recs[0].Path)
		}
		wantIndexed(t, open(t, url, OpenOptions{GlobalShuffle: true}), "shards", 21)
		cached := open(t, url, OpenOptions{CacheDir: t.TempDir()})
		wantStreaming(t, cached, 3, trainCounts)
		if c, ok := cached.(interface{ CacheStats() *storage.CacheStats }); !ok || c.CacheStats() == nil {
			t.Fatal("a cached dataset has no cache stats")
		}
		if r := cached.(source.Remote); r.Remote() {
			t.Fatal("a cached dataset reads locally, yet says Remote")
		}
	})
}

// s3Dataset serves the files of dir from a real S3 server (versitygw on
// loopback) under prefix and returns its s3:// URL. It fails under
// FASTER_REQUIRE_DATA=1 when the server cannot run, else skips.
func s3Dataset(t *testing.T, dir, prefix string) string {
	t.Helper()
	s3test.SetEnv()
	srv, err := s3test.Start()
	if err == nil {
		if err = srv.CreateBucket(context.Background(), s3test.Bucket); err != nil {
			srv.Close()
		}
	}
	if err != nil {
		testenv.Missing(t, "S3 test server unavailable: %v", err)
	}
	t.Cleanup(srv.Close)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Put(context.Background(), s3test.Bucket, prefix+"/"+e.Name(), b); err != nil {
			t.Fatal(err)
		}
	}
	return srv.RootURL(prefix)
}

// TestOpenDamageUnderSkip: a shard whose index disagrees with the
// manifest is Open's error naming it, or, under the skip policy, one Skip
// call and a streaming read that lists no damage of its own.
func TestOpenDamageUnderSkip(t *testing.T) {
	_, tfr := packedDir(t, FormatTFRecord)
	idx := filepath.Join(tfr, IndexName(Name("train", 1, 3)))
	b, _ := os.ReadFile(idx)
	os.WriteFile(idx, b[:strings.LastIndexByte(strings.TrimSuffix(string(b), "\n"), '\n')+1], 0o644) // one entry fewer
	_, err := Open(context.Background(), tfr, OpenOptions{})
	if !errors.Is(err, tfrecord.ErrStaleIndex) || !source.IsDamage(err) || !strings.Contains(err.Error(), idx) {
		t.Fatalf("stale index: %v", err)
	}
	var got []source.Damage
	ds := open(t, tfr, OpenOptions{Skip: func(d source.Damage, of int) error { got = append(got, d); return nil }})
	if len(got) != 1 || got[0].Path != idx || !strings.Contains(got[0].Reason, "stale index") {
		t.Fatalf("damage %+v", got)
	}
	if n := len(readAll(t, ds.(source.Streaming))); n != 21 {
		t.Fatalf("%d records under skip, want 21", n)
	}
	stop := errors.New("budget")
	if _, err := Open(context.Background(), tfr, OpenOptions{Skip: func(source.Damage, int) error { return stop }}); err != stop {
		t.Fatalf("Skip's error: %v", err)
	}
}

// TestWDSManifestEveryShard: a WebDataset manifest that disagrees with
// several shards names every one of them (before: only the first), in
// one error, or one Skip call each.
func TestWDSManifestEveryShard(t *testing.T) {
	_, wds := packedDir(t, FormatWDS)
	m, _ := LoadManifest(wds)
	sh := m.Splits["train"].Shards
	sh[0].Records--
	sh[2].Records++
	if err := m.Save(wds); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), wds, OpenOptions{})
	if err == nil || !source.IsDamage(err) || !strings.Contains(err.Error(), sh[0].Name) || !strings.Contains(err.Error(), sh[2].Name) || strings.Contains(err.Error(), sh[1].Name) {
		t.Fatalf("want one error naming %s and %s, got %v", sh[0].Name, sh[2].Name, err)
	}
	var got []string
	open(t, wds, OpenOptions{Skip: func(d source.Damage, _ int) error { got = append(got, filepath.Base(d.Path)); return nil }})
	if !slices.Equal(got, []string{sh[0].Name, sh[2].Name}) {
		t.Fatalf("skip policy: damage of %v, want one row each of %s and %s", got, sh[0].Name, sh[2].Name)
	}
}

// TestRecordReaderDamage: a flipped byte inside a record stops a
// streaming reader there (a sticky error at the record's offset), or,
// under the skip policy, comes back as one record with Bad set and the
// reader resumes after it, the IDs still counting records.
func TestRecordReaderDamage(t *testing.T) {
	_, tfr := packedDir(t, FormatTFRecord)
	p := filepath.Join(tfr, Name("train", 0, 3))
	f, err := os.Open(IndexName(p))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := tfrecord.ReadIndex(f, "")
	f.Close()
	if err != nil || len(idx) < 4 {
		t.Fatalf("index %v %v", idx, err)
	}
	b, _ := os.ReadFile(p)
	b[idx[2].Offset+idx[2].Size-6] ^= 0xff // inside record 2's data
	os.WriteFile(p, b, 0o644)

	first := func(s source.Streaming) source.RecordReader {
		r, err := s.Open(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	r := first(open(t, tfr, OpenOptions{}).(source.Streaming))
	for range 2 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	_, err = r.Next()
	var ce *tfrecord.CorruptError
	if !errors.As(err, &ce) || ce.Offset != idx[2].Offset {
		t.Fatalf("record 2: %v, want corruption at offset %d", err, idx[2].Offset)
	}
	if _, again := r.Next(); again != err {
		t.Fatalf("not sticky: %v then %v", err, again)
	}

	r = first(open(t, tfr, OpenOptions{Skip: func(source.Damage, int) error { return nil }}).(source.Streaming))
	var ids []uint64
	var bad []source.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Bad != nil {
			bad = append(bad, rec)
			continue
		}
		ids = append(ids, rec.ID)
	}
	if len(bad) != 1 || bad[0].Offset != idx[2].Offset || bad[0].Path != p || !source.IsDamage(bad[0].Bad) || source.DamageOf(bad[0].Bad, "", 0, "").Offset != idx[2].Offset {
		t.Fatalf("damaged records %+v", bad)
	}
	if len(ids) != len(idx)-1 || ids[1] != 1 || ids[2] != 3 {
		t.Fatalf("ids %v of %d records", ids, len(idx))
	}
}
