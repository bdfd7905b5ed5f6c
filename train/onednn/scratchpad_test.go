//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/faster-training/faster/train"
)

// Regression: primitives created on one OS thread and executed on another
// overran oneDNN's thread-local library scratchpad (a segfault in the gemm
// convolution backward-weights at 4×64×2×2, the last stage of a small
// ResNet-18). Primitives now use a user scratchpad owned by the stream.
func TestPrimitiveOnAnotherThread(t *testing.T) {
	b := newBackend(t)
	c, err := train.NewConv2D(b, "c", train.ConvSpec{In: 64, Out: 64, Kernel: 3, Pad: 1}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	x, _ := b.NewTensor(4, 64, 2, 2)
	defer x.Release()
	onFreshThread := func(f func()) {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			f()
			close(done)
		}()
		<-done
	}
	var y train.Tensor
	onFreshThread(func() { y, err = c.Forward(x, true) }) // creates the primitives
	if err != nil {
		t.Fatal(err)
	}
	dy, _ := b.NewTensor(y.Shape()...)
	defer dy.Release()
	onFreshThread(func() { _, err = c.Backward(dy, true) }) // runs them elsewhere
	if err != nil {
		t.Fatal(err)
	}
}
