package loader

import (
	"math"
	"strings"
	"testing"

	"github.com/faster-training/faster/augment"
)

// TestOptionsRefuseBadTransformParams: Options a library caller (or
// faster.Loader's server) builds with a NaN, an infinity, a value beyond
// float32, a reversed range or an unbounded count are refused when the
// loader opens, naming the option (before: a NaN flip probability or crop
// scale was taken, Resize 2^40 ran out of memory, NumShards 2^62 panicked
// in makeslice, an infinite erasing ratio panicked in rand.IntN, 2^40
// magnitude bins ran out of memory, a brightness of 3.5e38 served black
// pictures).
func TestOptionsRefuseBadTransformParams(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"flip NaN", func(o *Options) { o.FlipProb = nan }, "flip probability"},
		{"crop scale NaN", func(o *Options) { o.CropScale = [2]float64{nan, nan} }, "crop scale"},
		{"crop ratio inf", func(o *Options) { o.CropRatio = [2]float64{inf, inf} }, "crop ratio"},
		{"crop ratio NaN", func(o *Options) { o.CropRatio = [2]float64{nan, nan} }, "crop ratio"},
		{"crop ratio 0,2", func(o *Options) { o.CropRatio = [2]float64{0, 2} }, "crop ratio"},
		{"crop ratio 1e300", func(o *Options) { o.CropRatio = [2]float64{1e300, 1e300} }, "crop ratio"},
		{"resize 2^40", func(o *Options) { o.Transform, o.Resize = Eval, 1<<40 }, "resize"},
		{"resize 16385", func(o *Options) { o.Transform, o.Resize = Eval, MaxResolution+1 }, "resize"},
		{"shards 2^62", func(o *Options) { o.NumShards, o.ShardIdx = 1<<62, 5 }, "shards"},
		{"mean NaN", func(o *Options) { o.Mean, o.Std = [3]float32{float32(nan)}, [3]float32{1, 1, 1} }, "mean"},
		{"std inf", func(o *Options) { o.Mean, o.Std = [3]float32{}, [3]float32{float32(inf), 1, 1} }, "std"},
		{"std 0", func(o *Options) { o.Mean, o.Std = [3]float32{}, [3]float32{0, 1, 1} }, "std"},
		{"erasing ratio inf", func(o *Options) { o.Erasing = &augment.RandomErasing{P: 1, Ratio: [2]float64{inf, inf}} }, "RandomErasing ratio"},
		{"bins 2^40", func(o *Options) { o.Augment = &augment.TrivialAugmentWide{Bins: 1 << 40} }, "num_magnitude_bins"},
		{"brightness 3.5e38", func(o *Options) { o.Augment = &augment.ColorJitter{Brightness: [2]float64{0, 3.5e38}} }, "brightness"},
		{"blur over the crop", func(o *Options) {
			o.Resolution, o.Augment = 16, augment.Sequence{&augment.GaussianBlurOp{KernelW: 33, KernelH: 33}}
		}, "GaussianBlur"},
		{"blur over the schedule's least", func(o *Options) {
			o.Resolution, o.Schedule, o.Augment = 64, []int{16, 64}, &augment.GaussianBlurOp{KernelW: 33, KernelH: 33}
		}, "GaussianBlur"},
	} {
		o := Options{MaxBatchMemory: 1 << 40}
		c.edit(&o)
		err := o.ensureDefaults()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error naming %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct {
		name string
		edit func(o *Options)
	}{
		{"defaults", func(o *Options) {}},
		{"resize at the limit", func(o *Options) { o.Transform, o.Resize = Eval, MaxResolution }},
		{"ratio float32 edges", func(o *Options) { o.CropRatio = [2]float64{1e-40, 3e38} }},
		{"scale 0,0", func(o *Options) { o.CropScale = [2]float64{0, 0}; o.CropRatio = [2]float64{1, 1} }},
		{"blur 31 on 16", func(o *Options) { o.Resolution, o.Augment = 16, &augment.GaussianBlurOp{KernelW: 31, KernelH: 31} }},
		{"shards at the cap", func(o *Options) { o.NumShards, o.ShardIdx = MaxWorld, MaxWorld-1 }},
	} {
		o := Options{MaxBatchMemory: 1 << 40}
		c.edit(&o)
		if err := o.ensureDefaults(); err != nil {
			t.Errorf("%s: %v; want taken", c.name, err)
		}
	}
}
