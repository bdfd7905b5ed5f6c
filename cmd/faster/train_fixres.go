package main

import (
	"github.com/spf13/pflag"
)

// FixRes's test-resolution adjustment of the BatchNorm statistics
// (`faster train --fixres-bn N`, fit.EvalConfig.FixResBN): after training,
// N batches of the training images at the test resolution, under the test
// preprocessing, go forward in training mode to recompute every
// BatchNorm's running statistics (train.RecalibrateBN,
// torch.optim.swa_utils.update_bn's semantics); then the model is
// evaluated again.

func addFixResFlags(f *pflag.FlagSet, o *trainOptions) {
	f.IntVar(&o.cfg.Eval.FixResBN, "fixres-bn", 0, "after training, recompute the BatchNorm statistics from N batches of the training images at the test resolution with the test preprocessing (FixRes; swa_utils.update_bn's cumulative average), then evaluate again; 0: off")
}
