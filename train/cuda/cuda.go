package cuda

import (
	"errors"
	"fmt"
	"strings"

	"github.com/faster-training/faster/train/cuda/kernels"
)

// ErrNoCgo is Open's error in a build without cgo: there is no dlopen.
var ErrNoCgo = errors.New("cuda: built without cgo")

// ErrNoDriver matches (errors.Is) a LoadError whose driver library, or
// another required one, did not open: the machine has no usable CUDA.
var ErrNoDriver = errors.New("cuda: no driver")

// Attempt is one library tried: the soname given to dlopen and, when it
// failed, why (dlerror's words, or the symbols it lacks).
type Attempt struct {
	Lib    Library
	Soname string
	Err    string // "" when it opened with every symbol
}

// LoadError is the failure to open the CUDA libraries. It names every
// soname tried and why each failed, the optional libraries included.
type LoadError struct {
	Attempts []Attempt
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString("cuda: ")
	b.WriteString(describe(e.Attempts, false))
	return b.String()
}

func (e *LoadError) Is(target error) bool { return target == ErrNoDriver }

// describe says what loading found: "no driver: tried libcuda.so.1 (…)"
// when a required library is missing, else the libraries opened and the
// missing ones. short names only the required libraries' attempts, and
// only the driver's when it is missing.
func describe(attempts []Attempt, short bool) string {
	var missing, failed []string
	opened := map[Library]string{}
	for _, a := range attempts {
		if a.Err == "" {
			opened[a.Lib] = a.Soname
		}
	}
	_, driver := opened[Driver]
	for _, a := range attempts {
		// short: the required libraries only, the driver alone without it.
		if a.Err != "" && (!short || libraries[a.Lib].required && (driver || a.Lib == Driver)) {
			failed = append(failed, fmt.Sprintf("%s (%s)", a.Soname, a.Err))
		}
	}
	for l, lib := range libraries {
		if _, ok := opened[Library(l)]; !ok && lib.required {
			missing = append(missing, lib.name)
		}
	}
	if len(missing) > 0 {
		what := "no driver"
		if driver {
			what = "no " + strings.Join(missing, ", ")
		}
		return what + ": tried " + strings.Join(failed, ", ")
	}
	var libs []string
	for l := range libraries {
		if s, ok := opened[Library(l)]; ok {
			libs = append(libs, s)
		}
	}
	s := "opened " + strings.Join(libs, ", ")
	if len(failed) > 0 {
		s += "; not " + strings.Join(failed, ", ")
	}
	return s
}

// Error is a failed CUDA or NVRTC call.
type Error struct {
	Call string // the function
	Code int    // what it returned
	Name string // the code's name or text, as the library says
}

func (e *Error) Error() string { return fmt.Sprintf("cuda: %s: %s (%d)", e.Call, e.Name, e.Code) }

// Options configure Open. The zero value opens device 0 with the compile
// cache in the user's cache directory.
type Options struct {
	// Ordinal is the device's index.
	Ordinal int
	// CacheDir holds compiled kernels (""): $XDG_CACHE_HOME/faster/nvrtc
	// or ~/.cache/faster/nvrtc); NoCache compiles every time.
	CacheDir string
	NoCache  bool
}

// Validate reports every problem of o at once.
func (o Options) Validate() error {
	if o.Ordinal < 0 {
		return fmt.Errorf("cuda: Ordinal %d: want ≥ 0", o.Ordinal)
	}
	return nil
}

// Facts are what the device says of itself through cuDeviceGetAttribute.
type Facts struct {
	Name          string
	Arch          string // "sm_90"
	Memory        uint64 // bytes
	Driver        int    // cuDriverGetVersion: 13000 is 13.0
	NVRTC         string // "13.0"
	kernels.Facts        // SMs and thread limits, for launch plans
}

// Arch is the NVRTC architecture of compute capability major.minor.
func Arch(major, minor int) string { return fmt.Sprintf("sm_%d%d", major, minor) }

// nvrtcOptions are the options every kernels.cu compile gets besides the
// architecture: no contraction of a*b+c, as the CPU build (kernels' doc).
var nvrtcOptions = []string{"--fmad=false"}
