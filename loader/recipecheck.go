package loader

import (
	"fmt"
	"math"

	"github.com/faster-training/faster/augment"
)

// checkRecipe checks the recipes' parameters as torchvision checks its
// transforms' (at construction, or at the first draw, where torch's
// uniform_ refuses a bound that is NaN, infinite or beyond float32: "out of
// bounds for float"), and bounds what is allocated by them: a NaN is never
// a probability, a range is lo <= hi, Resize is at most the decoder's
// side, NumShards at most MaxWorld. Each problem is one error.
func (o *Options) checkRecipe() []error {
	var errs []error
	if o.NumShards > MaxWorld {
		// rankCounts and the epoch's order hold a count per rank.
		errs = append(errs, fmt.Errorf("shards %d: at most %d ranks", o.NumShards, MaxWorld))
	}
	if !(o.FlipProb >= 0 && o.FlipProb <= 1) {
		errs = append(errs, fmt.Errorf("flip probability %g: want a probability in [0, 1]", o.FlipProb))
	}
	if s := o.CropScale; s != ([2]float64{}) && !(s[0] >= 0 && s[0] <= s[1] && s[1] <= 1) {
		errs = append(errs, fmt.Errorf("crop scale %v: want 0 <= lo <= hi <= 1", s))
	}
	if r := o.CropRatio; r != ([2]float64{}) && !(float32(r[0]) > 0 && r[0] <= r[1] && r[1] <= math.MaxFloat32) {
		// torchvision takes log(ratio) in float32: 0, NaN, inf or 1e300
		// raise "from/to is out of bounds for float".
		errs = append(errs, fmt.Errorf("crop ratio %v: want 0 < lo <= hi <= %g (float32s: torchvision draws log(ratio) in float32)", r, float32(math.MaxFloat32)))
	}
	if o.Resize < 0 || o.Resize > MaxResolution {
		// Compared before any product: the resized picture is at least
		// Resize x Resize pixels.
		errs = append(errs, fmt.Errorf("resize %d: want 0 (resolution*256/224) or at most %d (the side of the decoder's limit of %d pixels)",
			o.Resize, MaxResolution, MaxResolution*MaxResolution))
	}
	for i := range 3 {
		m, s := float64(o.Mean[i]), float64(o.Std[i])
		if math.IsNaN(m) || math.IsInf(m, 0) || math.IsNaN(s) || math.IsInf(s, 0) || !(s > 0) {
			// torchvision: "std evaluated to zero after conversion to
			// torch.float32, leading to division by zero"; a NaN or an
			// infinity serves NaN, infinite or zero pixels.
			errs = append(errs, fmt.Errorf("mean %v, std %v: want finite float32s, std above 0", o.Mean, o.Std))
			break
		}
	}
	if err := augment.Check(o.Augment); err != nil {
		errs = append(errs, err)
	}
	if o.Erasing != nil {
		if err := o.Erasing.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Augment != nil && o.Transform == Train {
		side := o.Resolution
		for _, r := range o.Schedule {
			if r >= 1 {
				side = min(side, r)
			}
		}
		if err := augment.CheckSize(o.Augment, side); err != nil {
			errs = append(errs, fmt.Errorf("resolution %d: %w", side, err))
		}
	}
	return errs
}
