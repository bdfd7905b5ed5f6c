package train

import (
	"math"
	"testing"
)

// TestGradScalerTorchSemantics follows torch.cuda.amp.GradScaler's
// documented update rule step by step.
func TestGradScalerTorchSemantics(t *testing.T) {
	s := NewGradScaler()
	s.GrowthInterval = 3
	p := &Param{Grad: make([]float32, 2)}
	step := func(g0, g1 float32) bool {
		p.Grad[0], p.Grad[1] = g0*float32(s.Scale), g1*float32(s.Scale)
		ok := s.Unscale([]*Param{p})
		s.Update(ok)
		return ok
	}
	want := []struct {
		g     float32
		ok    bool
		scale float64
	}{
		{1, true, 65536}, {1, true, 65536}, {1, true, 131072}, // grows after 3 finite steps
		{float32(math.Inf(1)), false, 65536}, // backoff, tracker reset
		{1, true, 65536}, {1, true, 65536}, {1, true, 131072},
		{float32(math.NaN()), false, 65536},
	}
	for i, w := range want {
		ok := step(w.g, 0.5)
		if ok != w.ok || s.Scale != w.scale {
			t.Fatalf("step %d: finite %v scale %g, want %v %g", i, ok, s.Scale, w.ok, w.scale)
		}
		if ok && (p.Grad[0] != w.g || p.Grad[1] != 0.5) {
			t.Fatalf("step %d: unscaled gradients %v, want [%g 0.5]", i, p.Grad, w.g)
		}
	}
	if s.Skipped != 2 {
		t.Fatalf("skipped %d steps, want 2", s.Skipped)
	}
}
