package downscale

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
)

func TestSizeSeedRule(t *testing.T) {
	for _, c := range []struct{ w, h, n, ow, oh int }{
		{500, 375, 256, 341, 256}, // int(500/375*256) = int(341.33)
		{375, 500, 256, 256, 341},
		{300, 300, 256, 256, 256},
		{257, 1000, 256, 256, 996}, // int(1000/257*256) = 996.1
		{4000, 3, 2, 2666, 2},
	} {
		ow, oh, ok := Size(c.w, c.h, c.n)
		if !ok || ow != c.ow || oh != c.oh {
			t.Errorf("Size(%d, %d, %d) = %d, %d, %v; want %d, %d", c.w, c.h, c.n, ow, oh, ok, c.ow, c.oh)
		}
	}
	for _, c := range [][3]int{{256, 1000, 256}, {100, 80, 256}, {256, 256, 256}} {
		if _, _, ok := Size(c[0], c[1], c[2]); ok {
			t.Errorf("Size(%v) resizes an image whose shorter edge is at most N", c)
		}
	}
	// The seed's (long/short)*N and torchvision's N*long/short differ.
	if ow, _, _ := Size(2013, 231, 224); ow != 1951 {
		t.Errorf("Size(2013, 231, 224) width %d, want the seed's 1951", ow)
	}
	if aw, _ := augment.ShorterEdgeSize(2013, 231, 224); aw != 1952 {
		t.Logf("augment.ShorterEdgeSize changed: %d", aw)
	}
}

// TestSeedGeometryRealPhotos checks Size against the sizes the seed's
// formula gives in Python (testdata/geometry.json, from gen.py), and that
// Run writes images of exactly those sizes from the real photographs.
func TestSeedGeometryRealPhotos(t *testing.T) {
	raw, err := os.ReadFile("testdata/geometry.json")
	if err != nil {
		t.Fatal(err)
	}
	var geo map[string]struct {
		Width, Height int
		Sizes         map[string]*[2]int
	}
	if err := json.Unmarshal(raw, &geo); err != nil {
		t.Fatal(err)
	}
	for name, g := range geo {
		for ns, want := range g.Sizes {
			n, _ := strconv.Atoi(ns)
			ow, oh, ok := Size(g.Width, g.Height, n)
			if ok != (want != nil) || (ok && (ow != want[0] || oh != want[1])) {
				t.Errorf("%s N=%d: got %dx%d (%v), seed %v", name, n, ow, oh, ok, want)
			}
		}
	}
	needFile(t, filepath.Join(mateDir, "nature/LadyBird.jpg"))
	src, dst := t.TempDir(), t.TempDir()
	picks := []string{"nature/FreshFlower.jpg", "desktop/GreenTraditional.jpg", "nature/Aqua.jpg", "nature/GreenMeadow.jpg"}
	for _, p := range picks {
		data, err := os.ReadFile(filepath.Join(mateDir, p))
		if err != nil {
			t.Fatal(err)
		}
		writeTree(t, src, map[string][]byte{p: data})
	}
	for _, n := range []int{224, 1079} {
		out := filepath.Join(dst, strconv.Itoa(n))
		res, err := Run(context.Background(), src, out, Options{MaxSize: n, Workers: 2})
		if err != nil || res.Failed != 0 {
			t.Fatal(err, res.Failures)
		}
		for _, p := range picks {
			g := geo[p]
			want := g.Sizes[strconv.Itoa(n)]
			cfgData, _ := os.ReadFile(filepath.Join(out, p))
			cfg, err := imgcodec.DecodeConfig(cfgData)
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				if cfg.Width != g.Width || cfg.Height != g.Height {
					t.Errorf("%s N=%d: copy has size %dx%d", p, n, cfg.Width, cfg.Height)
				}
				continue
			}
			if cfg.Width != want[0] || cfg.Height != want[1] {
				t.Errorf("%s N=%d: wrote %dx%d, seed gives %v", p, n, cfg.Width, cfg.Height, *want)
			}
		}
	}
}

