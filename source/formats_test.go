package source

import (
	"archive/tar"
	"bytes"
	"errors"
	"image"
	"os"
	"path/filepath"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

func TestDatumRoundTrip(t *testing.T) {
	raw := Datum{Channels: 3, Height: 2, Width: 2, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, Label: 7}
	got, err := DecodeDatum(raw.Marshal(nil))
	if err != nil || got.Label != 7 || got.Channels != 3 || !bytes.Equal(got.Data, raw.Data) || got.Encoded {
		t.Fatalf("%+v %v", got, err)
	}
	img, err := got.Raw()
	if err != nil {
		t.Fatal(err)
	}
	// Planar BGR: pixel (1,0) is B=2, G=6, R=10.
	if c := img.(*image.RGBA).RGBAAt(1, 0); c.R != 10 || c.G != 6 || c.B != 2 {
		t.Fatalf("pixel %+v", c)
	}
	if _, f, _, _, err := got.Image(); err != nil || f != "png" {
		t.Fatalf("raw → %q %v", f, err)
	}
	if _, err := DecodeDatum([]byte{0x22, 0x05, 1}); !errors.Is(err, ErrBadDatum) {
		t.Fatalf("truncated: %v", err)
	}
	short := Datum{Channels: 3, Height: 2, Width: 2, Data: []byte{1}}
	if _, err := short.Raw(); !errors.Is(err, ErrBadDatum) {
		t.Fatalf("short raw: %v", err)
	}
}

func FuzzDatum(f *testing.F) {
	f.Add((&Datum{Channels: 1, Height: 1, Width: 2, Data: []byte{1, 2}, Label: 3}).Marshal(nil))
	f.Add((&Datum{Data: []byte("\x89PNG\r\n\x1a\nxx"), Encoded: true, Label: -1}).Marshal(nil))
	f.Add([]byte{0x35, 0, 0, 0x80, 0x3f})
	f.Add((&Datum{Channels: 3, Height: 2, Width: 3, Data: []byte("bbbbbbggggggrrrrrr"), Label: 1}).Marshal(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDatum(b)
		if err != nil {
			return
		}
		// Round trip: what we write decodes to the same Datum.
		d2, err := DecodeDatum(d.Marshal(nil))
		if err != nil || d2.Label != d.Label || d2.Encoded != d.Encoded || !bytes.Equal(d2.Data, d.Data) ||
			d2.Channels != d.Channels || d2.Height != d.Height || d2.Width != d.Width {
			t.Fatalf("round trip: %+v vs %+v (%v)", d, d2, err)
		}
		if d.Encoded {
			return
		}
		// A raw Datum's pixels as Raw gives them and as the loader hands
		// them on (Pixels, decoded by imgcodec) are the same RGB, and
		// the two agree on what is damaged.
		img, rerr := d.Raw()
		px, perr := d.Pixels(nil)
		if (rerr == nil) != (perr == nil) {
			t.Fatalf("Raw: %v, Pixels: %v", rerr, perr)
		}
		if rerr != nil || d.Width*d.Height > 1<<16 {
			return
		}
		dec, err := imgcodec.Decode(px, nil)
		if err != nil {
			t.Fatalf("decode of Pixels: %v", err)
		}
		defer dec.Release()
		for y := range d.Height {
			for x := range d.Width {
				r, g, b, _ := img.At(x, y).RGBA()
				p := dec.Pix[y*dec.Stride+3*x:][:3]
				if p[0] != uint8(r>>8) || p[1] != uint8(g>>8) || p[2] != uint8(b>>8) {
					t.Fatalf("pixel %d,%d: Raw %d %d %d, decoded Pixels %v", x, y, r>>8, g>>8, b>>8, p)
				}
			}
		}
	})
}

func tarBytes(t testing.TB, members ...string) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := 0; i+1 < len(members); i += 2 {
		tw.WriteHeader(&tar.Header{Name: members[i], Mode: 0o644, Size: int64(len(members[i+1])), Typeflag: tar.TypeReg})
		tw.Write([]byte(members[i+1]))
	}
	tw.Close()
	return b.Bytes()
}

const pngMagic = "\x89PNG\r\n\x1a\n"

func TestWDS(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a-00000-of-00001.tar")
	os.WriteFile(p, tarBytes(t, "c0/x.png", pngMagic+"1", "c0/x.cls", "2", "c1/y.z.png", pngMagic+"22", "c1/y.z.json", `{"label": 1, "filename": "c1/y.z.png"}`, ".hidden", "h"), 0o644)
	w, err := OpenWDS([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	it := w.Items()
	if len(it) != 2 || it[0].Key != "c0/x.png" || it[0].Label != 2 || it[1].Key != "c1/y.z.png" || it[1].Label != 1 {
		t.Fatalf("items %+v", it)
	}
	s, err := w.Load(1)
	if err != nil || string(s.Data) != pngMagic+"22" || s.Format != "png" {
		t.Fatalf("load: %q %v", s.Data, err)
	}
	// A damaged header in the middle is skipped and reported; the samples
	// after it are found again.
	b := tarBytes(t, "a.png", pngMagic+"a", "b.png", pngMagic+"b", "c.png", pngMagic+"c")
	b[512*2+10] ^= 0xff // the second header
	os.WriteFile(p, b, 0o644)
	w2, err := OpenWDS([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if len(w2.Items()) != 2 || len(w2.Damage()) != 1 || w2.Damage()[0].Offset != 1024 {
		t.Fatalf("items %+v damage %+v", w2.Items(), w2.Damage())
	}
}

func FuzzWDS(f *testing.F) {
	f.Add(tarBytes(f, "a.jpg", "\xff\xd8\xffxx", "a.cls", "3", "b.png", pngMagic, "b.json", `{"label":2}`))
	f.Add(tarBytes(f, "x/y.z.png", pngMagic+"q")[:700])
	// One file rewritten per input (a worker runs its inputs one at a
	// time): a temporary directory per input cost more than the reader.
	p := filepath.Join(f.TempDir(), "f.tar")
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := OpenWDS([]string{p})
		if err != nil {
			return
		}
		defer w.Close()
		for i := range w.Items() {
			s, err := w.Load(i)
			if err == nil && int64(len(s.Data)) != w.Items()[i].Size {
				t.Fatalf("sample %d: %d bytes, listed %d", i, len(s.Data), w.Items()[i].Size)
			}
		}
	})
}
