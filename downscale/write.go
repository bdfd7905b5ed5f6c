package downscale

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/atomicfile"
)

// encode writes img in the format its output name's extension selects, as
// cv2.imwrite does: PNG for .png, JPEG of the given quality for every other
// name (.jpg, .jpeg, and the rare image extensions Go cannot encode).
func encode(w io.Writer, img *imgcodec.Image, ext string, quality int) error {
	if !strings.EqualFold(ext, ".png") {
		return imgcodec.EncodeJPEG(w, img, quality)
	}
	var m image.Image
	r := image.Rect(0, 0, img.Width, img.Height)
	if img.Channels == 1 {
		g := image.NewGray(r)
		for y := 0; y < img.Height; y++ {
			copy(g.Pix[y*g.Stride:], img.Pix[y*img.Stride:y*img.Stride+img.Width])
		}
		m = g
	} else {
		c := image.NewRGBA(r)
		for y := 0; y < img.Height; y++ {
			s := img.Pix[y*img.Stride : y*img.Stride+img.Width*3]
			d := c.Pix[y*c.Stride : y*c.Stride+img.Width*4]
			for x := 0; x < img.Width; x++ {
				d[4*x], d[4*x+1], d[4*x+2], d[4*x+3] = s[3*x], s[3*x+1], s[3*x+2], 0xFF
			}
		}
		m = c
	}
	enc := png.Encoder{CompressionLevel: png.BestSpeed} // cv2.imwrite's default level is 1
	return enc.Encode(w, m)
}

// writeFile writes data to path atomically: into a hidden temporary file
// in the same folder (named by atomicfile.TempStem, short enough for any
// legal name, so that atomicfile.IsTemp recognises leftovers), renamed over path only when
// complete and ctx is not cancelled. With sync the file and its folder are
// fsynced before the rename is reported done.
func writeFile(ctx context.Context, path string, data []byte, sync bool) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	var f *os.File
	var err error
	for range 10 {
		tmp := filepath.Join(dir, atomicfile.TempStem(base)+strconv.FormatUint(rand.Uint64()%1e9, 10))
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if sync {
		if d, err := os.Open(dir); err == nil {
			d.Sync()
			d.Close()
		}
	}
	return nil
}

// upToDate reports whether dst already holds a complete output for j:
// it exists, is not older than the source, and either has the source's size
// (a copy) or, for an image, begins and ends like a complete JPEG or PNG
// (an output that a crash of the machine left empty or cut short fails
// this and is redone).
func upToDate(dst string, j job) bool {
	st, err := os.Stat(dst)
	if err != nil || !st.Mode().IsRegular() || st.ModTime().Before(j.info.ModTime()) {
		return false
	}
	if st.Size() == j.info.Size() {
		return true
	}
	if !j.image || st.Size() < 16 {
		return false
	}
	f, err := os.Open(dst)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [8]byte
	var tail [12]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return false
	}
	if _, err := f.ReadAt(tail[:], st.Size()-12); err != nil {
		return false
	}
	switch {
	case head[0] == 0xFF && head[1] == 0xD8:
		return tail[10] == 0xFF && tail[11] == 0xD9
	case bytes.Equal(head[:], []byte("\x89PNG\r\n\x1a\n")):
		return bytes.Equal(tail[:], []byte("\x00\x00\x00\x00IEND\xaeB`\x82"))
	}
	return false
}