// TestAreaMatchesOpenCV compares the resize path with scaled decode off
// against cv2.resize(INTER_AREA) of the same files (testdata/gen.py).
func TestAreaMatchesOpenCV(t *testing.T) {
	for _, name := range []string{"landscape", "portrait", "gray"} {
		data, err := os.ReadFile("testdata/src_" + name + ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		want := readPNG(t, "testdata/cv2_"+name+".png")
		cfg, err := imgcodec.DecodeConfig(data)
		if err != nil {
			t.Fatal(err)
		}
		ow, oh, ok := Size(cfg.Width, cfg.Height, 96)
		if !ok || ow != want.Width || oh != want.Height {
			t.Fatalf("%s: size %dx%d, cv2 %dx%d", name, ow, oh, want.Width, want.Height)
		}
		var rz augment.Resizer
		got, err := resize(&rz, data, cfg, 1, ow, oh, &Options{MaxSize: 96, NoScaledDecode: true})
		if err != nil {
			t.Fatal(err)
		}
		p := psnr(t, got, want)
		t.Logf("%s (%s decoder): %.1f dB vs OpenCV INTER_AREA", name, imgcodec.Backend, p)
		if p < 40 {
			t.Errorf("%s: %.1f dB vs OpenCV, want >= 40", name, p)
		}
		got.Release()
		want.Release()
	}
}

// TestScaledDecodePSNR measures the DCT-scaled path against the exact one
// on real photographs, the evidence behind MinScaledEdge.
func TestScaledDecodePSNR(t *testing.T) {
	needFile(t, filepath.Join(mateDir, "nature/LadyBird.jpg"))
	var rz augment.Resizer
	for _, f := range []string{"nature/LadyBird.jpg", "nature/Garden.jpg", "desktop/GreenTraditional.jpg"} {
		data, err := os.ReadFile(filepath.Join(mateDir, f))
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := imgcodec.DecodeConfig(data)
		for _, n := range []int{96, 256} {
			ow, oh, _ := Size(cfg.Width, cfg.Height, n)
			exact, err := resize(&rz, data, cfg, 1, ow, oh, &Options{MaxSize: n, NoScaledDecode: true})
			if err != nil {
				t.Fatal(err)
			}
			scaled, err := resize(&rz, data, cfg, 1, ow, oh, &Options{MaxSize: n})
			if err != nil {
				t.Fatal(err)
			}
			p := psnr(t, scaled, exact)
			t.Logf("%s N=%d 1/%d: %.1f dB vs the exact path", f, n, ScaleDenom(cfg.Width, cfg.Height, n), p)
			if p < 40 {
				t.Errorf("%s N=%d: scaled decode %.1f dB from the exact path", f, n, p)
			}
			exact.Release()
			scaled.Release()
		}
	}
}

func TestScaleDenom(t *testing.T) {
	for _, c := range [][4]int{{500, 375, 256, 1}, {1920, 1080, 256, 2}, {3840, 2160, 256, 4}, {5640, 4096, 256, 8}, {5640, 3172, 96, 8}} {
		if d := ScaleDenom(c[0], c[1], c[2]); d != c[3] {
			t.Errorf("ScaleDenom(%d, %d, %d) = %d, want %d", c[0], c[1], c[2], d, c[3])
		}
	}
}

func TestTreeCopyAndPolicies(t *testing.T) {
	checkGoroutines(t)
	small := photo(t, 120, 90)
	big := photo(t, 400, 300)
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, src, map[string][]byte{
		"train/n01/a.JPEG":       big,
		"train/n01/small.jpg":    small,
		"train/n02/deep/b.jpeg":  big,
		"val/n01/c.JPEG":         big,
		"test/x/y/z/d.jpg":       small,
		"README.txt":             []byte("hello"),
		"train/n01/labels.csv":   []byte("a,1\n"),
		"train/n01/empty.jpg":    {},
		"train/n01/garbage.jpg":  []byte("this is not an image at all"),
		"val/n01/truncated.JPEG": big[:len(big)/2],
	})
	if err := os.MkdirAll(filepath.Join(src, "val/emptydir"), 0o777); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), src, dst, Options{MaxSize: 100, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resized != 3 || res.Copied != 2 || res.Failed != 3 || res.OtherCopied != 2 || res.Images != 8 {
		t.Fatalf("result %+v", res)
	}
	wantFail := []string{"train/n01/empty.jpg", "train/n01/garbage.jpg", "val/n01/truncated.JPEG"}
	for i, f := range res.Failures {
		if f.Path != wantFail[i] || f.Reason == "" {
			t.Errorf("failure %d: %+v, want %s", i, f, wantFail[i])
		}
	}
	got := listTree(t, dst)
	for _, f := range wantFail {
		if got[f] {
			t.Errorf("output written for bad file %s", f)
		}
	}
	for _, f := range []string{"train/n01/a.JPEG", "train/n02/deep/b.jpeg", "val/n01/c.JPEG"} {
		img := decodeFile(t, filepath.Join(dst, f))
		if img.Width != 133 || img.Height != 100 {
			t.Errorf("%s: %dx%d, want 133x100", f, img.Width, img.Height)
		}
		img.Release()
	}
	for f, want := range map[string][]byte{"train/n01/small.jpg": small, "test/x/y/z/d.jpg": small, "README.txt": []byte("hello")} {
		b, err := os.ReadFile(filepath.Join(dst, f))
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s: not copied byte for byte (%v)", f, err)
		}
	}
	if st, err := os.Stat(filepath.Join(dst, "val/emptydir")); err != nil || !st.IsDir() {
		t.Errorf("empty folder not mirrored: %v", err)
	}
	noTemps(t, dst)

	// Non-images skipped by policy.
	dst2 := filepath.Join(t.TempDir(), "out2")
	res, err = Run(context.Background(), src, dst2, Options{MaxSize: 100, NonImages: SkipNonImages})
	if err != nil || res.OtherSkipped != 2 || res.OtherCopied != 0 {
		t.Fatalf("skip policy: %v %+v", err, res)
	}
	if got := listTree(t, dst2); got["README.txt"] || got["train/n01/labels.csv"] {
		t.Errorf("non-image files written under skip policy")
	}
}

