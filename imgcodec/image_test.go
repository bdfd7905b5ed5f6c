package imgcodec_test

import (
	"bytes"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

func TestEncodeJPEGRoundTrip(t *testing.T) {
	for _, name := range []string{"ycc420.jpg", "gray.jpg"} {
		for _, gray := range []bool{false, true} {
			src, err := imgcodec.Decode(readGolden(t, name), &imgcodec.DecodeOptions{Gray: gray})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := imgcodec.EncodeJPEG(&buf, src, 95); err != nil {
				t.Fatal(err)
			}
			back, err := imgcodec.Decode(buf.Bytes(), &imgcodec.DecodeOptions{Gray: gray})
			if err != nil {
				t.Fatal(err)
			}
			if p := psnr(t, back, src); p < 35 {
				t.Errorf("%s gray=%v: round trip at q95: %.1f dB", name, gray, p)
			}
			c, _ := imgcodec.DecodeConfig(buf.Bytes())
			if want := src.Channels; c.Components != want {
				t.Errorf("%s: encoded %d components, want %d", name, c.Components, want)
			}
		}
	}
	img := imgcodec.NewImage(4, 4, 3)
	for _, q := range []int{-1, 101} {
		if err := imgcodec.EncodeJPEG(&bytes.Buffer{}, img, q); err == nil {
			t.Errorf("quality %d accepted", q)
		}
	}
	if err := imgcodec.EncodeJPEG(&bytes.Buffer{}, &imgcodec.Image{}, 90); err == nil {
		t.Error("empty image accepted")
	}
}

func TestPoolReuse(t *testing.T) {
	data := readGolden(t, "ycc420.jpg")
	a, err := imgcodec.Decode(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), a.Pix...)
	a.Release()
	if a.Pix != nil || a.Width != 0 {
		t.Error("Release left the image usable")
	}
	a.Release() // a second Release of a cleared image is harmless
	for i := 0; i < 3; i++ {
		b, err := imgcodec.Decode(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Pix, want) {
			t.Fatal("decode into a reused buffer differs")
		}
		b.Release()
	}
	n := imgcodec.NewImage(100, 50, 3)
	if len(n.Pix) != 100*50*3 || n.Stride != 300 {
		t.Errorf("NewImage: len %d stride %d", len(n.Pix), n.Stride)
	}
	n.Release()
	big := imgcodec.NewImage(imgcodec.MaxPooledBytes/3+1, 1, 3) // above the cap: not pooled
	big.Release()
	(*imgcodec.Image)(nil).Release()
}

func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	if imgcodec.Backend == "pure-go" {
		t.Skip("image/jpeg allocates its own image per decode")
	}
	data := readGolden(t, "ycc420.jpg")
	allocs := testing.AllocsPerRun(20, func() {
		img, err := imgcodec.Decode(data, &imgcodec.DecodeOptions{ScaleDenom: 2})
		if err != nil {
			t.Fatal(err)
		}
		img.Release()
	})
	if allocs > 2 {
		t.Errorf("%v allocations per decode in steady state, want <= 2", allocs)
	}
}
