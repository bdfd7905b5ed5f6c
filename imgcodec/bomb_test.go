package imgcodec_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"

	"github.com/faster-training/faster/internal/testenv"
)

// pngHeader is a PNG's signature and IHDR chunk for a w x h image of the
// given bit depth and colour type, then an IDAT that is never reached: what
// a decompression bomb's first 45 bytes say.
func pngHeader(w, h uint32, depth, colorType byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		c := append([]byte(typ), data...)
		b.Write(c)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(c))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = depth, colorType
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c})
	return b.Bytes()
}

// A 16-bit RGBA PNG under the pixel limit (100 megapixels of 268) would
// decode through 800 MB of NRGBA64 plus its RGB copy: refused from the
// header, before anything of its size is allocated (issue 31 item 2:
// before, 4.3 GB per loader worker). The same size at 8-bit gray is
// within the limit's reach.
func TestDecodeBombRefusedByBytes(t *testing.T) {
	bomb := pngHeader(10000, 10000, 16, 6)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := imgcodec.Decode(bomb, nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, imgcodec.ErrTooLarge) || !strings.Contains(err.Error(), "8 bytes a pixel") {
		t.Fatalf("16-bit RGBA 10000x10000: %v; want ErrTooLarge naming the working memory", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing it allocated %d bytes", grew)
	}
	cfg, err := imgcodec.DecodeConfig(bomb)
	if err != nil || cfg.DecodeBytes(nil) != 10000*10000*(8+3) {
		t.Fatalf("DecodeBytes: %d (%v)", cfg.DecodeBytes(nil), err)
	}
	// Scaled decoding does not shrink a Go decoder's working image.
	if got := cfg.DecodeBytes(&imgcodec.DecodeOptions{ScaleDenom: 8}); got != 1250*1250*3+10000*10000*8 {
		t.Fatalf("DecodeBytes at 1/8: %d", got)
	}
	gray := pngHeader(10000, 10000, 8, 0)
	if cfg, _ := imgcodec.DecodeConfig(gray); cfg.DecodeBytes(nil) != 10000*10000*(1+3) {
		t.Fatalf("8-bit gray: DecodeBytes %d", cfg.DecodeBytes(nil))
	}
	// The limit is an option.
	if _, err := imgcodec.Decode(pngHeader(4000, 4000, 16, 6), &imgcodec.DecodeOptions{MaxBytes: 100 << 20}); !errors.Is(err, imgcodec.ErrTooLarge) {
		t.Fatalf("4000x4000 16-bit RGBA under a 100 MiB limit: %v", err)
	}
}

// A progressive JPEG keeps 16-bit coefficients of the whole image for the
// whole decode, a baseline one does not: the same photograph made
// progressive by libjpeg-turbo's jpegtran needs 2 bytes more a pixel a
// component, and a limit between the two refuses it only.
func TestProgressiveJPEGCountsItsCoefficients(t *testing.T) {
	jpegtran, err := exec.LookPath("jpegtran")
	if err != nil {
		testenv.Missing(t, "jpegtran missing")
	}
	img := image.NewRGBA(image.Rect(0, 0, 1200, 1000))
	for y := range 1000 {
		for x := range 1200 {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x + y), 255})
		}
	}
	var base bytes.Buffer
	if err := jpeg.Encode(&base, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(jpegtran, "-progressive")
	cmd.Stdin = bytes.NewReader(base.Bytes())
	prog, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := imgcodec.DecodeConfig(base.Bytes())
	cp, _ := imgcodec.DecodeConfig(prog)
	if d := cp.DecodeBytes(nil) - cb.DecodeBytes(nil); d != 1200*1000*2*3 {
		t.Fatalf("progressive needs %d bytes more than baseline, want the coefficients' %d", d, 1200*1000*2*3)
	}
	limit := &imgcodec.DecodeOptions{MaxBytes: (cb.DecodeBytes(nil) + cp.DecodeBytes(nil)) / 2}
	if im, err := imgcodec.Decode(base.Bytes(), limit); err != nil {
		t.Fatalf("baseline under the limit: %v", err)
	} else {
		im.Release()
	}
	if _, err := imgcodec.Decode(prog, limit); !errors.Is(err, imgcodec.ErrTooLarge) {
		t.Fatalf("progressive over the limit: %v", err)
	}
}
