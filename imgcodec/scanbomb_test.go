package imgcodec_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/imgcodec/jpegscan"
	"github.com/faster-training/faster/imgcodec/jpegtest"

	"github.com/faster-training/faster/internal/testenv"
)

// A scan bomb (issue 41 item 9): a progressive JPEG repeating a scan, each
// copy a few bytes and a pass over every block of the image (a 672 kB file
// of 999 scans took 31-35 s of CPU; the limit was 1,000 scans). Every
// decoder refuses it as corrupt from its markers, before decoding, and so
// does jpegscan.Check, which pack's check of a file calls (before: decoded).
func TestScanBombRefusedUnread(t *testing.T) {
	bomb := jpegtest.Progressive(512, 384, 3, 995) // 999 scans
	for _, d := range decoders() {
		img, err := d.decode(bomb, nil)
		if err == nil {
			img.Release()
			t.Fatalf("%s: a 999-scan bomb decoded", d.name)
		}
		if !errors.Is(err, imgcodec.ErrCorrupt) || errors.Is(err, imgcodec.ErrTruncated) || !strings.Contains(err.Error(), "999 scans") ||
			!strings.Contains(err.Error(), "refused unread (a scan bomb)") {
			t.Fatalf("%s: %v; want ErrCorrupt naming the 999 scans, refused unread", d.name, err)
		}
	}
	if imgcodec.Backend != "pure-go" {
		if _, err := imgcodec.DecodeJPEG420(bomb, nil); !errors.Is(err, imgcodec.ErrCorrupt) || !strings.Contains(err.Error(), "scan bomb") {
			t.Fatalf("planar decode: %v", err)
		}
	}
	if err := jpegscan.Check(bomb); !errors.Is(err, imgcodec.ErrCorrupt) || !strings.Contains(err.Error(), "999 scans") {
		t.Fatalf("CheckScans: %v", err)
	}
	// The header is fine: what it says is not the damage.
	if cfg, err := imgcodec.DecodeConfig(bomb); err != nil || cfg.Width != 512 {
		t.Fatalf("DecodeConfig: %+v, %v", cfg, err)
	}
}

// The limit is MaxScanPasses passes over the image's blocks, each scan
// counting the blocks of its components: a gray image may have 64 scans
// (one a coefficient), not 65; a 4:4:4 one 64 passes of interleaved DC and
// single-component AC scans. At the limit every decoder decodes the image
// (flat mid-grey); one scan more is refused.
func TestScanPassesLimit(t *testing.T) {
	for _, c := range []struct {
		comps, extra int // jpegtest.Progressive's: 2+extra passes of gray, 2+extra/3 of three components
	}{{1, 62}, {3, 186}} {
		at := jpegtest.Progressive(40, 24, c.comps, c.extra)
		over := jpegtest.Progressive(40, 24, c.comps, c.extra+1)
		for _, d := range decoders() {
			img, err := d.decode(at, nil)
			if err != nil {
				t.Fatalf("%s: %d components at %d passes: %v", d.name, c.comps, jpegscan.MaxPasses, err)
			}
			if img.Warning != nil || img.Pix[0] != 128 || img.Pix[len(img.Pix)-1] != 128 {
				t.Errorf("%s: %d components: pixel %d..%d, warning %v; want flat 128", d.name, c.comps, img.Pix[0], img.Pix[len(img.Pix)-1], img.Warning)
			}
			img.Release()
			if _, err := d.decode(over, nil); !errors.Is(err, imgcodec.ErrCorrupt) || !strings.Contains(err.Error(), "scan bomb") {
				t.Fatalf("%s: %d components one scan past the limit: %v", d.name, c.comps, err)
			}
		}
		if err := jpegscan.Check(at); err != nil {
			t.Fatalf("CheckScans at the limit: %v", err)
		}
		if err := jpegscan.Check(over); err == nil {
			t.Fatalf("CheckScans past the limit: nil")
		}
	}
}

