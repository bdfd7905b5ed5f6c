package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/shard"
)

type inspectOptions struct {
	paths []string
	first int
	json  bool
}

func init() {
	commands = append(commands, func(stdout, stderr io.Writer) *cobra.Command {
		var o inspectOptions
		c := &cobra.Command{
			Use:   "inspect PATH...",
			Short: "Summarise shards (TFRecord, WebDataset tar, LMDB): records, features, first records",
			Long: `Inspect scans TFRecord files (ours or any other tool's), WebDataset tar shards
and Caffe LMDBs (a directory means every *.tfrecord and *.tar in it, or the LMDB
it is) and prints, per file, the record count, each feature key (tar: member
extension; LMDB: encoded or raw Datums) and how many records hold it, and the
label and filename of the first records.

Exit status: 0 done (corruption is reported in the output); 1 a file could not be read; 2 usage error.`,
			Args: minArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				o.paths = args
				return runInspect(cmd.Context(), o, stdout)
			},
		}
		c.Flags().IntVar(&o.first, "first", 5, "how many leading records to show")
		c.Flags().BoolVar(&o.json, "json", false, "print JSON")
		return c
	})
}

func runInspect(ctx context.Context, o inspectOptions, stdout io.Writer) error {
	rep, err := shard.InspectPaths(ctx, o.paths, o.first, func(s *shard.ShardSummary) {
		if !o.json {
			fmt.Fprint(stdout, s)
		}
	})
	if err != nil || !o.json {
		return err
	}
	return writeJSON(stdout, rep)
}
