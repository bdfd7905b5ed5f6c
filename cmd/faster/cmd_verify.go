package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/progress"
	"github.com/faster-training/faster/shard"
)

type verifyOptions struct {
	paths   []string
	workers int
	json    bool
}

func init() {
	commands = append(commands, func(stdout, stderr io.Writer) *cobra.Command {
		var o verifyOptions
		c := &cobra.Command{
			Use:   "verify PATH...",
			Short: "Check shards (TFRecord, WebDataset tar, LMDB): framing, indexes, manifest counts and hashes",
			Long: `Verify reads every record of the given shards (files, LMDB directories, or
directories: with a manifest.json every shard it lists, else every *.tfrecord
and *.tar) and checks: for TFRecord both CRCs of each record; for tar shards
every header and member and that only padding follows the end; the .idx index
beside each shard; and the record count, size and sha256 the manifest records.
For a Caffe LMDB, every value must decode as a Datum holding an image. For a
directory, what the names promise: every shard of a split named -of-N there,
one format a split, no split left packed as tasks and not merged
(.faster-parts); and each record count kept in .faster-counts.json against
its shard. Each
shard stops at its first corrupt record. Each problem is printed with its file
and byte offset.

Exit status: 0 all good; 1 a problem was found (or a file could not be read); 2 usage error.`,
			Args: minArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				o.paths = args
				return runVerify(cmd.Context(), o, stdout, stderr)
			},
		}
		c.Flags().IntVar(&o.workers, "workers", 0, "shards checked in parallel (default: number of CPUs)")
		c.Flags().BoolVar(&o.json, "json", false, "print a JSON report")
		return c
	})
}

func runVerify(ctx context.Context, o verifyOptions, stdout, stderr io.Writer) error {
	bar := progress.New(stderr, "verify", 0, "bytes")
	defer bar.Done()
	o.workers = capWorkers(stderr, "--workers", o.workers, runtime.NumCPU())
	rep, err := shard.Verify(ctx, o.paths, shard.VerifyOptions{
		Workers:  o.workers,
		Progress: func(b int64) { bar.Add(0, b) },
	})
	bar.Done()
	if err != nil {
		return err
	}
	if o.json {
		if err := writeJSON(stdout, rep.JSON()); err != nil {
			return err
		}
	} else {
		rep.WriteText(stdout)
	}
	if !rep.OK() {
		return &failError{fmt.Sprintf("verify found %d problems", len(rep.Problems))}
	}
	return nil
}
