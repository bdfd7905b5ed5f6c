package imgcodec_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os/exec"
	"testing"

	"github.com/faster-training/faster/imgcodec"

	"github.com/faster-training/faster/internal/testenv"
)

// The independent oracle: libjpeg-turbo's own djpeg program (Debian
// libjpeg-turbo-progs), run as a separate process, not Go's image/jpeg
// (which the pure-Go fallback is built on, so agreeing with it proves
// little). Every decoder of the suite is held to a PSNR bound against djpeg's
// PPM/PGM output on the goldens and the real photographs; libjpeg-turbo
// through cgo with djpeg's default settings (islow DCT, fancy upsampling)
// must give djpeg's exact pixels.
func TestAgainstDjpeg(t *testing.T) {
	djpeg, err := exec.LookPath("djpeg")
	if err != nil {
		testenv.Missing(t, "djpeg missing: run scripts/setup.sh (libjpeg-turbo-progs)")
	}
	inputs := map[string][]byte{}
	for _, n := range goldens {
		inputs[n] = readGolden(t, n)
	}
	for n, b := range photos(t, conformancePhotos...) {
		inputs[n] = b
	}
	for _, d := range decoders() {
		t.Run(d.name, func(t *testing.T) {
			for name, data := range inputs {
				for _, gray := range []bool{false, true} {
					cmyk := name == "cmyk.jpg" || name == "ycck.jpg"
					if cmyk && gray {
						continue // djpeg cannot make luma of CMYK
					}
					want := runDjpeg(t, djpeg, data, gray)
					got, err := d.decode(data, &imgcodec.DecodeOptions{Gray: gray})
					if err != nil {
						t.Fatalf("%s gray=%v: %v", name, gray, err)
					}
					p := psnr(t, got, want)
					// The pure-Go decoder (image/jpeg) upsamples chroma
					// and converts colour differently from libjpeg (43.6 dB
					// at worst here): 40 dB is "the same picture", far
					// above what a wrong colour space, a shifted block or a
					// swapped channel gives (under 20 dB).
					bound := 40.0
					if d.name == "imgcodec-libjpeg-turbo" {
						bound = math.Inf(1)
						if cmyk {
							// djpeg's PPM writer turns CMYK into RGB
							// with its own rounding (wrppm.c's
							// cmyk_to_rgb); ours rounds differently.
							bound = 50
						}
					}
					if p < bound {
						t.Errorf("%s gray=%v: PSNR %.1f dB against djpeg, want >= %.0f", name, gray, p, bound)
					}
					t.Logf("%s gray=%v: %.1f dB", name, gray, p)
					got.Release()
				}
			}
		})
	}
}

// runDjpeg decodes data with djpeg into interleaved RGB (or luma).
func runDjpeg(t *testing.T, djpeg string, data []byte, gray bool) *imgcodec.Image {
	t.Helper()
	args := []string{"-pnm"}
	if gray {
		args = append(args, "-grayscale")
	}
	cmd := exec.Command(djpeg, args...)
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("djpeg %v: %v: %s", args, err, stderr.Bytes())
	}
	r := bufio.NewReader(bytes.NewReader(out))
	var magic string
	var w, h, maxv int
	if _, err := fmt.Fscan(r, &magic, &w, &h, &maxv); err != nil || maxv != 255 {
		t.Fatalf("djpeg output header: %v (%s %d %d %d)", err, magic, w, h, maxv)
	}
	r.ReadByte() // the single whitespace after maxval
	ch := 3
	if magic == "P5" {
		ch = 1
	}
	pix := make([]byte, w*h*ch)
	if _, err := io.ReadFull(r, pix); err != nil {
		t.Fatalf("djpeg output: %v", err)
	}
	img := &imgcodec.Image{Width: w, Height: h, Channels: ch, Stride: w * ch, Pix: pix}
	if !gray && ch == 1 {
		// djpeg writes a grey JPEG as PGM; the decoders give RGB.
		rgb := make([]byte, w*h*3)
		for i, v := range pix {
			rgb[3*i], rgb[3*i+1], rgb[3*i+2] = v, v, v
		}
		img.Channels, img.Stride, img.Pix = 3, 3*w, rgb
	}
	return img
}
