// Package bench runs `faster bench …`: each benchmark is a typed config
// and one call — Load (LoadConfig: the input pipeline as fast as it can
// go, a row per worker count), Storage (StorageConfig: loaders under the
// kernel's block-IO throttle), Train (TrainConfig: the study's "Model
// Running" table) and TimeToAccuracy (ours against the PyTorch peer) —
// whose results the CLI prints as JSON or with WriteLoadTable,
// WriteStorageTable, WriteTrainTable and WriteTTATable. Under them is the
// harness: ours and a peer run as child processes that print a
// fit.Summary (RunSummary), in rounds whose order alternates (Rounds); a
// loader consumed as a training loop would (Consume: counts, a digest of
// the keys, a consumer rate); repeats summarised (Median, PairedRatio);
// the Faster Training study's markdown-style tables and PNG charts. The
// scripts beside it (peer_*.py, run_*.sh) run the peers — torchvision,
// OpenCV, djpeg, PyTorch — on the same data in the same run as our
// commands; gpu_table.sh runs the study's table on a GPU (TrainConfig's
// Device, `faster bench train --device cuda`) beside the PyTorch peer's
// --device cuda, one process per cell, and gpu_table.py prints it.
package bench
