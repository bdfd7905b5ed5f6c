package downscale

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
)

// TestPlanarPSNR compares the planar path (a 4:2:0 JPEG resized in its
// stored planes) with the RGB path (decode to RGB, area resize, encode),
// both as `faster resize` writes them: on real photographs at ImageNet's
// size (shorter edge 375) and as installed at N=375 (the larger ones
// DCT-scaled decode, which the planar path leaves to the RGB path). Each output JPEG is decoded and compared with the RGB
// path's resized pixels before encoding, the image OpenCV's INTER_AREA
// gives; the planar output must stay within 40 dB of them, as the RGB
// output does, and within 40 dB of the RGB output.
func TestPlanarPSNR(t *testing.T) {
	needFile(t, filepath.Join(mateDir, "nature/LadyBird.jpg"))
	if imgcodec.Backend != "libjpeg-turbo" {
		t.Skip("the planar path needs cgo")
	}
	var rz augment.Resizer
	planar := 0
	for _, f := range []string{"nature/LadyBird.jpg", "nature/Garden.jpg", "desktop/GreenTraditional.jpg"} {
		full, err := os.ReadFile(filepath.Join(mateDir, f))
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := imgcodec.DecodeConfig(full)
		// The same photograph at ImageNet's size, as a 4:2:0 JPEG of quality 90.
		sw, sh, _ := Size(cfg.Width, cfg.Height, 375)
		mid, err := resize(&rz, full, cfg, 1, sw, sh, &Options{MaxSize: 375})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := imgcodec.EncodeJPEG(&b, mid, 90); err != nil {
			t.Fatal(err)
		}
		mid.Release()
		for _, src := range [][]byte{b.Bytes(), full} {
			cfg, _ := imgcodec.DecodeConfig(src)
			n := 256
			if ScaleDenom(cfg.Width, cfg.Height, n) != 1 {
				n = min(cfg.Width, cfg.Height) * 2 / 3 // still a full decode
			}
			ow, oh, _ := Size(cfg.Width, cfg.Height, n)
			o := &Options{MaxSize: n, Quality: 90}
			ref, err := resize(&rz, src, cfg, 1, ow, oh, o)
			if err != nil {
				t.Fatal(err)
			}
			var rgbJPEG, planarJPEG bytes.Buffer
			if err := imgcodec.EncodeJPEG(&rgbJPEG, ref, 90); err != nil {
				t.Fatal(err)
			}
			p, err := resize420(&rz, src, cfg, ow, oh, o)
			if errors.Is(err, imgcodec.ErrUnsupported) {
				t.Logf("%s %dx%d: %v (the RGB path)", f, cfg.Width, cfg.Height, err)
				ref.Release()
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			planar++
			if err := imgcodec.EncodeJPEG420(&planarJPEG, p, 90); err != nil {
				t.Fatal(err)
			}
			p.Release()
			rgbOut, err := imgcodec.Decode(rgbJPEG.Bytes(), nil)
			if err != nil {
				t.Fatal(err)
			}
			planarOut, err := imgcodec.Decode(planarJPEG.Bytes(), nil)
			if err != nil {
				t.Fatal(err)
			}
			pr, pp, pb := psnr(t, rgbOut, ref), psnr(t, planarOut, ref), psnr(t, planarOut, rgbOut)
			t.Logf("%s %dx%d -> %dx%d (1/%d): vs the resized pixels: RGB output %.1f dB, planar output %.1f dB; planar vs RGB output %.1f dB; %d vs %d bytes",
				f, cfg.Width, cfg.Height, ow, oh, ScaleDenom(cfg.Width, cfg.Height, n), pr, pp, pb, planarJPEG.Len(), rgbJPEG.Len())
			if pp < 40 || pb < 40 {
				t.Errorf("%s %dx%d: planar output %.1f dB from the resized pixels, %.1f dB from the RGB output, want >= 40",
					f, cfg.Width, cfg.Height, pp, pb)
			}
			ref.Release()
			rgbOut.Release()
			planarOut.Release()
		}
	}
	if planar < 3 {
		t.Errorf("the planar path took %d of the photographs, want the 3 at ImageNet's size at least", planar)
	}
}

// TestPlanarFallback checks that JPEGs the planar path does not take (gray,
// 4:4:4, CMYK, progressive 4:2:0 taken) go through the RGB path with the
// same output sizes, and that the planar path keeps the seed's geometry
// for odd sizes.
func TestPlanarFallback(t *testing.T) {
	for _, name := range []string{"ycc420", "ycc444", "ycc422", "gray", "cmyk", "progressive"} {
		data, err := os.ReadFile("../imgcodec/testdata/" + name + ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := imgcodec.DecodeConfig(data)
		if err != nil {
			t.Fatal(err)
		}
		n := min(cfg.Width, cfg.Height) * 2 / 3
		w := &worker{o: &Options{MaxSize: n, Quality: 90}}
		out, resized, err := w.convert(data, ".jpg")
		if err != nil || !resized {
			t.Fatalf("%s: resized %v, %v", name, resized, err)
		}
		got, err := imgcodec.DecodeConfig(out)
		if err != nil {
			t.Fatal(err)
		}
		ow, oh, _ := Size(cfg.Width, cfg.Height, n)
		if got.Width != ow || got.Height != oh {
			t.Errorf("%s: %dx%d out, want %dx%d", name, got.Width, got.Height, ow, oh)
		}
		_, perr := resize420(&w.rz, data, cfg, ow, oh, w.o)
		t.Logf("%s %dx%d (%d components) -> %dx%d: planar path: %v", name, cfg.Width, cfg.Height, cfg.Components, ow, oh, perr)
	}
}
