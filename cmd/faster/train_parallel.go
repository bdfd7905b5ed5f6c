package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	_ "github.com/faster-training/faster/collective/gloo" // registers "gloo" when built with cgo
	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/launch"
)

// launchEnv marks a process started by `faster train --nproc N`: it is one
// rank and does not launch again.
const launchEnv = "FASTER_LAUNCH_CHILD"

func addParallelFlags(f *pflag.FlagSet, o *trainOptions) {
	c, d := &o.cfg, fit.DefaultConfig()
	f.StringVar(&c.Parallel.Strategy, "strategy", d.Parallel.Strategy, "single (one device), dp (one process splits each batch over --devices) or ddp (one process per device, gradients all-reduced through Gloo)")
	f.IntVar(&c.Parallel.Devices, "devices", 0, "devices for --strategy dp, each a oneDNN engine with --threads/N threads (default 2)")
	f.IntVar(&o.nproc, "nproc", 0, "with --strategy ddp: start N processes on this machine (else RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT say which rank this is, as with torchrun)")
	f.IntVar(&o.nodes.nnodes, "nnodes", 1, "with --nproc: machines taking part, each running `faster train --nproc N --node-rank R` with the same flags")
	f.IntVar(&o.nodes.nodeRank, "node-rank", 0, "with --nnodes: this machine's index, 0 … nnodes-1 (node 0 serves the rendezvous store)")
	f.StringVar(&o.nodes.masterAddr, "master-addr", "", "with --nnodes > 1: an address of node 0 that every node reaches")
	f.IntVar(&o.nodes.masterPort, "master-port", 0, "with --nproc: the rendezvous store's port on node 0 (default 29500 with several nodes, a free port on one)")
	f.BoolVar(&c.Parallel.SyncBN, "sync-bn", false, "with dp or ddp: BatchNorm uses the statistics of the whole batch across devices (SyncBN; off by default, as in torch: it adds two blocking all-reduces per BatchNorm layer per step)")
	f.BoolVar(&c.Parallel.AMP, "amp", false, "mixed precision: convolutions and matrix products in --amp-dtype, fp32 master weights")
	f.StringVar(&c.Parallel.AMPDtype, "amp-dtype", d.Parallel.AMPDtype, "bf16, or fp16 (with dynamic loss scaling like torch's GradScaler)")
	f.BoolVar(&c.Parallel.Autotune, "autotune", false, "time each layer's candidate implementations once per shape and keep the fastest (like cudnn.benchmark)")
	f.StringVar(&c.Parallel.TuneCache, "tune-cache", d.Parallel.TuneCache, "with --autotune, keep the choices in this file (by machine) so that later runs do not time them again; \"\" to tune every run ($FASTER_TUNE_CACHE)")
	f.BoolVar(&c.Parallel.NoOverlap, "no-overlap", false, "prepare each batch only after the previous step (default: while it runs)")
	f.BoolVar(&c.Parallel.ZeroGrad, "zero-grad", false, "zero the gradients and accumulate into them each step (default: overwrite, like zero_grad(set_to_none=True))")
	f.BoolVar(&c.Parallel.CUDAGraph, "cuda-graph", false, "strategy single on a backend that captures steps (cuda): record each step as a CUDA graph once and replay it")
	f.BoolVar(&c.Parallel.Profile, "profile", false, "on a backend that times its device's calls (cuda): where the last epoch's device time goes, by op, busy and idle (its steps run eagerly)")
	f.BoolVar(&c.Parallel.ChannelsLast, "channels-last", false, "with --amp on a GPU backend (cuda): 16-bit convolutions channels-last (NHWC), as torch's channels_last")
	f.IntVar(&c.Parallel.BucketKB, "bucket-kb", d.Parallel.BucketKB, "ddp: gradient all-reduce bucket size in KiB")
	f.IntVar(&c.Parallel.TimeAllReduce, "time-allreduce", 0, "ddp: after training, time N rounds of a step's gradient all-reduces alone (its buckets, no compute); --json reports them under ddp")
	f.DurationVar(&o.timeout, "collective-timeout", 60*time.Second, "ddp: how long to wait for the other ranks (rendezvous, each collective); default FASTER_COLLECTIVE_TIMEOUT, else 60s")
}

