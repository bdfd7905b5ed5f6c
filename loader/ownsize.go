package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/source"
)

// ownSizeProbe is how many samples at the data's start ownSize tries for
// a readable picture header.
const ownSizeProbe = 16

// ownSize compiles Options.Recipe, whose size follows each picture's (no
// crop or Resize([h, w]): ToTensor + Normalize alone, every CIFAR and
// MNIST script's test transform, or a Resize(int) with no crop after it;
// augment.Compiled.OwnSize), for pictures of in channels at the data's
// size: the source's own (source.Sizer: CIFAR's
// 32×32, IDX's), else the first sample's, which every other picture must
// then have (sameSize, as each is decoded).
func (l *Loader) ownSize(ctx context.Context, path string, in int) (*augment.Compiled, error) {
	var w, h int
	from := ""
	if s, ok := l.ds.(source.Sizer); ok {
		h, w = s.Size()
	} else {
		var err error
		if w, h, from, err = l.probeSize(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	c, err := l.opts.Recipe.CompileSized(in, w, h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The memory check of Options, at the batches' size now known.
	o := l.opts
	o.Resolution, o.Schedule = max(w, h, c.Width, c.Height), nil
	if err := o.checkMemory(); err != nil {
		return nil, fmt.Errorf("%s: %dx%d pictures, served %dx%d (the recipe's size follows the picture's): %w", path, w, h, c.Width, c.Height, err)
	}
	l.firstSize = from
	return c, nil
}

// probeSize is the size of the data's first sample whose header reads (of
// the first ownSizeProbe; a streaming dataset's first file's), and where
// that sample is.
func (l *Loader) probeSize(ctx context.Context) (w, h int, from string, err error) {
	var first error
	try := func(r source.Record, err error) bool {
		if r.Buf != nil {
			defer r.Buf.Release()
		}
		if err == nil {
			var cfg imgcodec.Config
			if cfg, err = imgcodec.DecodeConfig(r.Data); err == nil {
				w, h, from = cfg.Width, cfg.Height, sampleAt(r.Path, r.Offset, r.Key)
				return true
			}
		}
		if first == nil {
			first = fmt.Errorf("%s: %w", sampleAt(r.Path, r.Offset, r.Key), err)
		}
		return false
	}
	switch ds := l.ds.(type) {
	case source.Indexed:
		for i := range min(ds.Len(), ownSizeProbe) {
			if try(ds.Record(i)) {
				return w, h, from, nil
			}
		}
	case source.Streaming:
		if len(ds.Files()) == 0 {
			break
		}
		rr, err := ds.Open(ctx, 0)
		if err != nil {
			first = err
			break
		}
		defer rr.Close()
		for range ownSizeProbe {
			r, err := rr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if try(r, err) {
				return w, h, from, nil
			}
			if err != nil {
				break // a reader's error is sticky
			}
		}
	}
	why := "no sample to take it from"
	if first != nil {
		why = fmt.Sprintf("none of the first %d samples' headers reads: %v", ownSizeProbe, first)
	}
	return 0, 0, "", augment.Problem{Field: "augment", Msg: "the output size is each picture's own: add a crop (RandomResizedCrop, CenterCrop, RandomCrop) or Resize([h, w]) " +
		"so every sample is the same size (without one, faster serves the size the data's pictures all have, the first sample's: " + why + ")"}
}

// sameSize checks a decoded picture of s against the size a recipe whose
// size follows the picture's was planned for (rc.OwnSize).
func (l *Loader) sameSize(s Sample, m *imgcodec.Image) error {
	rc := l.rc
	if m.Width == rc.InWidth && m.Height == rc.InHeight {
		return nil
	}
	first := "the data's"
	if l.firstSize != "" {
		first = "that of the first sample, " + l.firstSize
	}
	return fmt.Errorf("%s: %dx%d: the recipe's size follows the picture's (no crop or Resize([h, w])) and serves %dx%d from %dx%d pictures, %s: every picture must have that size; add a crop or Resize([h, w]) to the transform",
		sampleAt(s.path, s.off, s.Key), m.Width, m.Height, rc.Width, rc.Height, rc.InWidth, rc.InHeight, first)
}

// sampleAt names a sample for a message: its file, with the offset and
// key of a record inside one.
func sampleAt(path string, off int64, key string) string {
	switch {
	case path == "":
		return key
	case off >= 0:
		return fmt.Sprintf("%s: offset %d (%s)", path, off, key)
	case key == "" || strings.HasSuffix(filepath.ToSlash(path), key):
		return path
	}
	return fmt.Sprintf("%s (%s)", path, key)
}
