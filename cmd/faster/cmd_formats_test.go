package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"

	"github.com/faster-training/faster/internal/testenv"
)

// writePNGFolder writes an ImageFolder of small PNGs (lossless, so raw
// Datums hold exactly the same pixels).
func writePNGFolder(t *testing.T, classes, per int) string {
	root := t.TempDir()
	for c := range classes {
		d := filepath.Join(root, fmt.Sprintf("c%d", c))
		os.MkdirAll(d, 0o755)
		for i := range per {
			img := image.NewRGBA(image.Rect(0, 0, 40+i, 36))
			for y := range 36 {
				for x := range 40 + i {
					img.Set(x, y, color.RGBA{uint8(x*6 + c*40), uint8(y * 7), uint8(i*30 + x*y), 255})
				}
			}
			var b bytes.Buffer
			png.Encode(&b, img)
			os.WriteFile(filepath.Join(d, fmt.Sprintf("%02d.png", i)), b.Bytes(), 0o644)
		}
	}
	return root
}

// needPython3LMDB skips (or fails under FASTER_REQUIRE_DATA=1) without
// Debian's python3-lmdb and python3-pil.
func needPython3LMDB(t *testing.T) {
	t.Helper()
	if err := exec.Command(testenv.Python, "-c", "import lmdb, PIL").Run(); err != nil {
		testenv.Missing(t, "python3-lmdb / python3-pil missing: %v", err)
	}
}

