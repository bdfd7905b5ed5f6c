package nvjpeg

import (
	"errors"
	"fmt"
	"image"
	"strings"

	"github.com/faster-training/faster/augment"
)

// ErrNoCgo is Open's error in a build without cgo: there is no dlopen.
var ErrNoCgo = errors.New("nvjpeg: built without cgo: no GPU decode")

// Attempt is one library tried: the soname given to dlopen and, when it
// failed, why (dlerror's words, or the symbols it lacks).
type Attempt struct {
	Lib    Library
	Soname string
	Err    string // "" when it opened with every symbol
}

// LoadError is the failure to open nvJPEG or the CUDA runtime: every
// soname tried and why each failed.
type LoadError struct {
	Attempts []Attempt
}

func (e *LoadError) Error() string {
	var failed []string
	for _, a := range e.Attempts {
		if a.Err != "" {
			failed = append(failed, fmt.Sprintf("%s (%s)", a.Soname, a.Err))
		}
	}
	return "nvjpeg: no GPU decode: tried " + strings.Join(failed, ", ")
}

// OpenError is Open's failure to load what the GPU decode needs: nvJPEG
// and the runtime (a *LoadError) and the driver and NVRTC (train/cuda's
// *cuda.LoadError), one line naming every library tried.
type OpenError struct {
	Ordinal int
	Errs    []error // nil where that part loaded
}

func (e *OpenError) Error() string {
	var why []string
	for _, err := range e.Errs {
		if err != nil {
			why = append(why, err.Error())
		}
	}
	return fmt.Sprintf("GPU %d: %s", e.Ordinal, strings.Join(why, "; "))
}

func (e *OpenError) Unwrap() []error { return e.Errs }

// Error is a failed nvJPEG or CUDA runtime call.
type Error struct {
	Call string // what failed, as nvj.c names it
	Code int
}

func (e *Error) Error() string { return fmt.Sprintf("nvjpeg: %s (status %d)", e.Call, e.Code) }

// Options configure Open.
type Options struct {
	Ordinal int // the GPU
	// MaxBatch is the most images a DecodeBatch is given (the loader's
	// batch): nvJPEG's hardware decoder allocates its buffers for that
	// many at Open (nvjpegDecodeBatchedPreAllocate, images up to 512×512),
	// so that batches of any size up to it allocate nothing. 0 is
	// DefaultMaxBatch. A larger batch still decodes; nvJPEG grows its
	// buffers for it.
	MaxBatch int
	// CacheDir and NoCache are the kernels' NVRTC cache (train/cuda's
	// Options: "" is the user's cache directory).
	CacheDir string
	NoCache  bool
}

// DefaultMaxBatch is Options.MaxBatch when it is 0: the loader's default
// batch.
const DefaultMaxBatch = 256

// Job is one image of a batch: its JPEG, the region of it to decode
// (Crop, full-size pixels: nvJPEG's region of interest), resampled to
// ResizeW×ResizeH of which View is kept (the batch's row size), mirrored
// when Flip, with Filter's weights (Pillow's), into the row at element
// offset Dst of the destination buffer (bytes for uint8 rows, floats
// for float32).
type Job struct {
	Data             []byte
	Crop             image.Rectangle
	ResizeW, ResizeH int
	View             image.Rectangle
	Flip             bool
	Filter           augment.Filter
	Dst              int64
}

// Rows is the batch's row format: W×H×3 uint8 HWC, or float32 CHW
// through LUT (kernels.NormLUT) when F32.
type Rows struct {
	W, H int
	F32  bool
	LUT  []float32
}

// Result says where each image of a batch was decoded. The CPU ones
// (Route CPU: refused by CanDecode, or failed on both backends) are the
// caller's to decode and Upload.
type Result struct {
	Routes []Route
	Why    []string // why an image went to the CPU ("" otherwise)
}

// Count is how many images took route r.
func (r Result) Count(route Route) int {
	n := 0
	for _, x := range r.Routes {
		if x == route {
			n++
		}
	}
	return n
}
