package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
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
	var files []string
	for _, p := range o.paths {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !st.IsDir() || source.IsLMDB(p) {
			files = append(files, p)
			continue
		}
		m, err := shard.DataFiles(p) // by their bytes: train-00000-of-01024 too
		if err != nil {
			return err
		}
		if len(m) == 0 {
			return fmt.Errorf("%s: no TFRecord or tar files, not an LMDB", p)
		}
		files = append(files, m...)
	}
	var sums []*shard.ShardSummary
	for _, f := range files {
		s, err := shard.InspectAny(ctx, f, o.first)
		if err != nil {
			return err
		}
		if !o.json {
			fmt.Fprint(stdout, s)
		}
		sums = append(sums, s)
	}
	if o.json {
		var records, bytes int64
		for _, s := range sums {
			records += s.Records
			bytes += s.Bytes
		}
		return writeJSON(stdout, struct {
			Records int64                 `json:"records"`
			Shards  int                   `json:"shards"`
			Bytes   int64                 `json:"bytes"`
			Files   []*shard.ShardSummary `json:"files"`
		}{records, len(sums), bytes, sums})
	}
	return nil
}
