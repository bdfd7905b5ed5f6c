package downscale

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/atomicfile"

	"github.com/faster-training/faster/internal/testenv"
)

const mateDir = testenv.MateDir

// needFile skips the test when path is missing, or fails it when
// FASTER_REQUIRE_DATA=1.
func needFile(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		testenv.Missing(t, "%s missing: run scripts/setup.sh", path)
	}
}

// photo makes a w x h RGB test picture with smooth gradients and edges,
// encoded as JPEG.
func photo(t testing.TB, w, h int) []byte {
	t.Helper()
	img := imgcodec.NewImage(w, h, 3)
	defer img.Release()
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p := img.Pix[y*img.Stride+3*x:]
			p[0] = uint8(x * 255 / max(w-1, 1))
			p[1] = uint8(y * 255 / max(h-1, 1))
			p[2] = uint8(((x / 7) ^ (y / 5)) * 37)
		}
	}
	var b bytes.Buffer
	if err := imgcodec.EncodeJPEG(&b, img, 90); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeTree(t testing.TB, root string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o666); err != nil {
			t.Fatal(err)
		}
	}
}

// listTree returns the files under root, slash-separated and relative.
func listTree(t testing.TB, root string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if !info.IsDir() {
			rel, _ := filepath.Rel(root, p)
			got[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	return got
}

func noTemps(t testing.TB, root string) {
	t.Helper()
	for name := range listTree(t, root) {
		if atomicfile.IsTemp(filepath.Base(name)) {
			t.Errorf("temporary file left behind: %s", name)
		}
	}
}

func decodeFile(t testing.TB, path string) *imgcodec.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := imgcodec.Decode(data, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// readPNG decodes a golden PNG (gray or RGB) into an imgcodec.Image.
func readPNG(t testing.TB, path string) *imgcodec.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := m.Bounds()
	if g, ok := m.(*image.Gray); ok {
		out := imgcodec.NewImage(b.Dx(), b.Dy(), 1)
		for y := 0; y < b.Dy(); y++ {
			copy(out.Pix[y*out.Stride:], g.Pix[y*g.Stride:y*g.Stride+b.Dx()])
		}
		return out
	}
	out := imgcodec.NewImage(b.Dx(), b.Dy(), 3)
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			r, g, bl, _ := m.At(b.Min.X+x, b.Min.Y+y).RGBA()
			p := out.Pix[y*out.Stride+3*x:]
			p[0], p[1], p[2] = uint8(r>>8), uint8(g>>8), uint8(bl>>8)
		}
	}
	return out
}

func psnr(t testing.TB, a, b *imgcodec.Image) float64 {
	t.Helper()
	if a.Width != b.Width || a.Height != b.Height || a.Channels != b.Channels {
		t.Fatalf("size %dx%dx%d vs %dx%dx%d", a.Width, a.Height, a.Channels, b.Width, b.Height, b.Channels)
	}
	var se float64
	n := 0
	for y := 0; y < a.Height; y++ {
		ra := a.Pix[y*a.Stride : y*a.Stride+a.Width*a.Channels]
		rb := b.Pix[y*b.Stride : y*b.Stride+b.Width*b.Channels]
		for i := range ra {
			d := float64(ra[i]) - float64(rb[i])
			se += d * d
			n++
		}
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(se/float64(n)))
}

// checkGoroutines fails if goroutines started by the test are still
// running shortly after it ends.
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Errorf("goroutine leak: %d before, %d after", before, n)
		}
	})
}

// withOrientation inserts an APP1 Exif segment holding orientation o
// after the SOI of a JPEG, in the byte order bo.
func withOrientation(jpg []byte, o int, bo binary.ByteOrder) []byte {
	t := make([]byte, 8+2+12+4)
	if bo == binary.LittleEndian {
		copy(t, "II")
	} else {
		copy(t, "MM")
	}
	bo.PutUint16(t[2:], 42)
	bo.PutUint32(t[4:], 8)
	bo.PutUint16(t[8:], 1)
	bo.PutUint16(t[10:], 0x0112)
	bo.PutUint16(t[12:], 3)
	bo.PutUint32(t[14:], 1)
	bo.PutUint16(t[18:], uint16(o))
	seg := append([]byte("Exif\x00\x00"), t...)
	out := []byte{0xFF, 0xD8, 0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(out[4:], uint16(len(seg)+2))
	out = append(out, seg...)
	return append(out, jpg[2:]...)
}
