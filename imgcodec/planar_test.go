package imgcodec

import (
	"bytes"
	"errors"
	"math"
	"os"
	"testing"
)

// TestPlanar420 decodes the 4:2:0 test files into planes, checks their
// shapes, writes them back with EncodeJPEG420 and compares the result with
// the RGB decode of the source; other samplings and gray are
// ErrUnsupported.
func TestPlanar420(t *testing.T) {
	if Backend != "libjpeg-turbo" {
		t.Skip("planar decode needs cgo")
	}
	for _, name := range []string{"ycc420", "progressive", "restart"} {
		data, err := os.ReadFile("testdata/" + name + ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodeJPEG420(data, nil)
		if errors.Is(err, ErrUnsupported) {
			t.Logf("%s: %v", name, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cfg, _ := DecodeConfig(data)
		if p.Y.Width != cfg.Width || p.Y.Height != cfg.Height || p.Cb.Width < (cfg.Width+1)/2+1 || p.Cb.Height < (cfg.Height+1)/2+1 {
			t.Errorf("%s: planes %dx%d, %dx%d for %dx%d", name, p.Y.Width, p.Y.Height, p.Cb.Width, p.Cb.Height, cfg.Width, cfg.Height)
		}
		var b bytes.Buffer
		if err := EncodeJPEG420(&b, p, 95); err != nil {
			t.Fatal(err)
		}
		p.Release()
		got, err := Decode(b.Bytes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Decode(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Width != want.Width || got.Height != want.Height {
			t.Fatalf("%s: %dx%d re-encoded, %dx%d source", name, got.Width, got.Height, want.Width, want.Height)
		}
		var se float64
		for i := range want.Pix {
			d := float64(got.Pix[i]) - float64(want.Pix[i])
			se += d * d
		}
		db := 10 * math.Log10(255*255*float64(len(want.Pix))/math.Max(se, 1e-9))
		t.Logf("%s: planes re-encoded at quality 95: %.1f dB from the source's RGB decode", name, db)
		if db < 35 {
			t.Errorf("%s: %.1f dB, want >= 35", name, db)
		}
		got.Release()
		want.Release()
	}
	for _, name := range []string{"ycc444", "ycc422", "gray", "cmyk", "ycck"} {
		data, err := os.ReadFile("testdata/" + name + ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeJPEG420(data, nil); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
	// Odd sizes through NewPlanar420 and the encoder's edge padding.
	p := NewPlanar420(33, 17)
	for i := range p.Y.Pix {
		p.Y.Pix[i] = uint8(i)
	}
	for i := range p.Cb.Pix {
		p.Cb.Pix[i], p.Cr.Pix[i] = 128, 128
	}
	var b bytes.Buffer
	if err := EncodeJPEG420(&b, p, 90); err != nil {
		t.Fatal(err)
	}
	p.Release()
	if cfg, err := DecodeConfig(b.Bytes()); err != nil || cfg.Width != 33 || cfg.Height != 17 {
		t.Errorf("33x17 planes: %+v, %v", cfg, err)
	}
}
