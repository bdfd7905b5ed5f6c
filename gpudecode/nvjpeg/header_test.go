package nvjpeg

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The header check on JPEGs written by other tools: libjpeg-turbo's cjpeg
// and mkcmyk.c (imgcodec/testdata, gen.sh), and PNG.
func TestCanDecodeTestdata(t *testing.T) {
	for _, c := range []struct {
		file  string
		route Route
		sub   string
		why   string
	}{
		{"ycc420.jpg", Hardware, "420", ""},
		{"ycc444.jpg", Hardware, "444", ""},
		{"ycc422.jpg", Hardware, "422", ""},
		{"ycc440.jpg", Hardware, "440", ""},
		{"restart.jpg", Hardware, "420", ""},
		{"tiny.jpg", Hardware, "420", ""},
		{"gray.jpg", Hardware, "gray", ""},
		{"ycc411.jpg", Hybrid, "411", "subsampling 411"},
		{"multiscan.jpg", Hybrid, "420", "several scans"},
		{"progressive.jpg", Hybrid, "420", "progressive"},
		{"gray_progressive.jpg", Hybrid, "gray", "progressive"},
		{"cmyk.jpg", CPU, "", "CMYK"},
		{"ycck.jpg", CPU, "", "YCCK"},
		{"rgb.jpg", CPU, "444", "RGB-coded"},
		{"arithmetic.jpg", CPU, "420", "arithmetic"},
		{"png_named.JPEG", CPU, "", "not a JPEG"},
		{"seed_gray16.png", CPU, "", "not a JPEG"},
	} {
		data, err := os.ReadFile(filepath.Join("..", "..", "imgcodec", "testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		r, why := CanDecode(data)
		if r != c.route || !strings.Contains(why, c.why) || (c.why == "") != (why == "") {
			t.Errorf("%s: %v %q, want %v %q", c.file, r, why, c.route, c.why)
		}
		if h, err := Inspect(data); err == nil && h.Subsampling != c.sub {
			t.Errorf("%s: subsampling %q, want %q", c.file, h.Subsampling, c.sub)
		}
		// A prefix holding the header, through the first scan's count of
		// components, is enough; one without a scan is not.
		if r != CPU {
			h, _ := Inspect(data)
			if h.Width != 317 && h.Width != 13 || h.Precision != 8 {
				t.Errorf("%s: %dx%d, %d bits", c.file, h.Width, h.Height, h.Precision)
			}
			cut := bytes.Index(data, []byte{0xff, 0xda}) + 2
			if r2, _ := CanDecode(data[:cut+3]); r2 != r {
				t.Errorf("%s: header prefix routed %v", c.file, r2)
			}
			if r2, _ := CanDecode(data[:cut-2]); r2 != CPU {
				t.Errorf("%s: a cut before the scan routed %v", c.file, r2)
			}
		}
	}
}

// Debian's photographs (mate-backgrounds), and each re-encoded by cjpeg
// as progressive, 4:1:1, 4:4:4 and arithmetic-coded in the test.
func TestCanDecodePhotographs(t *testing.T) {
	photos, _ := filepath.Glob("/usr/share/backgrounds/*/*/*.jpg")
	if len(photos) == 0 {
		t.Skip("no photographs in /usr/share/backgrounds (Debian's mate-backgrounds)")
	}
	for _, p := range photos {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Inspect(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if r, why := h.Route(); r == CPU {
			t.Errorf("%s: a camera's JPEG routed to the CPU: %s", p, why)
		}
	}
	cjpeg, err1 := exec.LookPath("cjpeg")
	djpeg, err2 := exec.LookPath("djpeg")
	if err1 != nil || err2 != nil {
		t.Skip("no cjpeg/djpeg (libjpeg-turbo-progs)")
	}
	ppm, err := exec.Command(djpeg, "-scale", "1/8", "-ppm", photos[0]).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		route Route
		sub   string
	}{
		{nil, Hardware, "420"},
		{[]string{"-progressive"}, Hybrid, "420"},
		{[]string{"-sample", "4x1"}, Hybrid, "411"},
		{[]string{"-sample", "4x2"}, Hybrid, "410"},
		{[]string{"-sample", "1x1", "-progressive"}, Hybrid, "444"},
		{[]string{"-sample", "2x1"}, Hardware, "422"},
		{[]string{"-sample", "2x2,2x1,1x1"}, CPU, ""},
		{[]string{"-arithmetic"}, CPU, "420"},
		{[]string{"-rgb"}, CPU, "444"},
		{[]string{"-grayscale"}, Hardware, "gray"},
	} {
		cmd := exec.Command(cjpeg, c.args...)
		cmd.Stdin = bytes.NewReader(ppm)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cjpeg %v: %v", c.args, err)
		}
		h, err := Inspect(out)
		if err != nil {
			t.Fatalf("cjpeg %v: %v", c.args, err)
		}
		if r, why := h.Route(); r != c.route || h.Subsampling != c.sub {
			t.Errorf("cjpeg %v: %v (%s), subsampling %q; want %v, %q", c.args, r, why, h.Subsampling, c.route, c.sub)
		}
	}
}

// Damaged headers are the CPU's (which reports the damage), never a panic.
func TestInspectDamaged(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "imgcodec", "testdata", "ycc420.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	sos := bytes.Index(data, []byte{0xff, 0xda})
	for n := range sos + 4 {
		r, why := CanDecode(data[:n])
		if n < sos+4 && r != CPU {
			t.Fatalf("%d-byte prefix routed %v (%s)", n, r, why)
		}
	}
	bad := bytes.Clone(data[:sos+4])
	sof := bytes.Index(bad, []byte{0xff, 0xc0})
	bad[sof+2], bad[sof+3] = 0xff, 0xff // a length past the end
	if r, why := CanDecode(bad); r != CPU || !strings.Contains(why, "past the end") {
		t.Fatalf("SOF length past the end: %v %q", r, why)
	}
}

func FuzzInspect(f *testing.F) {
	for _, n := range []string{"ycc420.jpg", "progressive.jpg", "cmyk.jpg"} {
		if d, err := os.ReadFile(filepath.Join("..", "..", "imgcodec", "testdata", n)); err == nil {
			f.Add(d[:min(len(d), 1024)])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Inspect(data)
		r, _ := CanDecode(data)
		if err != nil && r != CPU {
			t.Fatalf("unreadable header routed %v", r)
		}
		if r == Hardware && (h.Precision != 8 || h.Components == 4) {
			t.Fatalf("hardware route for %+v", h)
		}
	})
}
