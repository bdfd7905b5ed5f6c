//go:build cgo

package turbojpeg

// unwalked decodes data with libjpeg-turbo without the Go walk of its
// markers (rawimg.CheckJPEGScans): what the progress monitor's backstop
// alone stops. ok is false in a build without libjpeg-turbo.
func unwalked(data []byte) (err error, ok bool) {
	h, err := DecodeHeader(data)
	if err != nil {
		return err, true
	}
	o := &Options{AllowTruncated: true, MaxPixels: 1 << 22}
	_, err = decode(data, o, h, func(n int) []byte { return make([]byte, n) })
	return err, true
}
