// Package bench is the harness behind `faster bench …`: it runs ours and
// a peer as child processes that print a fit.Summary (RunSummary), in
// rounds whose order alternates (Rounds), consumes a loader as a training
// loop would (Consume: counts, a digest of the keys, a consumer rate),
// summarises repeats (Median, PairedRatio) and renders the results as the
// Faster Training study's markdown-style tables and as PNG charts. The
// scripts beside it (peer_*.py, run_*.sh) run the peers — torchvision,
// OpenCV, djpeg, PyTorch — on the same data in the same run as our
// commands.
package bench