// nodeOptions are the flags of `faster train --nproc` across machines.
type nodeOptions struct {
	nnodes, nodeRank int
	masterAddr       string
	masterPort       int
}

// launcherFlags are the flags the launcher takes for itself: its children
// do not see them.
var launcherFlags = map[string]bool{"nproc": true, "nnodes": true, "node-rank": true, "master-addr": true, "master-port": true}

// nodeFlags are the launcher's flags by the setting each sets (launch's
// Set* names), to word its problems.
var nodeFlags = map[string]string{launch.SetNProc: "nproc", launch.SetNNodes: "nnodes", launch.SetNodeRank: "node-rank",
	launch.SetMasterAddr: "master-addr", launch.SetMasterPort: "master-port"}

// nodeFlag names a launcher setting by its flag.
func nodeFlag(setting string) string { return "--" + nodeFlags[setting] }

// node is the launcher's node the flags describe.
func (o *trainOptions) node() launch.Node {
	return launch.Node{NProc: o.nproc, NNodes: o.nodes.nnodes, NodeRank: o.nodes.nodeRank, MasterAddr: o.nodes.masterAddr, MasterPort: o.nodes.masterPort}
}

// setNode sets the launcher flags' values from n.
func (o *trainOptions) setNode(n launch.Node) {
	o.nproc, o.nodes = n.NProc, nodeOptions{nnodes: n.NNodes, nodeRank: n.NodeRank, masterAddr: n.MasterAddr, masterPort: n.MasterPort}
}

// checkNodes validates the multi-node flags (launch.Node.Check, which
// gives several nodes the default port).
func checkNodes(o *trainOptions) []string {
	n := o.node()
	problems := n.Check(nodeFlag)
	o.setNode(n)
	return problems
}

// runLaunch starts o.nproc ranks of this command on this machine (node
// o.nodes.nodeRank of o.nodes.nnodes), as torchrun does; see package
// launch. Rank 0's output is this command's; the others' stderr is
// prefixed with their rank.
func runLaunch(ctx context.Context, o trainOptions, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	err = launch.Run(ctx, launch.Options{
		Command: exe, Args: append([]string{"train"}, o.argv...),
		Env:   append(os.Environ(), launchEnv+"=1"),
		NProc: o.nproc, NNodes: o.nodes.nnodes, NodeRank: o.nodes.nodeRank,
		MasterAddr: o.nodes.masterAddr, MasterPort: o.nodes.masterPort,
		Stdout: stdout, Stderr: stderr,
	})
	var le *launch.Error
	switch {
	case errors.As(err, &le):
		what := fmt.Sprintf("train --nproc %d", o.nproc)
		if o.nodes.nnodes > 1 {
			what += fmt.Sprintf(" (node %d of %d)", o.nodes.nodeRank, o.nodes.nnodes)
		}
		return &failError{what + ": " + le.Error()}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return context.Canceled
	}
	return err
}

// applyPET gives the launcher flags not on the command line torchrun's
// defaults from Kubeflow's PyTorchJob variables (launch.PETDefaults), each
// problem named as the variable read, "(the default of --flag)". Only with
// --strategy ddp, and not in a process the launcher started.
func applyPET(flags *pflag.FlagSet, o *trainOptions, lookup func(string) (string, bool)) error {
	if o.cfg.Parallel.Strategy != "ddp" {
		return nil
	}
	if v, _ := lookup(launchEnv); v != "" {
		return nil
	}
	n := o.node()
	err := launch.PETNode(&n, nodeFlag, func(s string) bool { return flags.Changed(nodeFlags[s]) }, lookup)
	if err != nil {
		return usagef("%v", err)
	}
	o.setNode(n)
	return nil
}