func TestResume(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	writeTree(t, src, map[string][]byte{
		"a/1.jpg": photo(t, 300, 200), "a/2.jpg": photo(t, 200, 300), "b/3.jpg": photo(t, 50, 50), "b/n.txt": []byte("x"),
	})
	o := Options{MaxSize: 64, Workers: 2}
	res, err := Run(context.Background(), src, dst, o)
	if err != nil || res.Resized != 2 || res.Copied != 1 || res.OtherCopied != 1 {
		t.Fatalf("first run: %v %+v", err, res)
	}
	res, err = Run(context.Background(), src, dst, o)
	if err != nil || res.Skipped != 4 || res.Resized+res.Copied+res.OtherCopied != 0 || res.BytesOut != 0 {
		t.Fatalf("second run did work: %v %+v", err, res)
	}
	// A newer source is redone; so is an output cut short.
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(src, "a/1.jpg"), future, future); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(dst, "a/2.jpg")
	b, _ := os.ReadFile(out2)
	if err := os.WriteFile(out2, b[:len(b)/2], 0o666); err != nil {
		t.Fatal(err)
	}
	res, err = Run(context.Background(), src, dst, o)
	if err != nil || res.Resized != 2 || res.Skipped != 2 {
		t.Fatalf("third run: %v %+v", err, res)
	}
	img := decodeFile(t, out2)
	img.Release()
}

