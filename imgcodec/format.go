package imgcodec

import (
	"bytes"
	"fmt"
	"image"
	"io"
	"sync"
	"sync/atomic"

	"github.com/faster-training/faster/imgcodec/internal/rawimg"
)

// DecodeFunc decodes a whole encoded image. opts is never nil.
type DecodeFunc func(data []byte, opts *DecodeOptions) (*Image, error)

// ConfigFunc reads an encoded image's size and components without decoding
// its pixels.
type ConfigFunc func(data []byte) (Config, error)

type format struct {
	name, magic string
	accept      func([]byte) bool // in place of magic, for formats of several signatures
	decode      DecodeFunc
	config      ConfigFunc
}

var (
	formatsMu     sync.Mutex
	atomicFormats atomic.Value // []format
)

// RegisterFormat registers a format for Decode and DecodeConfig, chosen by
// its magic prefix, in which '?' matches any byte (as in
// image.RegisterFormat). A format registered later under the same name
// replaces the earlier one; formats are tried in registration order.
// Packages call it from init; it is safe for concurrent use.
func RegisterFormat(name, magic string, decode DecodeFunc, config ConfigFunc) {
	register(format{name: name, magic: magic, decode: decode, config: config})
}

// registerAccepting registers a format told by accept rather than one
// magic prefix (TIFF's two byte orders, PNM's six signatures).
func registerAccepting(name string, accept func([]byte) bool, decode DecodeFunc, config ConfigFunc) {
	register(format{name: name, accept: accept, decode: decode, config: config})
}

func register(f format) {
	formatsMu.Lock()
	defer formatsMu.Unlock()
	old, _ := atomicFormats.Load().([]format)
	fs := make([]format, 0, len(old)+1)
	name := f.name
	replaced := false
	for _, o := range old {
		if o.name == name {
			o, replaced = f, true
		}
		fs = append(fs, o)
	}
	if !replaced {
		fs = append(fs, f)
	}
	atomicFormats.Store(fs)
}

// RegisterStdFormat registers a format decoded by a Go image decoder (the
// functions image.RegisterFormat takes). Its output is converted to RGB or
// gray, box-downscaled for ScaleDenom and cropped; the pixel limit is
// checked with config before decoding.
func RegisterStdFormat(name, magic string, decode func(io.Reader) (image.Image, error), config func(io.Reader) (image.Config, error)) {
	d, c := stdFuncs(name, decode, config)
	RegisterFormat(name, magic, d, c)
}

// stdFuncs are the DecodeFunc and ConfigFunc of a Go image decoder.
func stdFuncs(name string, decode func(io.Reader) (image.Image, error), config func(io.Reader) (image.Config, error)) (DecodeFunc, ConfigFunc) {
	return func(data []byte, opts *DecodeOptions) (*Image, error) {
			return decodeStd(name, data, opts, decode, config)
		},
		func(data []byte) (Config, error) {
			c, err := config(bytes.NewReader(data))
			if err != nil {
				return Config{}, stdError(name, err, len(data))
			}
			return Config{Format: name, Width: c.Width, Height: c.Height, Components: components(c), WorkBytesPerPixel: workBytes(c)}, nil
		}
}

func match(magic string, b []byte) bool {
	if len(magic) > len(b) {
		return false
	}
	for i := 0; i < len(magic); i++ {
		if magic[i] != b[i] && magic[i] != '?' {
			return false
		}
	}
	return true
}

// sniff returns the format whose magic prefixes data, by content and never
// by file name: a PNG named .JPEG decodes as PNG.
func sniff(data []byte) (format, error) {
	if len(data) == 0 {
		return format{}, rawimg.Truncated("image", 0, "empty data")
	}
	fs, _ := atomicFormats.Load().([]format)
	for _, f := range fs {
		if f.accept != nil && f.accept(data) || f.accept == nil && match(f.magic, data) {
			return f, nil
		}
	}
	for _, f := range fs {
		if f.accept == nil && len(data) < len(f.magic) && match(f.magic[:len(data)], data) {
			return format{}, rawimg.Truncated(f.name, int64(len(data)), "data ends in the signature")
		}
	}
	n := min(len(data), 8)
	return format{}, fmt.Errorf("imgcodec: data starting %q: %w", data[:n], ErrUnknownFormat)
}

// Decode decodes an encoded image of any registered format, found by its
// magic bytes, as opts asks (nil means the zero DecodeOptions: the whole
// image, full size, RGB). The returned Image should be Released when done.
func Decode(data []byte, opts *DecodeOptions) (*Image, error) {
	f, err := sniff(data)
	if err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &DecodeOptions{}
	}
	if err := checkBytes(f, data, opts); err != nil {
		return nil, err
	}
	img, err := f.decode(data, opts)
	if err != nil {
		return nil, fmt.Errorf("imgcodec: %w", err)
	}
	return img, nil
}

// checkBytes refuses, from the header alone, an image whose decoding
// would take more memory than opts allows. A header the config function
// cannot read is left to the decoder, which reports it as it reads it.
func checkBytes(f format, data []byte, opts *DecodeOptions) error {
	c, err := f.config(data)
	if err != nil {
		return nil
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	if n := c.DecodeBytes(opts); n > limit {
		return fmt.Errorf("imgcodec: %s: %dx%d: decoding takes %d MiB (%d bytes a pixel of working memory), above the limit of %d MiB: %w",
			c.Format, c.Width, c.Height, n>>20, c.WorkBytesPerPixel, limit>>20, ErrTooLarge)
	}
	return nil
}

// DecodeConfig reads the format, size and colour components of an encoded
// image without decoding its pixels.
func DecodeConfig(data []byte) (Config, error) {
	f, err := sniff(data)
	if err != nil {
		return Config{}, err
	}
	c, err := f.config(data)
	if err != nil {
		return Config{}, fmt.Errorf("imgcodec: %w", err)
	}
	return c, nil
}

// Formats lists the names of the registered formats in the order they are
// tried.
func Formats() []string {
	fs, _ := atomicFormats.Load().([]format)
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names
}
