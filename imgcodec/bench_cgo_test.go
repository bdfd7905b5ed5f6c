//go:build cgo

package imgcodec_test

import "github.com/faster-training/faster/imgcodec/turbojpeg/tjpeer"

// newPeer returns a decode through TurboJPEG's tjDecompress2 into a reused
// buffer, as a program using libjpeg-turbo directly would do.
func newPeer() (func(data []byte, denom int) error, error) {
	d, err := tjpeer.Open()
	if err != nil {
		return nil, err
	}
	var buf []byte
	return func(data []byte, denom int) error {
		w, h, err := d.Size(data)
		if err != nil {
			return err
		}
		w, h = (w+denom-1)/denom, (h+denom-1)/denom
		if len(buf) < w*h*3 {
			buf = make([]byte, w*h*3)
		}
		return d.Decode(data, buf, w, h)
	}, nil
}
