package augment

import (
	"math/rand/v2"

	"github.com/faster-training/faster/imgcodec"
)

// ImageOp is an augmentation of the uint8 picture as a recipe runs it:
// draw the sample's parameters from rng (the sample's source, so the
// epoch and the sample decide them), then apply them to m in place. The
// ops of this package implement it; they are read-only once built and
// may be shared by goroutines, each with its own Scratch.
type ImageOp interface {
	Augment(s *Scratch, rng *rand.Rand, m *imgcodec.Image) error
}

// Sequence runs ops in order, as a torchvision Compose of them.
type Sequence []ImageOp

func (q Sequence) Augment(s *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	for _, op := range q {
		if err := op.Augment(s, rng, m); err != nil {
			return err
		}
	}
	return nil
}

func (ta *TrivialAugmentWide) Augment(s *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	return ta.Apply(s, m, ta.Draw(rng))
}

func (ra *RandAugment) Augment(s *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	var buf [8]AugStep
	for _, st := range ra.Draw(rng, m.Width, m.Height, buf[:0]) {
		if err := s.ApplyAugOp(m, st, ra.Interp, ra.Fill); err != nil {
			return err
		}
	}
	return nil
}

func (aa *AutoAugment) Augment(s *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	var buf [2]AugStep
	for _, st := range aa.Draw(rng, m.Width, m.Height, buf[:0]) {
		if err := s.ApplyAugOp(m, st, aa.Interp, aa.Fill); err != nil {
			return err
		}
	}
	return nil
}

func (a *AugMix) Augment(s *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	return a.Apply(s, m, a.Draw(rng, m.Width, m.Height))
}

func (j *ColorJitter) Augment(s *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	if j.PIL {
		return s.applyJitterPIL(m, j.Draw(rng))
	}
	return ApplyJitter(m, j.Draw(rng))
}

func (g RandomGrayscale) Augment(_ *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	if !g.Draw(rng) {
		return nil
	}
	if g.PIL {
		return pilGray(m)
	}
	return ToGrayscale(m)
}

func (g *GaussianBlurOp) Augment(s *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	sigma := g.Draw(rng)
	return s.GaussianBlur(m, g.KernelW, g.KernelH, sigma, sigma)
}

func (r *RandomRotation) Augment(s *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	return s.Rotate(m, r.Draw(rng), r.Interp, r.Center, r.Fill)
}

func (a *RandomAffine) Augment(s *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	return s.Affine(m, a.Draw(rng, m.Width, m.Height), a.Interp, a.Center, a.Fill)
}

func (c *Cutout) Augment(_ *Scratch, rng *rand.Rand, m *imgcodec.Image) error {
	x, y := c.Draw(rng, m.Width, m.Height)
	return c.Apply(m, x, y)
}