func loadKeys(t *testing.T, data string, extra ...string) []string {
	t.Helper()
	keys := filepath.Join(t.TempDir(), "keys.txt")
	args := append([]string{"bench", "load", data, "--transform", "eval", "--resolution", "24", "--batch", "5", "--dump-keys", keys, "--json"}, extra...)
	if code, _, errs := runCLI(t, args...); code != 0 {
		t.Fatalf("bench load %s: exit %d: %s", data, code, errs)
	}
	b, _ := os.ReadFile(keys)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func evalPixels(t *testing.T, data string) [][]byte {
	t.Helper()
	l, err := loader.Open(data, loader.Options{Transform: loader.Eval, Resolution: 24, Batch: 4, Layout: loader.U8HWC})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var rows [][]byte
	for b, err := range l.Iter(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Valid {
			rows = append(rows, slices.Clone(b.Data[i*24*24*3:(i+1)*24*24*3]))
		}
		b.Release()
	}
	return rows
}

// TestFormatsSameSamples: the same images as an ImageFolder, TFRecord
// shards, WebDataset shards (ours and Python's tarfile) and Caffe LMDBs
// written by Python's lmdb (encoded and raw Datums) give the same keys
// and the same pixels.
func TestFormatsSameSamples(t *testing.T) {
	needPython3LMDB(t)
	root := writePNGFolder(t, 3, 5)
	tmp := t.TempDir()
	tfr, wds := filepath.Join(tmp, "tfr"), filepath.Join(tmp, "wds")
	pyTar, lmdbEnc, lmdbRaw := filepath.Join(tmp, "py.tar"), filepath.Join(tmp, "enc.lmdb"), filepath.Join(tmp, "raw.lmdb")
	if code, _, errs := runCLI(t, "pack", root, tfr, "--shards", "3"); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := runCLI(t, "pack", root, wds, "--shards", "2", "--format", "wds"); code != 0 {
		t.Fatal(errs)
	}
	if out, err := exec.Command(testenv.Python, "testdata/write_formats.py", root, pyTar, lmdbEnc, lmdbRaw).CombinedOutput(); err != nil {
		t.Fatalf("write_formats.py: %v\n%s", err, out)
	}
	want := loadKeys(t, root)
	if len(want) != 15 {
		t.Fatalf("%d keys", len(want))
	}
	wantPix := evalPixels(t, root)
	sources := []string{tfr, wds, pyTar, lmdbEnc, lmdbRaw}
	if _, err := source.OpenLMDB(lmdbEnc); errors.Is(err, source.ErrNoCgo) {
		sources = sources[:3] // CGO_ENABLED=0: no LMDB reader
	}
	for _, data := range sources {
		extra := []string{}
		if data == tfr {
			extra = append(extra, "--global-shuffle")
		}
		if got := loadKeys(t, data, extra...); !slices.Equal(got, want) {
			t.Errorf("%s: keys %q, want %q", data, got, want)
		}
		if data == tfr {
			continue
		}
		pix := evalPixels(t, data)
		for i := range wantPix {
			if i >= len(pix) || !bytes.Equal(pix[i], wantPix[i]) {
				t.Errorf("%s: sample %d: pixels differ", data, i)
				break
			}
		}
	}
	// Verify and inspect know every format.
	for _, data := range sources {
		if code, out, errs := runCLI(t, "verify", data); code != 0 {
			t.Errorf("verify %s: exit %d: %s %s", data, code, out, errs)
		}
		if code, out, errs := runCLI(t, "inspect", data, "--json"); code != 0 || !strings.Contains(out, `"records": 15`) {
			t.Errorf("inspect %s: exit %d: %s %s", data, code, out, errs)
		}
	}
	// A Datum that does not parse is found by verify, naming the key.
	// (Checked at the source level in source tests; here: a damaged tar.)
	b, _ := os.ReadFile(filepath.Join(wds, "train-00000-of-00002.tar"))
	b[600] ^= 0xff
	os.WriteFile(filepath.Join(wds, "train-00000-of-00002.tar"), b, 0o644)
	if code, out, _ := runCLI(t, "verify", wds); code != 1 || !strings.Contains(out, "sha256") {
		t.Errorf("verify of a damaged tar: exit %d: %s", code, out)
	}
}

// TestCorruptShards: flipped bytes, a truncated tail and appended garbage
// are detected every time: stop mode fails naming file and offset; skip
// mode serves every good sample exactly once and lists every bad one.
func TestCorruptShards(t *testing.T) {
	root := writeFolder(t, 2, 12)
	dst := filepath.Join(t.TempDir(), "shards")
	if code, _, errs := runCLI(t, "pack", root, dst, "--shards", "4"); code != 0 {
		t.Fatal(errs)
	}
	m, _ := shard.LoadManifest(dst)
	sh := m.Splits["train"].Shards
	rng := rand.New(rand.NewPCG(uint64(len(sh)), 7))
	// Shard 0: flip a byte inside a random record; shard 1: cut the tail;
	// shard 2: append garbage.
	p0 := filepath.Join(dst, sh[0].Name)
	b0, _ := os.ReadFile(p0)
	b0[20+rng.IntN(len(b0)/2)] ^= 0x10
	os.WriteFile(p0, b0, 0o644)
	p1 := filepath.Join(dst, sh[1].Name)
	b1, _ := os.ReadFile(p1)
	os.WriteFile(p1, b1[:len(b1)-7], 0o644)
	p2 := filepath.Join(dst, sh[2].Name)
	os.WriteFile(p2, append(mustRead(t, p2), []byte("GARBAGE APPENDED AFTER THE LAST RECORD")...), 0o644)

	for _, global := range []bool{false, true} {
		extra := []string{}
		if global {
			extra = append(extra, "--global-shuffle")
		}
		code, _, errs := runCLI(t, append([]string{"bench", "load", dst, "--transform", "none", "--batch", "4"}, extra...)...)
		if code != 1 || !strings.Contains(errs, "offset") || !strings.Contains(errs, "train-0000") {
			t.Fatalf("stop mode (global %v): exit %d: %s", global, code, errs)
		}
		q := filepath.Join(t.TempDir(), "bad.jsonl")
		keys := filepath.Join(t.TempDir(), "keys.txt")
		code, out, errs := runCLI(t, append([]string{"bench", "load", dst, "--transform", "eval", "--resolution", "16", "--batch", "4",
			"--on-error", "skip", "--quarantine", q, "--dump-keys", keys, "--json"}, extra...)...)
		if code != 0 {
			t.Fatalf("skip mode: exit %d: %s", code, errs)
		}
		var r struct{ Images, Repeats, Bad int }
		json.Unmarshal([]byte(out), &r)
		lines := strings.Split(strings.TrimSpace(string(mustRead(t, q))), "\n")
		served := strings.Split(strings.TrimSpace(string(mustRead(t, keys))), "\n")
		uniq := map[string]bool{}
		for _, k := range served {
			if uniq[k] {
				t.Fatalf("key %s served twice", k)
			}
			uniq[k] = true
		}
		// One record lost to the flip, one to the cut; the garbage after
		// shard 2's last record loses none but is listed (streaming).
		// Shards 1 and 2 are also listed once each for a size that is not
		// the manifest's (checked before the epoch trusts their counts).
		// The epoch keeps its 24 rows (its steps are known before it runs),
		// two of them repeats.
		if len(served) != 22 || r.Images != 24 || r.Repeats != 2 {
			t.Errorf("global %v: served %d (want 22), %d rows with %d repeats (want 24, 2); quarantine %q", global, len(served), r.Images, r.Repeats, lines)
		}
		// Streaming meets shard 2's trailing garbage at the offset where its
		// size check already listed the shard: one entry for both.
		wantBad := 3 + 2 - 1
		if global {
			wantBad = 2 + 2 // random access by index never reads the appended bytes
		}
		if len(lines) != wantBad || r.Bad != wantBad {
			t.Errorf("global %v: %d quarantined, want %d: %q", global, len(lines), wantBad, lines)
		}
		for _, l := range lines {
			var b loader.BadSample
			if json.Unmarshal([]byte(l), &b) != nil || !strings.Contains(b.Path, "train-0000") || b.Offset < 0 {
				t.Errorf("quarantine line %q", l)
			}
		}
		// A budget of 1 is exceeded.
		if code, _, errs := runCLI(t, append([]string{"bench", "load", dst, "--transform", "none", "--batch", "4", "--on-error", "skip", "--max-bad", "1"}, extra...)...); code != 1 || !strings.Contains(errs, "too many bad") {
			t.Errorf("budget: exit %d: %s", code, errs)
		}
	}
	code, out, _ := runCLI(t, "verify", dst)
	if code != 1 || strings.Count(out, "BAD") < 3 {
		t.Errorf("verify: exit %d: %s", code, out)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResumeElastic kills each rank at a random step, then resumes with
// another number of ranks: the union of served samples is one epoch, with
// no duplicates.
func TestResumeElastic(t *testing.T) {
	root := writeFolder(t, 3, 9) // 27 images
	tfr := filepath.Join(t.TempDir(), "shards")
	if code, _, errs := runCLI(t, "pack", root, tfr, "--shards", "3"); code != 0 {
		t.Fatal(errs)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		data          string
		global        bool
		before, after int
	}{{root, false, 2, 2}, {root, false, 3, 2}, {root, false, 2, 4}, {tfr, true, 3, 1}} {
		dir := t.TempDir()
		seen := map[string]int{}
		common := []string{"bench", "load", tc.data, "--transform", "train", "--resolution", "16", "--batch", "2", "--seed", "11"}
		if tc.global {
			common = append(common, "--global-shuffle")
		}
		var states []string
		for r := range tc.before {
			st, keys := filepath.Join(dir, fmt.Sprintf("s%d.json", r)), filepath.Join(dir, fmt.Sprintf("k%d.txt", r))
			k := 1 + rng.IntN(4)
			args := append(slices.Clone(common), "--num-shards", fmt.Sprint(tc.before), "--shard-index", fmt.Sprint(r),
				"--steps", fmt.Sprint(k), "--save-state", st, "--dump-keys", keys)
			if code, _, errs := runCLI(t, args...); code != 0 {
				t.Fatalf("rank %d: %s", r, errs)
			}
			states = append(states, st)
			for _, key := range strings.Fields(string(mustRead(t, keys))) {
				seen[key]++
			}
		}
		for r := range tc.after {
			keys := filepath.Join(dir, fmt.Sprintf("r%d.txt", r))
			args := append(slices.Clone(common), "--num-shards", fmt.Sprint(tc.after), "--shard-index", fmt.Sprint(r), "--dump-keys", keys)
			for _, s := range states {
				args = append(args, "--resume-from", s)
			}
			if code, _, errs := runCLI(t, args...); code != 0 {
				t.Fatalf("resume rank %d: %s", r, errs)
			}
			for _, key := range strings.Fields(string(mustRead(t, keys))) {
				seen[key]++
			}
		}
		if len(seen) != 27 {
			t.Errorf("%+v: %d distinct samples served, want 27", tc, len(seen))
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%+v: %s served %d times", tc, k, n)
			}
		}
	}
}

// The same real photographs (Debian mate-backgrounds, downscaled JPEGs)
// through an ImageFolder, our TFRecord and WebDataset shards, a tar from
// Python's tarfile and Caffe LMDBs from Python's lmdb (encoded and raw
// Datums) give the same keys and, for every encoded format, the same eval
// pixels; a raw Datum holds exactly the pixels of the JPEG it came from.
func TestFormatsSameSamplesRealPhotos(t *testing.T) {
	needPython3LMDB(t)
	photos, _ := filepath.Glob(testenv.PhotoDir + "/*.jpg")
	if len(photos) < 4 {
		testenv.Missing(t, "mate-backgrounds missing")
	}
	root := t.TempDir()
	script := `
import os, sys
from PIL import Image
root, files = sys.argv[1], sys.argv[2:]
for i, f in enumerate(files):
    d = os.path.join(root, "class%d" % (i % 2))
    os.makedirs(d, exist_ok=True)
    im = Image.open(f).convert("RGB")
    im.thumbnail((480, 480))
    im.save(os.path.join(d, os.path.basename(f)), "JPEG", quality=90)
`
	args := append([]string{"-c", script, root}, photos[:6]...)
	if out, err := exec.Command(testenv.Python, args...).CombinedOutput(); err != nil {
		t.Fatalf("making the photo tree: %v\n%s", err, out)
	}
	tmp := t.TempDir()
	tfr, wds := filepath.Join(tmp, "tfr"), filepath.Join(tmp, "wds")
	pyTar, lmdbEnc, lmdbRaw := filepath.Join(tmp, "py.tar"), filepath.Join(tmp, "enc.lmdb"), filepath.Join(tmp, "raw.lmdb")
	if code, _, errs := runCLI(t, "pack", root, tfr, "--shards", "2"); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := runCLI(t, "pack", root, wds, "--shards", "2", "--format", "wds"); code != 0 {
		t.Fatal(errs)
	}
	if out, err := exec.Command(testenv.Python, "testdata/write_formats.py", root, pyTar, lmdbEnc, lmdbRaw).CombinedOutput(); err != nil {
		t.Fatalf("write_formats.py: %v\n%s", err, out)
	}
	want, wantPix := loadKeys(t, root), evalPixels(t, root)
	if len(want) != 6 {
		t.Fatalf("%d keys", len(want))
	}
	encoded := []string{tfr, wds, pyTar, lmdbEnc}
	lmdbOK := true
	if _, err := source.OpenLMDB(lmdbEnc); errors.Is(err, source.ErrNoCgo) {
		encoded, lmdbOK = encoded[:3], false
	}
	all := encoded
	if lmdbOK {
		all = append(slices.Clone(encoded), lmdbRaw)
	}
	for _, data := range all {
		if got := loadKeys(t, data); !slices.Equal(got, want) {
			t.Errorf("%s: keys %q, want %q", data, got, want)
		}
	}
	for _, data := range encoded {
		pix := evalPixels(t, data)
		for i := range wantPix {
			if i >= len(pix) || !bytes.Equal(pix[i], wantPix[i]) {
				t.Errorf("%s: sample %d: pixels differ", data, i)
				break
			}
		}
	}
	if !lmdbOK {
		return
	}
	// Raw Datums: PIL decoded the JPEG with libjpeg-turbo; our full-size
	// decode of the same file gives the same pixels.
	raw, err := source.OpenLMDB(lmdbRaw)
	if err != nil {
		t.Fatal(err)
	}
	folder, _ := source.OpenImageFolder(root)
	for i, it := range raw.Items() {
		s, err := raw.Load(i)
		if err != nil {
			t.Fatal(err)
		}
		got, err := imgcodec.Decode(s.Data, nil)
		if err != nil {
			t.Fatal(err)
		}
		var jpg source.Sample
		for j, f := range folder.Items() {
			if f.Key == it.Key {
				jpg, _ = folder.Load(j)
			}
		}
		ref, err := imgcodec.Decode(jpg.Data, nil)
		if err != nil || ref.Width != got.Width || ref.Height != got.Height {
			t.Fatalf("%s: %v", it.Key, err)
		}
		diff := 0
		for k := range ref.Pix {
			if d := int(ref.Pix[k]) - int(got.Pix[k]); d > 1 || d < -1 {
				diff++
			}
		}
		if diff > len(ref.Pix)/1000 {
			t.Errorf("%s: %d of %d raw Datum samples differ by more than 1 from the JPEG's pixels", it.Key, diff, len(ref.Pix))
		}
	}
}
