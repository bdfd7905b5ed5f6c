package train

import (
	"fmt"
	"math/rand/v2"
)

// ThinNetConfig is the Faster Training study's small CNN. Zero fields take the study's
// values: filters [32, 64, 128], blocks [2, 2, 2], 10 classes, 1 channel.
type ThinNetConfig struct {
	InChannels int
	Classes    int
	Filters    []int
	Blocks     []int
	// SeparateReLU builds each ReLU as a layer of its own instead of fused
	// into the convolution before it (ConvSpec.ReLU): the same network and
	// state_dict, one more pass over the activations each way.
	SeparateReLU bool
}

func (c *ThinNetConfig) ensureDefaults() {
	if c.InChannels == 0 {
		c.InChannels = 1
	}
	if c.Classes == 0 {
		c.Classes = 10
	}
	if len(c.Filters) == 0 {
		c.Filters = []int{32, 64, 128}
	}
	if len(c.Blocks) == 0 {
		c.Blocks = []int{2, 2, 2}
	}
}

// NewThinNet builds the study's ThinNet: for each stage i, a 3×3 convolution
// (no padding, no bias) from the previous width to Filters[i], then
// Blocks[i] more 3×3 convolutions at that width, each convolution followed
// by ReLU (fused into it unless cfg.SeparateReLU) and then BatchNorm; no pooling between stages (each convolution
// trims 2 pixels: 28×28 becomes 10×10 after nine); then adaptive average
// pooling to 2×2 and a linear classifier over Filters[last]·4 features.
// The parameter order matches the PyTorch module's state_dict.
func NewThinNet(b Backend, cfg ThinNetConfig, seed uint64) (*Sequential, error) {
	cfg.ensureDefaults()
	if len(cfg.Filters) != len(cfg.Blocks) {
		return nil, fmt.Errorf("thinnet: %d filters but %d block counts", len(cfg.Filters), len(cfg.Blocks))
	}
	rng := rand.New(rand.NewPCG(seed, 0x7468696e6e6574))
	net := &Sequential{}
	fail := func(err error) (*Sequential, error) { net.Close(); return nil, err }
	in, n := cfg.InChannels, 0
	for stage, f := range cfg.Filters {
		for range 1 + cfg.Blocks[stage] {
			name := fmt.Sprintf("features.%d", n)
			conv, err := NewConv2D(b, name+".conv", ConvSpec{In: in, Out: f, Kernel: 3, ReLU: !cfg.SeparateReLU}, rng)
			if err != nil {
				return fail(err)
			}
			net.Layers = append(net.Layers, conv)
			if cfg.SeparateReLU {
				relu, err := NewReLU(b)
				if err != nil {
					return fail(err)
				}
				net.Layers = append(net.Layers, relu)
			}
			bn, err := NewBatchNorm2D(b, name+".bn", f)
			if err != nil {
				return fail(err)
			}
			net.Layers = append(net.Layers, bn)
			in, n = f, n+1
		}
	}
	pool, err := NewAdaptiveAvgPool2D(b, 2, 2)
	if err != nil {
		return fail(err)
	}
	fc, err := NewLinear(b, "fc", in*4, cfg.Classes, rng)
	if err != nil {
		return fail(err)
	}
	net.Layers = append(net.Layers, pool, fc)
	return net, nil
}
