package imgcodec

import (
	"math/bits"
	"sync"
)

// Pixel buffers are pooled by power-of-two size class, the Image struct
// with them, so that decoding in steady state allocates nothing. Buffers
// above MaxPooledBytes are not pooled (the garbage collector takes them),
// which caps what one pooled buffer can pin; sync.Pool drops idle ones at
// garbage collection, which caps the total.
const (
	minClassBits = 12 // 4 KiB
	maxClassBits = 26 // 64 MiB

	// MaxPooledBytes is the largest pixel buffer kept for reuse.
	MaxPooledBytes = 1 << maxClassBits
)

var pools [maxClassBits + 1]sync.Pool

// NewImage returns an image of the given size from the pool, with
// Stride = width*channels. The contents of Pix are undefined (a reused
// buffer holds the previous image): callers overwrite every byte.
// Release it when done.
func NewImage(width, height, channels int) *Image {
	img := getImage(width * height * channels)
	img.Width, img.Height, img.Channels, img.Stride = width, height, channels, width*channels
	return img
}

// getImage returns an Image whose Pix has length n, pooled if n is at most
// MaxPooledBytes.
func getImage(n int) *Image {
	if n > MaxPooledBytes {
		return &Image{Pix: make([]uint8, n), class: -1}
	}
	c := minClassBits
	if n > 1<<minClassBits {
		c = bits.Len(uint(n - 1))
	}
	if v := pools[c].Get(); v != nil {
		img := v.(*Image)
		img.Pix, img.pooled, img.released = img.pooled[:n], nil, false
		return img
	}
	return &Image{Pix: make([]uint8, n, 1<<c), class: int8(c)}
}

// Release returns the image and its buffer to the pool. The image must not
// be used afterwards. Release of a nil or non-pooled Image only clears it.
func (img *Image) Release() {
	if img == nil {
		return
	}
	c, pix := img.class, img.Pix
	if img.released {
		return
	}
	*img = Image{class: c, released: true}
	if c <= 0 || cap(pix) != 1<<c {
		img.class = -1
		return
	}
	img.pooled = pix[:0]
	pools[c].Put(img)
}
