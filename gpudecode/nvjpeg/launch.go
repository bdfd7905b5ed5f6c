package nvjpeg

import (
	"github.com/faster-training/faster/gpudecode/nvjpeg/kernels"
	ck "github.com/faster-training/faster/train/cuda/kernels"
)

// launch is a kernels.Launch as train/cuda launches it: a 1-D grid of
// GX*GY blocks.
func launch(l kernels.Launch) ck.Launch { return ck.Launch{Grid: l.GX * l.GY, Block: kernels.Block} }
