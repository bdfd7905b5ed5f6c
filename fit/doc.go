// Package fit is one training run of the Go engine, as `faster train`
// makes it: a typed Config (Validate reports every problem at once),
// OpenData (the one place that tells in-memory IDX images from data read
// through the loader's recipes; the engine sees train.Stream either way),
// Run (plan, engine, epochs, evaluation, checkpoints, FixRes) and its
// Summary, the JSON schema of `faster train --json` that `faster bench
// train` and the PyTorch peer read and write.
//
//	cfg := fit.DefaultConfig()
//	cfg.Data.Path, cfg.Epochs = "/usr/share/datasets/fashion-mnist", 2
//	data, err := fit.OpenData(ctx, &cfg, 0, 1) // rank 0 of 1
//	…
//	defer data.Close()
//	sum, err := fit.Run(ctx, cfg, data, nil, fit.Hooks{})
//
// It sits beside serve: both consume the loader, one feeding the Go
// trainer, the other PyTorch.
package fit