func TestCancelLeavesNoPartialFiles(t *testing.T) {
	checkGoroutines(t)
	src, dst := t.TempDir(), t.TempDir()
	files := map[string][]byte{}
	big := photo(t, 320, 240)
	for i := range 40 {
		files["d"+strconv.Itoa(i%3)+"/"+strconv.Itoa(i)+".jpg"] = big
	}
	writeTree(t, src, files)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &cancelAfter{n: 5, cancel: cancel}
	res, err := Run(ctx, src, dst, Options{MaxSize: 64, Workers: 3, Progress: p})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res.Resized >= 40 {
		t.Errorf("cancelled run finished everything: %+v", res)
	}
	noTemps(t, dst)
	for name := range listTree(t, dst) {
		img := decodeFile(t, filepath.Join(dst, name)) // every output complete
		img.Release()
	}
	// A rerun completes the job.
	res, err = Run(context.Background(), src, dst, Options{MaxSize: 64, Workers: 3})
	if err != nil || res.Resized+res.Skipped != 40 {
		t.Fatalf("rerun: %v %+v", err, res)
	}
}

type cancelAfter struct {
	n      int64
	done   atomic.Int64
	cancel func()
}

func (c *cancelAfter) SetTotal(int64) {}
func (c *cancelAfter) Add(n, _ int64) {
	if c.done.Add(n) >= c.n {
		c.cancel()
	}
}

func TestPNGAndGrayAndEXIF(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	gray, err := os.ReadFile("testdata/src_gray.jpg")
	if err != nil {
		t.Fatal(err)
	}
	var pngBuf bytes.Buffer
	img := decodeFile(t, "testdata/src_landscape.jpg")
	if err := encode(&pngBuf, img, ".png", 0); err != nil {
		t.Fatal(err)
	}
	img.Release()
	rot := withOrientation(photo(t, 300, 200), 6, binary.LittleEndian)
	writeTree(t, src, map[string][]byte{"g.jpg": gray, "p.png": pngBuf.Bytes(), "rot.jpg": rot})

	for _, exif := range []bool{false, true} {
		out := filepath.Join(dst, strconv.FormatBool(exif))
		res, err := Run(context.Background(), src, out, Options{MaxSize: 96, EXIF: exif})
		if err != nil || res.Resized != 3 {
			t.Fatalf("%v %+v", err, res)
		}
		g := decodeFile(t, filepath.Join(out, "g.jpg"))
		cfgData, _ := os.ReadFile(filepath.Join(out, "g.jpg"))
		if cfg, _ := imgcodec.DecodeConfig(cfgData); cfg.Components != 1 {
			t.Errorf("gray JPEG written with %d components", cfg.Components)
		}
		g.Release()
		pngOut, _ := os.ReadFile(filepath.Join(out, "p.png"))
		if cfg, err := imgcodec.DecodeConfig(pngOut); err != nil || cfg.Format != "png" || cfg.Width != 142 || cfg.Height != 96 {
			t.Errorf("p.png: %+v %v", cfg, err)
		}
		r := decodeFile(t, filepath.Join(out, "rot.jpg"))
		wantW, wantH := 144, 96
		if exif {
			wantW, wantH = 96, 144
		}
		if r.Width != wantW || r.Height != wantH {
			t.Errorf("exif=%v: rot.jpg %dx%d, want %dx%d", exif, r.Width, r.Height, wantW, wantH)
		}
		r.Release()
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{MaxSize: 0, Workers: -1, Quality: 101}
	err := o.Validate()
	if !errors.Is(err, ErrOptions) {
		t.Fatalf("err = %v", err)
	}
	for _, s := range []string{"max size", "workers", "quality"} {
		if !bytes.Contains([]byte(err.Error()), []byte(s)) {
			t.Errorf("%q not reported in %v", s, err)
		}
	}
	if _, err := Run(context.Background(), t.TempDir()+"/missing", t.TempDir(), Options{MaxSize: 10}); !errors.Is(err, ErrSource) {
		t.Errorf("missing source: %v", err)
	}
	d := t.TempDir()
	if _, err := Run(context.Background(), d, d, Options{MaxSize: 10}); !errors.Is(err, ErrSource) {
		t.Errorf("same folder: %v", err)
	}
}

// TestDstInsideSrc checks that a destination inside the source is not
// walked (no output of outputs).
func TestDstInsideSrc(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string][]byte{"a/1.jpg": photo(t, 200, 150)})
	dst := filepath.Join(src, "resized")
	for range 2 {
		if _, err := Run(context.Background(), src, dst, Options{MaxSize: 64}); err != nil {
			t.Fatal(err)
		}
	}
	if got := listTree(t, dst); len(got) != 1 || !got["a/1.jpg"] {
		t.Errorf("dst holds %v", got)
	}
}

