package train

import "math"

// GradScaler is dynamic loss scaling with the semantics of
// torch.cuda.amp.GradScaler: the loss gradient is multiplied by Scale
// before the backward pass so that small gradients survive a 16-bit
// format; Unscale divides the gradients back and reports non-finite
// values; a step with a non-finite gradient is skipped and the scale cut
// by BackoffFactor; after GrowthInterval finite steps in a row it grows by
// GrowthFactor.
type GradScaler struct {
	Scale          float64
	GrowthFactor   float64
	BackoffFactor  float64
	GrowthInterval int
	// Skipped counts the steps skipped for non-finite gradients.
	Skipped int
	// Growth counts the finite steps since the scale last changed
	// (torch's growth tracker).
	Growth int
}

// NewGradScaler returns a scaler with torch's defaults: scale 2¹⁶, growth
// ×2 every 2000 finite steps, backoff ×0.5.
func NewGradScaler() *GradScaler {
	return &GradScaler{Scale: 65536, GrowthFactor: 2, BackoffFactor: 0.5, GrowthInterval: 2000}
}

// Unscale divides every gradient of params by the scale and reports
// whether all of them are finite (torch's unscale_ and found_inf).
func (s *GradScaler) Unscale(params []*Param) (finite bool) {
	return unscale(params, float32(1/s.Scale))
}

// unscale multiplies every gradient of params by inv and reports whether
// all of them are finite.
func unscale(params []*Param, inv float32) (finite bool) {
	finite = true
	for _, p := range params {
		for i, g := range p.Grad {
			g *= inv
			if math.IsNaN(float64(g)) || math.IsInf(float64(g), 0) {
				finite = false
			}
			p.Grad[i] = g
		}
	}
	return finite
}

// Update adjusts the scale after a step whose gradients were finite or
// not (torch's update).
func (s *GradScaler) Update(finite bool) {
	if !finite {
		s.Scale *= s.BackoffFactor
		s.Growth = 0
		s.Skipped++
		return
	}
	s.Growth++
	if s.Growth == s.GrowthInterval {
		s.Scale *= s.GrowthFactor
		s.Growth = 0
	}
}
