package main

import "github.com/faster-training/faster/bench"

// The tests' names of what `faster bench` prints as JSON, now bench's types.
type (
	loadResult  = bench.LoadResult
	storageCell = bench.StorageCell
	trainCell   = bench.TrainCell
	ttaSummary  = bench.TTASummary
	ttaRun      = bench.TTARun
)
