package downscale

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/source"

	"github.com/faster-training/faster/internal/usage"
)

// Result summarises a run. Counts are of files.
type Result struct {
	Images       int       `json:"images"`        // files with an image extension
	Resized      int       `json:"resized"`       // images resized and re-encoded
	Copied       int       `json:"copied"`        // images already small enough, copied byte for byte
	Skipped      int       `json:"skipped"`       // outputs already complete and newer than their source
	Failed       int       `json:"failed"`        // unreadable, corrupt or empty source files
	OtherCopied  int       `json:"other_copied"`  // non-image files copied
	OtherSkipped int       `json:"other_skipped"` // non-image files left out (NonImages == SkipNonImages)
	Failures     []Failure `json:"failures"`      // the failed files, sorted by path
	BytesIn      int64     `json:"bytes_in"`      // bytes read from processed sources
	BytesOut     int64     `json:"bytes_out"`     // bytes written
	Seconds      float64   `json:"seconds"`
	ImagesPerSec float64   `json:"images_per_sec"` // (resized + copied) / seconds
	// CPUSeconds is the CPU time (user + system) the process spent during
	// the run, all threads, where the platform reports it (else 0): on a
	// shared machine, images / CPUSeconds does not count time other
	// processes took.
	CPUSeconds float64 `json:"cpu_seconds"`
}

func (r *Result) add(o *Result) {
	r.Resized += o.Resized
	r.Copied += o.Copied
	r.Skipped += o.Skipped
	r.Failed += o.Failed
	r.OtherCopied += o.OtherCopied
	r.OtherSkipped += o.OtherSkipped
	r.Failures = append(r.Failures, o.Failures...)
	r.BytesIn += o.BytesIn
	r.BytesOut += o.BytesOut
}

// job is one regular file of the source tree.
type job struct {
	rel   string      // path relative to the source root
	info  fs.FileInfo // the source's (followed if a symlink)
	image bool        // has an image extension
}