// Every progressive JPEG a tool writes decodes under the limit: the
// photographs made progressive by libjpeg-turbo's jpegtran and cjpeg and
// by Pillow, a mozjpeg-style script of 42 scans (each band of each
// component refined once), and the most a script can sensibly split a
// gray image: each coefficient in a scan of its own (64 scans, the limit).
func TestProgressiveToolsUnderScanLimit(t *testing.T) {
	for _, tool := range []string{"jpegtran", "cjpeg", "djpeg"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, "%s missing (libjpeg-turbo-progs)", tool)
		}
	}
	py := testenv.PythonWith(t, "PIL")
	dir := t.TempDir()
	mozjpeg := filepath.Join(dir, "mozjpeg.txt")
	var s strings.Builder
	s.WriteString("0,1,2: 0 0 0 1;\n")
	for _, band := range [][2]int{{1, 2}, {3, 5}, {6, 9}, {10, 14}, {15, 20}, {21, 27}, {28, 35}, {36, 44}, {45, 54}, {55, 63}} {
		fmt.Fprintf(&s, "0: %d %d 0 1;\n", band[0], band[1])
	}
	for _, c := range []int{1, 2} {
		for _, band := range [][2]int{{1, 2}, {3, 5}, {6, 14}, {15, 35}, {36, 63}} {
			fmt.Fprintf(&s, "%d: %d %d 0 1;\n", c, band[0], band[1])
		}
	}
	s.WriteString("0,1,2: 0 0 1 0;\n")
	for _, band := range [][2]int{{1, 2}, {3, 5}, {6, 9}, {10, 14}, {15, 20}, {21, 27}, {28, 35}, {36, 44}, {45, 54}, {55, 63}} {
		fmt.Fprintf(&s, "0: %d %d 1 0;\n", band[0], band[1])
	}
	for _, c := range []int{1, 2} {
		for _, band := range [][2]int{{1, 2}, {3, 5}, {6, 14}, {15, 35}, {36, 63}} {
			fmt.Fprintf(&s, "%d: %d %d 1 0;\n", c, band[0], band[1])
		}
	}
	os.WriteFile(mozjpeg, []byte(s.String()), 0o644)
	perCoef := filepath.Join(dir, "percoef.txt")
	s.Reset()
	for k := range 64 {
		fmt.Fprintf(&s, "0: %d %d 0 0;\n", k, k)
	}
	os.WriteFile(perCoef, []byte(s.String()), 0o644)
	run := func(name string, args ...string) []byte {
		out, err := exec.Command(name, args...).Output()
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return out
	}
	for _, name := range []string{"FreshFlower.jpg", "Aqua.jpg", "Garden.jpg"} {
		src := testenv.File(t, filepath.Join(testenv.PhotoDir, name))
		ppm := filepath.Join(dir, name+".ppm")
		os.WriteFile(ppm, run("djpeg", src), 0o644)
		pil := filepath.Join(dir, name+".pil.jpg")
		run(py, "-c", "import sys; from PIL import Image; Image.open(sys.argv[1]).save(sys.argv[2], quality=90, progressive=True)", src, pil)
		pilData, _ := os.ReadFile(pil)
		files := map[string][]byte{
			"jpegtran -progressive":           run("jpegtran", "-progressive", src),
			"cjpeg -progressive":              run("cjpeg", "-progressive", ppm),
			"Pillow progressive":              pilData,
			"mozjpeg-style, 42 scans":         run("jpegtran", "-scans", mozjpeg, src),
			"gray, a scan a coefficient (64)": run("jpegtran", "-grayscale", "-scans", perCoef, src),
		}
		for how, data := range files {
			if !bytes.Contains(data[:min(len(data), 4096)], []byte{0xff, 0xc2}) {
				t.Fatalf("%s %s: not progressive", name, how)
			}
			if err := jpegscan.Check(data); err != nil {
				t.Errorf("%s %s: CheckScans: %v", name, how, err)
			}
			for _, d := range decoders() {
				img, err := d.decode(data, &imgcodec.DecodeOptions{ScaleDenom: 2})
				if err != nil {
					t.Errorf("%s %s: %s: %v", name, how, d.name, err)
					continue
				}
				if img.Warning != nil {
					t.Errorf("%s %s: %s: warning %v", name, how, d.name, img.Warning)
				}
				img.Release()
			}
		}
	}
}
