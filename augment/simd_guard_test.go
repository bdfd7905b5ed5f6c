//go:build linux

package augment

import (
	"bytes"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/faster-training/faster/augment/internal/simd"
	"github.com/faster-training/faster/imgcodec"
)

// TestSIMDGuardPage puts the source right before an unreadable page, so
// that a kernel reading past the last pixel faults, and checks the SIMD
// kernels against the Go ones there.
func TestSIMDGuardPage(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 64*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skip(err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[63*page:], syscall.PROT_NONE); err != nil {
		t.Skip(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, level := range []int{2, 1} {
		simd.SetLevel(level)
		var fast, ref Resizer
		ref.goSrc = true
		for i := range 400 {
			m := randomImage(rng)
			if len(m.Pix) > 63*page {
				continue
			}
			pix := mem[63*page-len(m.Pix) : 63*page : 63*page]
			copy(pix, m.Pix)
			src := &imgcodec.Image{Width: m.Width, Height: m.Height, Channels: m.Channels, Stride: m.Stride, Pix: pix}
			box := randomBox(rng, src)
			w, h := randomOutSize(rng, box)
			f, flip := Filter(rng.IntN(2)), rng.IntN(2) == 0
			a, b := NewImage(w, h, src.Channels), NewImage(w, h, src.Channels)
			if err := ref.ResizeBox(a, src, box, f, flip); err != nil {
				t.Fatal(err)
			}
			if err := fast.ResizeBox(b, src, box, f, flip); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Pix, b.Pix) {
				t.Fatalf("level %d case %d: SIMD and Go differ", level, i)
			}
		}
	}
	simd.SetLevel(2)
}
