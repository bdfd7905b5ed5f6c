package downscale

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/faster-training/faster/imgcodec"
)

// NonImages says what happens to files without an image extension.
type NonImages uint8

const (
	CopyNonImages NonImages = iota // copy them byte for byte (the default)
	SkipNonImages                  // leave them out of the destination
)

// ParseNonImages parses "copy" or "skip".
func ParseNonImages(s string) (NonImages, error) {
	switch s {
	case "copy", "":
		return CopyNonImages, nil
	case "skip":
		return SkipNonImages, nil
	}
	return 0, fmt.Errorf("non-image policy %q: want copy or skip", s)
}

func (n NonImages) String() string {
	if n == SkipNonImages {
		return "skip"
	}
	return "copy"
}

// Progress receives the progress of a run; *progress.Bar implements it.
// Calls come from several goroutines.
type Progress interface {
	SetTotal(images int64)
	Add(images, bytes int64)
}

// Options configure Run. The zero value is invalid only in MaxSize.
type Options struct {
	// MaxSize is the largest shorter edge kept (required, > 0): larger
	// images are resized so that their shorter edge is MaxSize.
	MaxSize int
	// Workers is the number of images processed in parallel; 0 means
	// runtime.GOMAXPROCS(0).
	Workers int
	// Quality is the JPEG quality of resized images, 1-100; 0 means
	// imgcodec.DefaultQuality (90).
	Quality int
	// EXIF applies a JPEG's EXIF orientation before resizing (what
	// cv2.imread does). Off by default: the pixels keep the stored
	// orientation, which is what PIL-based loaders (torchvision's
	// ImageFolder) see when they read the originals.
	EXIF bool
	// NonImages is the policy for files without an image extension.
	NonImages NonImages
	// NoScaledDecode turns DCT-domain scaled decoding off, so that every
	// resized image goes through a full decode and the exact area filter
	// (the path equivalent to OpenCV's INTER_AREA).
	NoScaledDecode bool
	// RGB resizes every image in RGB, as OpenCV does: decode to RGB, area
	// resize, convert back for JPEG. Without it a 4:2:0 YCbCr JPEG written
	// as JPEG (the usual case) is resized in its stored planes instead,
	// luma at full and chroma at half resolution, and its output written
	// from the resized planes: no chroma upsampling, colour conversion or
	// chroma downsampling, within 40 dB PSNR of the RGB path's output
	// (TestPlanarPSNR). NoScaledDecode and RGB together are the path
	// equivalent to cv2.imread + cv2.resize(INTER_AREA).
	RGB bool
	// Sync makes every output durable (fsync of the file and its folder)
	// before the next is written. Without it outputs are still written
	// atomically (temp file + rename) and the whole destination file system
	// is synced once at the end; see the package documentation.
	Sync bool
	// MaxPixels bounds width*height of decoded images (0: imgcodec's
	// default), against decompression bombs.
	MaxPixels int64
	// Progress, if set, is told the number of images and each one done.
	Progress Progress

	// TaskCount > 0 processes only task TaskIndex's part of the files (one
	// of TaskCount independent tasks, see parts.go), then commits a part
	// manifest, create-only; MergeParts checks the set.
	TaskIndex, TaskCount int
}

// EnsureDefaults fills the zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Quality == 0 {
		o.Quality = imgcodec.DefaultQuality
	}
}

// Validate reports every problem with o at once.
func (o *Options) Validate() error {
	var errs []error
	if o.MaxSize <= 0 {
		errs = append(errs, fmt.Errorf("max size %d: must be positive", o.MaxSize))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers %d: must not be negative", o.Workers))
	}
	if o.Quality < 0 || o.Quality > 100 {
		errs = append(errs, fmt.Errorf("quality %d: want 1-100", o.Quality))
	}
	if o.NonImages > SkipNonImages {
		errs = append(errs, fmt.Errorf("unknown non-image policy %d", o.NonImages))
	}
	if o.TaskCount < 0 || o.TaskCount > 0 && (o.TaskIndex < 0 || o.TaskIndex >= o.TaskCount) {
		errs = append(errs, fmt.Errorf("task %d of %d: want 0 <= task < count", o.TaskIndex, o.TaskCount))
	}
	if o.TaskCount > MaxTasks {
		errs = append(errs, fmt.Errorf("task count %d: at most %d tasks", o.TaskCount, MaxTasks))
	}
	if o.MaxPixels < 0 {
		errs = append(errs, fmt.Errorf("max pixels %d: must not be negative", o.MaxPixels))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrOptions, errors.Join(errs...))
	}
	return nil
}
