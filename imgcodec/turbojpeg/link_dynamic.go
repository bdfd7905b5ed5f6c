//go:build cgo && !faster_static

package turbojpeg

// The default build links the system's shared libjpeg (libjpeg62-turbo).

// #cgo LDFLAGS: -ljpeg
import "C"

// Link says how libjpeg-turbo is linked into this build.
const Link = "shared"
