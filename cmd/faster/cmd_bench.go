package main

import (
	"io"

	"github.com/spf13/cobra"
)

// benchCommands are the subcommands of `faster bench`, filled by the init
// function of each cmd_bench_*.go file.
var benchCommands []func(stdout, stderr io.Writer) *cobra.Command

func init() {
	commands = append(commands, func(stdout, stderr io.Writer) *cobra.Command {
		c := &cobra.Command{
			Use:   "bench",
			Short: "Benchmarks that name the bottleneck: loading, training",
		}
		for _, add := range benchCommands {
			c.AddCommand(add(stdout, stderr))
		}
		return c
	})
}
