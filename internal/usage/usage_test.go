package usage

import "testing"

// Work on the CPU shows in CPU; an allocation shows in Measure's bytes.
func TestMeasure(t *testing.T) {
	var sink []byte
	alloc, _ := Measure(func() { sink = make([]byte, 1<<20) })
	if alloc < 1<<20 {
		t.Errorf("a 1 MiB allocation measured as %d bytes", alloc)
	}
	_ = sink
	c0 := CPU()
	x := 0
	for i := range 200_000_000 {
		x ^= i
	}
	if CPU() <= c0 && c0 != 0 {
		t.Errorf("CPU did not advance over a busy loop (%d)", x)
	}
}
