package shard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/tfexample"
	"github.com/faster-training/faster/tfrecord"

	"github.com/faster-training/faster/internal/testenv"
)

func jpegBytes(t testing.TB, w, h, seed int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x*seed + y), uint8(y * 3), uint8(seed * 40), 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// makeFolder writes an ImageFolder tree of nPer JPEGs in each of the
// classes, plus two bad files, and returns its root.
func makeFolder(t testing.TB, classes []string, nPer int) string {
	root := t.TempDir()
	for ci, c := range classes {
		os.MkdirAll(filepath.Join(root, c), 0o755)
		for i := range nPer {
			data := jpegBytes(t, 16+i, 8+ci, i+ci)
			if err := os.WriteFile(filepath.Join(root, c, fmt.Sprintf("img%03d.jpg", i)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	os.WriteFile(filepath.Join(root, classes[0], "broken.jpg"), []byte("not a jpeg"), 0o644)
	os.WriteFile(filepath.Join(root, classes[0], "notes.txt"), []byte("ignored"), 0o644)
	return root
}

type record struct {
	off int64
	ex  *tfexample.Example
}

func readShard(t testing.TB, path string) []record {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := tfrecord.NewReader(f, tfrecord.WithName(path))
	var out []record
	for {
		off := r.Offset()
		rec, err := r.ReadRecord(nil)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		ex, err := tfexample.Unmarshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, record{off, ex})
	}
}

func TestPackImageFolder(t *testing.T) {
	classes := []string{"cat", "dog", "emu"}
	root := makeFolder(t, classes, 7)
	src, err := source.OpenImageFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	res, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 4, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 21 || res.Shards != 4 || res.Skipped != 1 || res.SkipList[0].Path != "cat/broken.jpg" ||
		!strings.Contains(res.SkipList[0].Reason, "not a readable image") {
		t.Fatalf("result %+v", res)
	}
	m, err := LoadManifest(dst)
	if err != nil {
		t.Fatal(err)
	}
	sp := m.Splits["train"]
	if sp == nil || !sp.Complete || sp.Records != 21 || sp.SourceKind != "imagefolder" || !slices.Equal(sp.Classes, classes) {
		t.Fatalf("manifest split %+v", sp)
	}
	// Unshuffled: the records are the source items in order, split
	// contiguously; every feature is right.
	var keys []string
	for k, si := range sp.Shards {
		if si.Name != Name("train", k, 4) || si.Index != IndexName(si.Name) {
			t.Fatalf("shard %d named %s / %s", k, si.Name, si.Index)
		}
		recs := readShard(t, filepath.Join(dst, si.Name))
		if int64(len(recs)) != si.Records {
			t.Fatalf("%s: %d records, manifest says %d", si.Name, len(recs), si.Records)
		}
		idxf, _ := os.Open(filepath.Join(dst, si.Index))
		idx, err := tfrecord.ReadIndex(idxf, si.Index)
		idxf.Close()
		if err != nil || len(idx) != len(recs) {
			t.Fatalf("index %v, %d entries", err, len(idx))
		}
		for i, r := range recs {
			if idx[i].Offset != r.off {
				t.Fatalf("index entry %d offset %d, record at %d", i, idx[i].Offset, r.off)
			}
			name, _ := r.ex.Bytes(KeyFilename)
			keys = append(keys, string(name))
			class := strings.Split(string(name), "/")[0]
			label, _ := r.ex.Int64(KeyLabel)
			text, _ := r.ex.Bytes(KeyClassText)
			enc, _ := r.ex.Bytes(KeyEncoded)
			format, _ := r.ex.Bytes(KeyFormat)
			w, _ := r.ex.Int64(KeyWidth)
			h, _ := r.ex.Int64(KeyHeight)
			file, _ := os.ReadFile(filepath.Join(root, string(name)))
			if classes[label] != class || string(text) != class || !bytes.Equal(enc, file) || string(format) != "jpeg" {
				t.Fatalf("record %s: label %d text %q format %q, bytes equal %v", name, label, text, format, bytes.Equal(enc, file))
			}
			cfg, _ := jpeg.DecodeConfig(bytes.NewReader(file))
			if int(w) != cfg.Width || int(h) != cfg.Height {
				t.Fatalf("record %s: %dx%d, file is %dx%d", name, w, h, cfg.Width, cfg.Height)
			}
		}
	}
	var want []string
	for _, it := range src.Items() {
		if it.Key != "cat/broken.jpg" {
			want = append(want, it.Key)
		}
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("record order\n got %v\nwant %v", keys, want)
	}
	rep, err := Verify(context.Background(), []string{dst}, VerifyOptions{})
	if err != nil || !rep.OK() || rep.Records != 21 || rep.Files != 4 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

func allKeys(t *testing.T, dst string, sp *Split) []string {
	var keys []string
	for _, si := range sp.Shards {
		for _, r := range readShard(t, filepath.Join(dst, si.Name)) {
			k, _ := r.ex.Bytes(KeyFilename)
			keys = append(keys, string(k))
		}
	}
	return keys
}

func TestPackShuffleDeterministic(t *testing.T) {
	root := makeFolder(t, []string{"a", "b"}, 20)
	src, _ := source.OpenImageFolder(root)
	pack := func(seed uint64) (string, *Split) {
		dst := t.TempDir()
		if _, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 3, Shuffle: true, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		m, _ := LoadManifest(dst)
		return dst, m.Splits["train"]
	}
	d1, s1 := pack(7)
	d2, s2 := pack(7)
	d3, s3 := pack(8)
	k1, k2, k3 := allKeys(t, d1, s1), allKeys(t, d2, s2), allKeys(t, d3, s3)
	if !slices.Equal(k1, k2) || s1.Shards[0].SHA256 != s2.Shards[0].SHA256 {
		t.Fatal("same seed, different shards")
	}
	if slices.Equal(k1, k3) {
		t.Fatal("different seeds, same order")
	}
	sorted := slices.Clone(k1)
	slices.Sort(sorted)
	if len(sorted) != 40 || slices.Compact(sorted) == nil || len(slices.Compact(slices.Clone(sorted))) != 40 {
		t.Fatalf("shuffled pack lost or duplicated records: %d", len(sorted))
	}
	var inOrder []string
	for _, it := range src.Items() {
		if it.Key != "a/broken.jpg" {
			inOrder = append(inOrder, it.Key)
		}
	}
	if slices.Equal(k1, inOrder) {
		t.Fatal("--shuffle kept the source order")
	}
}

func TestPackResumeAfterInterrupt(t *testing.T) {
	root := makeFolder(t, []string{"a", "b", "c"}, 30)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int64
	_, err := Pack(ctx, src, root, dst, PackOptions{Shards: 6, Workers: 2, Progress: func(k int, _ int64) {
		if n.Add(int64(k)) >= 40 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted pack: %v", err)
	}
	// Every shard file under its final name is listed complete, with its
	// real size; no temporary files remain.
	m, _ := LoadManifest(dst)
	sp := m.Splits["train"]
	if sp.Complete {
		t.Fatal("interrupted split marked complete")
	}
	complete := 0
	ents, _ := os.ReadDir(dst)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && e.Name() != LockName {
			t.Fatalf("temporary file left: %s", e.Name())
		}
		if !strings.HasSuffix(e.Name(), ".tfrecord") {
			continue
		}
		_, k, _, _ := ParseName(e.Name())
		if !sp.Shards[k].Complete || !shardIntact(dst, sp.Shards[k]) {
			t.Fatalf("%s exists but the manifest does not list it as complete", e.Name())
		}
		complete++
	}
	if complete == 6 {
		t.Fatal("the interrupt came too late to test anything")
	}
	// verify names the incomplete split.
	rep, _ := Verify(context.Background(), []string{dst}, VerifyOptions{})
	if rep.OK() || !strings.Contains(rep.Problems[0].Reason, "incomplete") {
		t.Fatalf("verify of an interrupted pack: %+v", rep.Problems)
	}
	res, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 6, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.KeptShards != complete || res.Records != 90 {
		t.Fatalf("resume kept %d shards (want %d), %d records", res.KeptShards, complete, res.Records)
	}
	// A fresh pack gives byte-identical shards.
	fresh := t.TempDir()
	Pack(context.Background(), src, root, fresh, PackOptions{Shards: 6})
	mf, _ := LoadManifest(fresh)
	m, _ = LoadManifest(dst)
	for k := range 6 {
		if mf.Splits["train"].Shards[k].SHA256 != m.Splits["train"].Shards[k].SHA256 {
			t.Fatalf("resumed shard %d differs from a fresh pack", k)
		}
	}
	if rep, _ := Verify(context.Background(), []string{dst}, VerifyOptions{}); !rep.OK() {
		t.Fatalf("verify after resume: %v", rep.Problems)
	}
	// A damaged shard (wrong size) is rewritten on the next run; others kept.
	p := filepath.Join(dst, Name("train", 2, 6))
	os.Truncate(p, 10)
	res, _ = Pack(context.Background(), src, root, dst, PackOptions{Shards: 6})
	if res.KeptShards != 5 {
		t.Fatalf("after truncating one shard, kept %d", res.KeptShards)
	}
	// A different layout starts over.
	res, _ = Pack(context.Background(), src, root, dst, PackOptions{Shards: 5})
	if res.KeptShards != 0 || res.Shards != 5 {
		t.Fatalf("new shard count kept %d shards", res.KeptShards)
	}
}

func TestPackStrict(t *testing.T) {
	root := makeFolder(t, []string{"a"}, 5)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	_, err := Pack(context.Background(), src, root, dst, PackOptions{Strict: true, Shards: 1})
	if err == nil || !strings.Contains(err.Error(), "broken.jpg") {
		t.Fatalf("strict pack: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dst, "*.tfrecord")); len(m) != 0 {
		t.Fatalf("strict failure left shards %v", m)
	}
}

// Flipping any single byte of a shard makes Verify fail, naming the shard
// and an offset at or before the flipped byte.
func TestVerifyDetectsEveryByteFlip(t *testing.T) {
	root := makeFolder(t, []string{"a"}, 3)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	if _, err := Pack(context.Background(), src, root, dst, PackOptions{Shards: 1}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dst, Name("train", 0, 1))
	orig, _ := os.ReadFile(p)
	step := 1
	if raceEnabled {
		step = 7
	}
	for pos := 0; pos < len(orig); pos += step {
		bad := bytes.Clone(orig)
		bad[pos] ^= 0x20
		os.WriteFile(p, bad, 0o644)
		for _, arg := range []string{dst, p} {
			rep, err := Verify(context.Background(), []string{arg}, VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ok := false
			for _, pr := range rep.Problems {
				if pr.Path == p && pr.Offset >= 0 && pr.Offset <= int64(pos) {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("flip at %d (verify %s): problems %v", pos, arg, rep.Problems)
			}
		}
	}
	os.WriteFile(p, orig, 0o644)
	// Index tampering, a missing index, and manifest mismatches.
	ip := filepath.Join(dst, IndexName(Name("train", 0, 1)))
	idx, _ := os.ReadFile(ip)
	os.WriteFile(ip, bytes.Replace(idx, []byte("\n"), []byte("1\n"), 1), 0o644)
	if rep, _ := Verify(context.Background(), []string{dst}, VerifyOptions{}); rep.OK() || rep.Problems[0].Path != ip {
		t.Fatalf("tampered index: %+v", rep.Problems)
	}
	os.Remove(ip)
	if rep, _ := Verify(context.Background(), []string{dst}, VerifyOptions{}); rep.OK() || !strings.Contains(rep.Problems[0].Reason, "index file missing") {
		t.Fatalf("missing index: %+v", rep.Problems)
	}
	os.WriteFile(ip, idx, 0o644)
	os.WriteFile(p, append(bytes.Clone(orig), tfrecord.AppendRecord(nil, []byte("extra"))...), 0o644)
	rep, _ := Verify(context.Background(), []string{dst}, VerifyOptions{})
	var reasons []string
	for _, pr := range rep.Problems {
		reasons = append(reasons, pr.Reason)
	}
	all := strings.Join(reasons, "; ")
	for _, want := range []string{"records, manifest says", "bytes, manifest says", "sha256", "entries, shard has"} {
		if !strings.Contains(all, want) {
			t.Errorf("appended record: no %q problem in %q", want, all)
		}
	}
}

func TestInspect(t *testing.T) {
	root := makeFolder(t, []string{"x", "y"}, 3)
	src, _ := source.OpenImageFolder(root)
	dst := t.TempDir()
	Pack(context.Background(), src, root, dst, PackOptions{Shards: 1})
	s, err := Inspect(context.Background(), filepath.Join(dst, Name("train", 0, 1)), 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.Records != 6 || len(s.First) != 2 || s.First[0].Filename != "x/img000.jpg" || *s.First[0].Label != 0 || s.First[0].Class != "x" {
		t.Fatalf("summary %+v", s)
	}
	var keys []string
	for _, f := range s.Features {
		keys = append(keys, f.Key+":"+f.Type)
		if f.Records != 6 {
			t.Errorf("%s in %d records", f.Key, f.Records)
		}
	}
	want := "image/class/label:int64 image/class/text:bytes image/encoded:bytes image/filename:bytes image/format:bytes image/height:int64 image/width:int64"
	if strings.Join(keys, " ") != want {
		t.Fatalf("features %s", strings.Join(keys, " "))
	}
	// A file of non-Example records with corruption at the end.
	other := filepath.Join(t.TempDir(), "raw.tfrecord")
	raw := tfrecord.AppendRecord(tfrecord.AppendRecord(nil, []byte{0xff, 0xff}), []byte{})
	os.WriteFile(other, append(raw, 1, 2, 3), 0o644)
	s, err = Inspect(context.Background(), other, 5)
	if err != nil || s.Records != 2 || s.NotExamples != 1 || !strings.Contains(s.Error, "offset") {
		t.Fatalf("raw file summary %+v, %v", s, err)
	}
}

// Packing the real Fashion-MNIST gives one record per image whose label and
// pixels match the IDX files.
func TestPackRealFashionMNIST(t *testing.T) {
	const dir = testenv.FashionMNISTDir
	if _, err := os.Stat(dir); err != nil {
		testenv.Missing(t, "Fashion-MNIST missing")
	}
	split := "train" // 60,000 records; the race detector makes it slow, so use test there
	if raceEnabled {
		split = "test"
	}
	src, err := source.OpenIDX(dir, split)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	res, err := Pack(context.Background(), src, dir, dst, PackOptions{Split: split})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"train": 60000, "test": 10000}[split]
	if res.Records != int64(want) || res.Skipped != 0 {
		t.Fatalf("packed %d records, want %d", res.Records, want)
	}
	seen := make([]bool, want)
	m, _ := LoadManifest(dst)
	for _, si := range m.Splits[split].Shards {
		for _, r := range readShard(t, filepath.Join(dst, si.Name)) {
			name, _ := r.ex.Bytes(KeyFilename)
			var i int
			fmt.Sscanf(strings.TrimPrefix(string(name), split+"/"), "%05d.png", &i)
			label, _ := r.ex.Int64(KeyLabel)
			if seen[i] || int(label) != src.Items()[i].Label {
				t.Fatalf("%s: label %d, IDX says %d (seen before: %v)", name, label, src.Items()[i].Label, seen[i])
			}
			seen[i] = true
			if i%997 == 0 {
				enc, _ := r.ex.Bytes(KeyEncoded)
				img, err := png.Decode(bytes.NewReader(enc))
				if err != nil || !bytes.Equal(img.(*image.Gray).Pix, src.Pixels(i)) {
					t.Fatalf("%s: pixels differ from the IDX file (%v)", name, err)
				}
			}
		}
	}
	if slices.Contains(seen, false) {
		t.Fatal("some images were not packed")
	}
	rep, err := Verify(context.Background(), []string{dst}, VerifyOptions{})
	if err != nil || !rep.OK() || rep.Records != int64(want) {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// loadOrdered keeps the order, and stops every goroutine on an early stop
// and on cancellation.
func TestLoadOrderedStopsCleanly(t *testing.T) {
	root := makeFolder(t, []string{"a"}, 40)
	src, _ := source.OpenImageFolder(root)
	idxs := make([]int, len(src.Items()))
	for i := range idxs {
		idxs[i] = len(idxs) - 1 - i // reverse: order must follow idxs
	}
	base := runtime.NumGoroutine()
	var got []string
	err := loadOrdered(context.Background(), src, idxs, 4, func(s source.Sample, err error) error {
		got = append(got, s.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range got {
		if k != src.Items()[idxs[i]].Key {
			t.Fatalf("position %d: %s, want %s", i, k, src.Items()[idxs[i]].Key)
		}
	}
	stop := errors.New("enough")
	for _, breakAt := range []int{0, 1, 5, 39} {
		n := 0
		err := loadOrdered(context.Background(), src, idxs, 4, func(source.Sample, error) error {
			if n == breakAt {
				return stop
			}
			n++
			return nil
		})
		if !errors.Is(err, stop) {
			t.Fatalf("break at %d: %v", breakAt, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err = loadOrdered(ctx, src, idxs, 3, func(source.Sample, error) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	testenv.GoroutinesBack(t, base)
}
