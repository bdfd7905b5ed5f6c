//go:build cgo && faster_static

package turbojpeg

// -tags faster_static links libjpeg-turbo's static archive into the binary
// (Debian's libjpeg62-turbo-dev ships libjpeg.a), so the binary runs where
// no libjpeg is installed: the one the Python wheel carries (make wheel).

// #cgo LDFLAGS: -l:libjpeg.a
import "C"

// Link says how libjpeg-turbo is linked into this build.
const Link = "static"
