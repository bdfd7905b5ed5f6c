package traintest

import (
	"testing"

	"github.com/faster-training/faster/train"
)

// The rounded-output bound: one unit of the precision's last place (at
// the value before the bias) plus the accumulation bound, and no more.
func TestBeyondLastPlace(t *testing.T) {
	want := []float32{3, 1, -0.5}
	for _, c := range []struct {
		p    train.Precision
		got  []float32
		pre  []float32
		ok   bool
		note string
	}{
		{train.BFloat16, []float32{3.015625, 1, -0.5}, want, true, "one bf16 unit at 3 (2^-6)"},
		{train.BFloat16, []float32{3.03125, 1, -0.5}, want, false, "two units"},
		{train.Float16, []float32{3.015625, 1, -0.5}, want, false, "eight fp16 units at 3"},
		{train.Float16, []float32{3.001953125, 1, -0.5}, want, true, "one fp16 unit at 3 (2^-9)"},
		{train.BFloat16, []float32{3, 1.0625, -0.5}, []float32{3, 8, -0.5}, true, "the unit at the pre-bias 8 (2^-4)"},
		{train.BFloat16, []float32{3, 1.0625, -0.5}, want, false, "the unit at 1 (2^-7)"},
	} {
		_, _, ok := beyondLastPlace(c.p, c.got, want, c.pre, 0)
		if ok != c.ok {
			t.Errorf("%s (%v): ok %v, want %v", c.note, c.p, ok, c.ok)
		}
	}
	if !representable(train.BFloat16, []float32{3.015625, -0.5}) || representable(train.BFloat16, []float32{3.0078125}) {
		t.Error("representable: 3+2^-6 is a bf16 value, 3+2^-7 is not")
	}
}