// Run mirrors the tree under src into dst as the package documentation
// describes. Bad source files are listed in the Result's Failures and never
// stop the run; an error is returned for invalid options, an unreadable
// source root, a destination that cannot be written (the run stops) or
// cancellation of ctx (the run stops, leaving no partial file). The Result
// is valid, with the counts so far, even when the error is not nil.
func Run(ctx context.Context, src, dst string, o Options) (*Result, error) {
	start, cpu0 := time.Now(), usage.CPU()
	res := &Result{Failures: []Failure{}}
	if err := o.Validate(); err != nil {
		return res, err
	}
	o.EnsureDefaults()
	if o.TaskCount == 0 {
		if err := refuseRunningTasks(dst); err != nil {
			return res, err
		}
	}
	jobs, err := walk(ctx, src, dst, res, o.TaskCount > 0)
	if err != nil {
		return res, err
	}
	var pt *partTask
	if o.TaskCount > 0 {
		if pt, jobs, err = startTask(dst, jobs, &o); err != nil {
			return res, err
		}
		defer pt.unlock()
	}
	for _, j := range jobs {
		if j.image {
			res.Images++
		}
	}
	if o.Progress != nil {
		o.Progress.SetTotal(int64(res.Images))
	}

	g, gctx := errgroup.WithContext(ctx)
	ch := make(chan job, o.Workers)
	parts := make([]Result, o.Workers)
	g.Go(func() error {
		defer close(ch)
		for _, j := range jobs {
			select {
			case ch <- j:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	for i := range parts {
		w := &worker{o: &o, src: src, dst: dst, res: &parts[i]}
		g.Go(func() error {
			for j := range ch {
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := w.do(gctx, j); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err = g.Wait()
	if cerr := ctx.Err(); cerr != nil {
		err = cerr
	}
	for i := range parts {
		res.add(&parts[i])
	}
	sort.Slice(res.Failures, func(a, b int) bool { return res.Failures[a].Path < res.Failures[b].Path })
	if err == nil && !o.Sync {
		err = syncFS(dst)
	}
	if err == nil && pt != nil {
		err = pt.commit(jobs, res)
	}
	res.Seconds = time.Since(start).Seconds()
	res.CPUSeconds = (usage.CPU() - cpu0).Seconds()
	res.ImagesPerSec = float64(res.Resized+res.Copied) / max(res.Seconds, 1e-9)
	return res, err
}

// walk lists the regular files under src (following symlinks to files,
// not to folders) and creates the mirrored folders under dst. It skips dst
// if dst lies inside src. Unreadable folders become Failures.
func walk(ctx context.Context, src, dst string, res *Result, tasked bool) ([]job, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSource, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a folder", ErrSource, src)
	}
	absSrc, err1 := filepath.Abs(src)
	absDst, err2 := filepath.Abs(dst)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if absSrc == absDst {
		return nil, fmt.Errorf("%w: source and destination are the same folder", ErrSource)
	}
	if err := os.MkdirAll(dst, 0o777); err != nil {
		return nil, err
	}
	var jobs []job
	w := walker{ctx: ctx, src: src, dst: dst, absDst: absDst, res: res, jobs: &jobs, keepTemps: tasked}
	err = w.dir(src, ".", nil)
	return jobs, err
}

// walker lists a source tree as ImageFolder (and torchvision) does:
// symlinks to folders are followed, except into a folder already on the
// path (a loop); every entry that is neither a folder nor a regular file
// (a FIFO, a device, a socket, a dangling link) is a Failure, never read.
type walker struct {
	ctx      context.Context
	src, dst string
	absDst   string
	res      *Result
	jobs     *[]job
	// keepTemps: other tasks write into the same folders at once (each
	// task removes its own files' temporaries, startTask).
	keepTemps bool
}

func (w *walker) fail(rel string, err error) {
	w.res.Failed++
	w.res.Failures = append(w.res.Failures, failure(rel, err))
}

// dir lists folder p (rel to the source), whose ancestors are given.
func (w *walker) dir(p, rel string, ancestors []fs.FileInfo) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	st, err := os.Stat(p)
	if err != nil {
		if rel == "." {
			return fmt.Errorf("%w: %w", ErrSource, err)
		}
		w.fail(rel, err)
		return nil
	}
	for _, a := range ancestors {
		if os.SameFile(a, st) {
			w.fail(rel, errors.New("symlink loop: the folder is already being walked"))
			return nil
		}
	}
	if abs, _ := filepath.Abs(p); abs == w.absDst {
		return nil // the destination inside the source: not an input
	}
	ancestors = append(ancestors, st)
	if rel != "." {
		if err := os.MkdirAll(filepath.Join(w.dst, rel), 0o777); err != nil {
			return err
		}
	}
	if !w.keepTemps {
		removeTemps(filepath.Join(w.dst, rel))
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		if rel == "." {
			return fmt.Errorf("%w: %w", ErrSource, err)
		}
		w.fail(rel, err)
		return nil
	}
	for _, e := range ents {
		cp, crel := filepath.Join(p, e.Name()), filepath.Join(rel, e.Name())
		info, err := os.Stat(cp) // follows symlinks
		switch {
		case err != nil:
			if _, lerr := os.Lstat(cp); lerr == nil && e.Type()&fs.ModeSymlink != 0 {
				err = &source.FileError{Path: cp, Reason: "dangling symlink or symlink loop", Err: err}
			}
			w.fail(crel, err)
		case info.IsDir():
			if err := w.dir(cp, crel, ancestors); err != nil {
				return err
			}
		case !info.Mode().IsRegular():
			w.fail(crel, &source.FileError{Path: cp, Reason: "not a regular file (" + info.Mode().Type().String() + ")"})
		default:
			*w.jobs = append(*w.jobs, job{rel: crel, info: info, image: source.IsImageName(cp)})
		}
	}
	return nil
}

// removeTemps deletes the temporary files a killed run left in an output
// folder (".NAME.tmp-N", see writeFile): no run is writing them, as two
// runs into one destination are not supported.
func removeTemps(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Type().IsRegular() && atomicfile.IsTemp(e.Name()) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// worker holds the per-goroutine state: the resizer's tables and
// buffers, and the read and encode buffers, reused across files.
type worker struct {
	o        *Options
	src, dst string
	res      *Result
	rz       augment.Resizer
	rbuf     []byte
	wbuf     bytes.Buffer
}

// do processes one file. Bad source data is recorded as a Failure; the
// error is for a failed write or cancellation, and stops the run.
func (w *worker) do(ctx context.Context, j job) error {
	srcPath := filepath.Join(w.src, j.rel)
	dstPath := filepath.Join(w.dst, j.rel)
	if !j.image && w.o.NonImages == SkipNonImages {
		w.res.OtherSkipped++
		return nil
	}
	var nbytes int64
	defer func() {
		if j.image && w.o.Progress != nil {
			w.o.Progress.Add(1, nbytes)
		}
	}()
	if upToDate(dstPath, j) {
		w.res.Skipped++
		return nil
	}
	data, err := w.read(srcPath)
	nbytes = int64(len(data))
	if err != nil {
		w.fail(j, err)
		return nil
	}
	w.res.BytesIn += nbytes
	if !j.image {
		if err := writeFile(ctx, dstPath, data, w.o.Sync); err != nil {
			return err
		}
		w.res.OtherCopied++
		w.res.BytesOut += nbytes
		return nil
	}
	if len(data) == 0 {
		w.fail(j, errors.New("empty file"))
		return nil
	}
	out, resized, err := w.convert(data, filepath.Ext(j.rel))
	if err != nil {
		w.fail(j, err)
		return nil
	}
	if err := writeFile(ctx, dstPath, out, w.o.Sync); err != nil {
		return err
	}
	w.res.BytesOut += int64(len(out))
	if resized {
		w.res.Resized++
	} else {
		w.res.Copied++
	}
	return nil
}

func (w *worker) fail(j job, err error) {
	w.res.Failed++
	w.res.Failures = append(w.res.Failures, failure(j.rel, err))
}

// read reads a whole file into the worker's read buffer.
func (w *worker) read(path string) ([]byte, error) {
	f, size, err := source.OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > source.MaxFileSize {
		return nil, &source.FileError{Path: path, Reason: fmt.Sprintf("%d bytes, above the %d-byte cap on one image", size, source.MaxFileSize)}
	}
	buf := w.rbuf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	w.rbuf = buf
	return buf, nil
}

// convert returns the bytes to write for an image: the source itself when
// its shorter edge is at most MaxSize (after checking that it decodes), else
// the resized image encoded by the output name's extension.
func (w *worker) convert(data []byte, ext string) (out []byte, resized bool, err error) {
	cfg, err := imgcodec.DecodeConfig(data)
	if err != nil {
		return nil, false, err
	}
	orientation := 1
	if w.o.EXIF && cfg.Format == "jpeg" {
		orientation = Orientation(data)
	}
	sw, sh := orientedSize(cfg.Width, cfg.Height, orientation)
	ow, oh, ok := Size(sw, sh, w.o.MaxSize)
	opts := imgcodec.DecodeOptions{Gray: cfg.Components == 1, MaxPixels: w.o.MaxPixels}
	if !ok {
		// Copied as it is; decoded (at 1/8 scale: cheap, but every byte
		// of entropy-coded data is still read) only to reject corrupt or
		// truncated files, as a resize would.
		if cfg.Format == "jpeg" {
			opts.ScaleDenom = 8
		}
		img, err := imgcodec.Decode(data, &opts)
		if err != nil {
			return nil, false, err
		}
		img.Release()
		return data, false, nil
	}
	if !w.o.RGB && cfg.Format == "jpeg" && cfg.Components == 3 && orientation == 1 && !strings.EqualFold(ext, ".png") {
		p, err := resize420(&w.rz, data, cfg, ow, oh, w.o)
		if err == nil {
			defer p.Release()
			w.wbuf.Reset()
			if err := imgcodec.EncodeJPEG420(&w.wbuf, p, w.o.Quality); err != nil {
				return nil, false, err
			}
			return w.wbuf.Bytes(), true, nil
		}
		if !errors.Is(err, imgcodec.ErrUnsupported) {
			return nil, false, err
		}
		// Not 4:2:0 YCbCr, or no cgo: the RGB path.
	}
	small, err := resize(&w.rz, data, cfg, orientation, ow, oh, w.o)
	if err != nil {
		return nil, false, err
	}
	defer small.Release()
	w.wbuf.Reset()
	if err := encode(&w.wbuf, small, ext, w.o.Quality); err != nil {
		return nil, false, err
	}
	return w.wbuf.Bytes(), true, nil
}

// resize decodes data (at the DCT scale ScaleDenom allows, unless
// NoScaledDecode), applies the EXIF orientation and area-resizes it to
// ow x oh. The caller releases the result.
func resize(rz *augment.Resizer, data []byte, cfg imgcodec.Config, orientation, ow, oh int, o *Options) (*imgcodec.Image, error) {
	d := 1
	if !o.NoScaledDecode && cfg.Format == "jpeg" {
		d = ScaleDenom(cfg.Width, cfg.Height, o.MaxSize)
	}
	opts := imgcodec.DecodeOptions{ScaleDenom: d, Gray: cfg.Components == 1, MaxPixels: o.MaxPixels}
	img, err := imgcodec.Decode(data, &opts)
	if err != nil {
		return nil, err
	}
	if or := orient(img, orientation); or != img {
		img.Release()
		img = or
	}
	defer img.Release()
	sw, sh := orientedSize(cfg.Width, cfg.Height, orientation)
	small := imgcodec.NewImage(ow, oh, img.Channels)
	// The scaled decode is ceil(W/d) x ceil(H/d) and its pixel i covers
	// source pixels [i*d, (i+1)*d): the exact source is the box W/d x H/d.
	box := augment.Box{X1: float64(sw) / float64(d), Y1: float64(sh) / float64(d)}
	if err := rz.ResizeBox(small, img, box, augment.Area, false); err != nil {
		small.Release()
		return nil, err
	}
	return small, nil
}

// resize420 decodes a 4:2:0 YCbCr JPEG into its planes and area-resizes
// each to the output's: luma to ow x oh, chroma to half that (rounded up)
// with the same scale factors, so that output chroma sample j still covers
// output luma [2j, 2j+2). It returns an error wrapping
// imgcodec.ErrUnsupported, having decoded nothing, for other JPEGs and
// for those resize would decode DCT-scaled (libjpeg-turbo then upsamples
// the chroma in its scaled IDCT, so the planes are no longer 4:2:0): the
// path is for full decodes, ImageNet's sizes. The caller releases the
// result.
func resize420(rz *augment.Resizer, data []byte, cfg imgcodec.Config, ow, oh int, o *Options) (*imgcodec.Planar420, error) {
	d := 1
	if !o.NoScaledDecode {
		d = ScaleDenom(cfg.Width, cfg.Height, o.MaxSize)
	}
	if d != 1 {
		return nil, fmt.Errorf("planar path at 1/%d scale: %w", d, imgcodec.ErrUnsupported)
	}
	src, err := imgcodec.DecodeJPEG420(data, &imgcodec.DecodeOptions{ScaleDenom: d, MaxPixels: o.MaxPixels})
	if err != nil {
		return nil, err
	}
	defer src.Release()
	dst := imgcodec.NewPlanar420(ow, oh)
	// The exact source box, as in resize: W/d x H/d luma samples.
	bx, by := float64(cfg.Width)/float64(d), float64(cfg.Height)/float64(d)
	if err := rz.ResizeBox(&dst.Y, &src.Y, augment.Box{X1: bx, Y1: by}, augment.Area, false); err != nil {
		dst.Release()
		return nil, err
	}
	// Chroma: the output's cw x ch samples cover 2cw x 2ch output luma,
	// that is cw*bx/ow x ch*by/oh source chroma samples, which may pass the
	// picture's chroma by under a sample into the decoder's padding.
	cw, ch := dst.Cb.Width, dst.Cb.Height
	box := augment.Box{X1: min(float64(cw)*bx/float64(ow), float64(src.Cb.Width)),
		Y1: min(float64(ch)*by/float64(oh), float64(src.Cb.Height))}
	for _, pl := range [][2]*imgcodec.Image{{&dst.Cb, &src.Cb}, {&dst.Cr, &src.Cr}} {
		if err := rz.ResizeBox(pl[0], pl[1], box, augment.Area, false); err != nil {
			dst.Release()
			return nil, err
		}
	}
	return dst, nil
}
