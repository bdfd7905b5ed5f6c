package source

import (
	"testing"
	"unsafe"
)

func TestBufferClasses(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 42_000, 65536, 65537, 1 << 26, 1<<26 + 1} {
		b := GetBuffer(n)
		if len(b.B) != 0 || cap(b.B) < n {
			t.Errorf("GetBuffer(%d): len %d cap %d", n, len(b.B), cap(b.B))
		}
		b.Release()
	}
	// A buffer a reader grew to an odd capacity goes to the largest class
	// it covers: what GetBuffer then hands out still holds the class size.
	odd := &Buffer{B: make([]byte, 100_000)}
	odd.Release()
	for range 4 {
		b := GetBuffer(65536)
		if cap(b.B) < 65536 {
			t.Fatalf("GetBuffer(65536) gave cap %d", cap(b.B))
		}
	}
	var nilBuf *Buffer
	nilBuf.Release() // harmless
}

// A released buffer's memory is what a later GetBuffer of its class hands
// out. sync.Pool gives no promise (a goroutine may move to another P
// between the calls; -race drops a quarter of the puts), so the test asks
// for reuse at least once in many tries, which never happens without it.
func TestBufferReused(t *testing.T) {
	reused := 0
	for range 64 {
		a := GetBuffer(42_000)
		a.B = append(a.B, 1, 2, 3)
		p := unsafe.SliceData(a.B)
		a.Release()
		b := GetBuffer(40_000)
		if unsafe.SliceData(b.B) == p {
			reused++
		}
		b.Release()
	}
	if reused == 0 {
		t.Fatal("no released buffer was handed out again in 64 tries")
	}
}