// TestRerunRemovesLeftoverTemps: the hidden temporary files a SIGKILLed
// run leaves (".X.tmp-N", empty or partial) are removed by the next run,
// in every output folder (before: they stayed for ever).
func TestRerunRemovesLeftoverTemps(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	writeTree(t, src, map[string][]byte{"a/1.jpg": photo(t, 200, 150), "2.jpg": photo(t, 90, 60)})
	if _, err := Run(context.Background(), src, dst, Options{MaxSize: 64}); err != nil {
		t.Fatal(err)
	}
	left := []string{filepath.Join(dst, ".2.jpg.tmp-123"), filepath.Join(dst, "a", ".1.jpg.tmp-456789")}
	for _, p := range left {
		os.WriteFile(p, nil, 0o644)
	}
	if _, err := Run(context.Background(), src, dst, Options{MaxSize: 64}); err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left behind", p)
		}
	}
}

// TestSymlinksAndSpecialFiles: a symlinked folder is mirrored (as
// ImageFolder and torchvision follow it), a loop is walked once, and a
// FIFO, a device or a dangling link is a counted failure naming it, never
// read (before: the linked folder's images were dropped silently, a FIFO
// ignored without a word).
func TestSymlinksAndSpecialFiles(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	writeTree(t, src, map[string][]byte{"a/1.jpg": photo(t, 200, 150)})
	other := t.TempDir()
	writeTree(t, other, map[string][]byte{"2.jpg": photo(t, 90, 60)})
	os.Symlink(other, filepath.Join(src, "linked"))
	os.Symlink("..", filepath.Join(src, "a", "up"))
	os.Symlink("/dev/null", filepath.Join(src, "a", "null.jpg"))
	os.Symlink("missing", filepath.Join(src, "a", "gone.jpg"))
	if err := syscall.Mkfifo(filepath.Join(src, "a", "pipe.jpg"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	res, err := Run(context.Background(), src, dst, Options{MaxSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	got := listTree(t, dst)
	if !got["a/1.jpg"] || !got["linked/2.jpg"] || len(got) != 2 {
		t.Fatalf("dst holds %v", got)
	}
	failed := map[string]bool{}
	for _, f := range res.Failures {
		failed[f.Path] = true
	}
	for _, p := range []string{"a/null.jpg", "a/gone.jpg", "a/pipe.jpg", "a/up"} {
		if !failed[p] {
			t.Errorf("%s: not a failure (%+v)", p, res.Failures)
		}
	}
}

// TestLongFileName: a source file with a legal 250-byte name is resized
// (before: its temporary name passed NAME_MAX, the run failed there, and
// every rerun stopped at the same file).
func TestLongFileName(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	name := strings.Repeat("n", 246) + ".jpg"
	writeTree(t, src, map[string][]byte{name: photo(t, 120, 90)})
	if _, err := Run(context.Background(), src, dst, Options{MaxSize: 64}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, name)); err != nil {
		t.Fatal(err)
	}
}
