package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/jsonfield"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/progress"
	_ "github.com/faster-training/faster/train/cuda"   // registers "cuda" (a GPU; ErrNoCgo without cgo)
	_ "github.com/faster-training/faster/train/onednn" // registers "onednn" when built with cgo
)

// trainOptions are train's flags: the run's configuration (fit.Config,
// which most flags set directly) and what only the command has (the
// launcher, the output, the flags parsed into the configuration).
type trainOptions struct {
	cfg fit.Config
	badDataFlags
	maxMemory   sizeFlag
	resSchedule string      // --resolution-schedule, parsed into cfg.Data
	lf          loaderFlags // the loader flags train takes (flagtable.go), into cfg.Data where given
	config      string      // --config FILE: the run as fit.Config JSON, the flags given over it
	json        bool

	// The launcher (train_parallel.go).
	nproc   int
	nodes   nodeOptions // --nnodes, --node-rank, --master-addr, --master-port
	timeout time.Duration
	// timeoutSet: --collective-timeout was given (it overrides
	// FASTER_COLLECTIVE_TIMEOUT).
	timeoutSet bool
	argv       []string // the flags as given, for the launcher's children
	flags      *pflag.FlagSet
	fromFile   bool // --config read: flags not given keep the file's values
}

func init() {
	commands = append(commands, func(stdout, stderr io.Writer) *cobra.Command {
		var o trainOptions
		command := &cobra.Command{
			Use:   "train --data DIR",
			Short: "Train a model (ThinNet, ResNet-18) on an image dataset with the Go engine on oneDNN",
			Long: `Train trains a model on the CPU with faster's own engine (package train): oneDNN
primitives through cgo, or the slow pure-Go reference backend without cgo.
--data is a Fashion-MNIST/MNIST IDX directory (train-* and t10k-* files, held
in memory), or a packed dataset (its train and test splits) or ImageFolder tree
read through the input pipeline's train recipe (random-resized-crop, flip,
normalise) and eval recipe (resize, centre crop), decoded ahead of the step.
Each epoch is followed by an evaluation on the test split. A progress line
shows loss, images/s and ETA on a terminal. With --checkpoint FILE the
state is saved after every epoch (and on interrupt) and a rerun resumes
from it, on the data it was saved on (its path and sample count; after
moving the data, --same-data).

Exit status: 0 trained; 1 failed (bad data, backend error); 2 usage error;
130 interrupted (after saving the checkpoint, if any).`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := o.readConfig(cmd.Flags()); err != nil {
					return err
				}
				if err := applyRecipe(cmd.Flags(), &o); err != nil {
					return err
				}
				if err := applyPET(cmd.Flags(), &o, os.LookupEnv); err != nil {
					return err
				}
				cmd.Flags().Visit(func(f *pflag.Flag) {
					if launcherFlags[f.Name] {
						return
					}
					v := f.Value.String()
					if sv, ok := f.Value.(pflag.SliceValue); ok {
						v = strings.Join(sv.GetSlice(), ",")
					}
					o.argv = append(o.argv, "--"+f.Name+"="+v)
				})
				o.timeoutSet = cmd.Flags().Changed("collective-timeout")
				o.flags = cmd.Flags()
				return runTrain(cmd.Context(), o, stdout, stderr)
			},
		}
		f, c, d := command.Flags(), &o.cfg, fit.DefaultConfig()
		f.StringVar(&c.Data.Path, "data", "", "dataset: an IDX directory, a packed dataset (faster pack) or an ImageFolder tree (required)")
		f.StringVar(&c.Data.TestPath, "test-data", "", "test images for an ImageFolder --data (a packed dataset uses its test split)")
		f.IntVar(&c.Data.Resolution, "resolution", 0, "image side for packed or ImageFolder data (default: the packed images' width, else 224)")
		f.StringVar((*string)(&c.Data.Layout), "layout", "", "the loader's batches: f32-chw (normalised by the loader) or u8-hwc (bytes, normalised by the model's backend in the loader's arithmetic); left out: u8-hwc to a GPU model decoding on the cpu, else f32-chw")
		f.StringVar(&c.Model.Name, "model", d.Model.Name, "model: thinnet or resnet18")
		f.IntVar(&c.Data.Classes, "classes", 0, "classes of the model's head, for data that does not record them (default: from the data: its class folders, the manifest's classes, 10 for MNIST)")
		f.IntVar(&c.Data.LabelOffset, "label-offset", 0, "packed data: add N to every stored label (-1 for TensorFlow's ImageNet shards, whose labels count from 1)")
		f.IntSliceVar(&c.Model.Filters, "filters", nil, "ThinNet's stage widths, three 3×3 convolutions each (default 32,64,128: the study's); ResNet-18's four stage widths (default 64,128,256,512)")
		f.StringVar(&c.Model.Backend, "backend", "", "compute backend: onednn, reference or cuda (default: cuda on a cuda --device, else onednn when built with cgo)")
		f.StringVar(&c.Model.Device, "device", "", "where to train: cpu (default), cuda (the first GPU) or cuda:N; the backend (--backend) must run there")
		f.StringVar(&c.Data.Device, "decode-device", "", "where the training images are decoded: cpu, or the GPU of --device (cuda, cuda:N), whose batches then stay on it (default: the GPU of a GPU --device where the train recipe allows, else the cpu)")
		f.IntVar(&c.LogEvery, "log-every", 0, "steps between reads of the training loss (default: every step on the cpu, every 20 on a GPU: each read waits for the device)")
		f.IntVar(&c.Epochs, "epochs", d.Epochs, "epochs to train (in total, counting resumed ones)")
		f.IntVar(&c.Batch, "batch", d.Batch, "batch size")
		f.Float64Var(&c.Optim.LR, "lr", d.Optim.LR, "base learning rate")
		f.Float64Var(&c.Optim.Momentum, "momentum", d.Optim.Momentum, "SGD momentum")
		f.Float64Var(&c.Optim.WeightDecay, "weight-decay", 0, "SGD weight decay")
		f.Float64Var(&c.Optim.Warmup, "warmup", 0, "epochs of linear learning-rate warm-up")
		f.Float64Var(&c.Optim.StepEpochs, "step-epochs", 0, "multiply the rate by --gamma every this many epochs (0: never)")
		f.Float64Var(&c.Optim.Gamma, "gamma", d.Optim.Gamma, "step-decay factor")
		f.IntVar(&c.Model.Threads, "threads", 0, "compute threads (default: number of CPUs)")
		f.Var(&o.maxMemory, "max-memory", "the most memory one training step may hold, models' activations and parameters (k, M, G suffixes; default: half this machine's or container's memory, shared by the ranks on it)")
		f.IntVar(&c.Model.NormThreads, "norm-threads", 0, "threads for BatchNorm (default: --threads; 1 can be faster on busy cores)")
		f.BoolVar(&c.Model.Winograd, "winograd", d.Model.Winograd, "onednn: Winograd F(4x4,3x3) for fp32 3x3 stride-1 convolutions of 16k channels (about twice as fast as direct; its curves stay within what rounding alone moves them, see train.BackendOptions.Winograd); --winograd=false: direct")
		f.Uint64Var(&c.Seed, "seed", d.Seed, "seed for initial weights and shuffling")
		f.IntVar(&c.Data.Limit, "limit", 0, "train on the first N training images only (0: all)")
		f.IntVar(&c.Data.TestLimit, "test-limit", 0, "evaluate on the first N test images only (0: all)")
		f.StringVar(&c.Checkpoint.Path, "checkpoint", "", "save state to FILE after each epoch; resume from it when it exists")
		f.IntVar(&c.Checkpoint.Every, "checkpoint-every", 0, "with --checkpoint: also save every N steps within an epoch (a killed run resumes there)")
		f.BoolVar(&c.Checkpoint.SameData, "same-data", false, "with --checkpoint: the data moved: resume a checkpoint saved on data at another path, of as many training samples")
		o.registerBad(f)
		f.BoolVar(&o.json, "json", false, "print a JSON summary")
		f.StringVar(&o.config, "config", "", "the run as JSON (fit.Config, as --json's config and docs/cli.md show it): fields left out take the defaults, flags given override the file")
		addRecipeFlags(f, &o)
		o.lf.registerInto(f, trainRunFlags)
		addFixResFlags(f, &o)
		addParallelFlags(f, &o)
		return command
	})
}

// runTrain is train: the flags made a fit.Config, checked with every
// problem at once; the launcher when asked for; this rank's group joined
// and its data opened; one fit.Run; its summary printed.
func runTrain(ctx context.Context, o trainOptions, stdout, stderr io.Writer) (retErr error) {
	cfg, problems := o.configOf()
	if len(problems) > 0 {
		return o.usage(problems)
	}
	if cfg.Parallel.Strategy == "ddp" && o.nproc > 0 && os.Getenv(launchEnv) == "" {
		return runLaunch(ctx, o, stdout, stderr)
	}
	// One rank of distributed training joins its group first: the data
	// each rank reads depends on its rank.
	var comm collective.Comm
	rank, world := 0, 1
	if cfg.Parallel.Strategy == "ddp" {
		cc, err := collective.FromEnv()
		if err != nil {
			return usagef("--strategy ddp: %v (or use --nproc N to start N processes here)", err)
		}
		// --collective-timeout when given, else FASTER_COLLECTIVE_TIMEOUT
		// (FromEnv's, as every rank of the collective package reads it),
		// else the flag's default.
		if o.timeoutSet || cc.Timeout == 0 {
			cc.Timeout = o.timeout
		}
		if comm, err = cfg.Join(cc); err != nil {
			return err
		}
		defer comm.Close()
		rank, world = comm.Rank(), comm.Size()
		if rank > 0 {
			stdout = io.Discard // rank 0 reports
		}
	}
	cfg.Model.Threads = capWorkers(stderr, "--threads", cfg.Model.Threads, runtime.NumCPU())
	// The quarantine list is written however the run ends (a list that
	// cannot be written fails the run): what loading IDX data skipped, or
	// what the pipelines skipped.
	bad := badDataFlags{onError: cfg.Data.OnError, maxBad: string(cfg.Data.MaxBad), quarantine: cfg.Data.Quarantine}
	writeQ, abortQ, err := bad.forRank(rank, world).openQuarantine()
	if err != nil {
		return err
	}
	defer abortQ()
	data, err := fit.OpenData(ctx, &cfg, rank, world)
	if data != nil {
		defer func() {
			list := data.Bad()
			if len(list) > 0 {
				fmt.Fprintf(stderr, "faster: train: rank %d skipped %d bad samples\n", rank, len(list))
			}
			retErr = errors.Join(retErr, writeQ(list))
			data.Close()
		}()
	}
	if err != nil {
		return o.usageOf(err)
	}
	lineOut := stderr
	if rank > 0 {
		lineOut = io.Discard
	}
	hooks := fit.Hooks{
		Train: func(epoch, epochs int, images int64) (func(float64, int), func()) {
			l := progress.NewLossLine(lineOut, fmt.Sprintf("epoch %d/%d", epoch, epochs), images)
			return l.Step, l.Done
		},
		Note: func(msg string) { fmt.Fprintln(stderr, msg) },
	}
	if !o.json {
		hooks.Epoch = func(e fit.EpochSummary) { fit.WriteEpoch(stdout, e, cfg.Epochs) }
	}
	sum, err := fit.Run(ctx, cfg, data, comm, hooks)
	if err != nil {
		return o.usageOf(err)
	}
	if o.json {
		return writeJSON(stdout, sum)
	}
	sum.WriteText(stdout, cfg)
	return nil
}

// usageOf is err, made a usage error (exit 2) when it is a problem with
// the configuration, each field named by its flag.
func (o *trainOptions) usageOf(err error) error {
	var ce *fit.ConfigError
	if errors.As(err, &ce) {
		return o.usage(ce.Problems)
	}
	return err
}

// usage is a usage error of the run's problems, each field named by its
// flag, or, read from --config and not given as a flag, by its field.
func (o *trainOptions) usage(ps []augment.Problem) error {
	return flagProblems(ps, func(field string) string {
		f := trainFlagOf(field)
		if o.fromFile && (o.flags == nil || !o.flags.Changed(f)) {
			return ""
		}
		return f
	}, jsonfield.Paths(reflect.TypeOf(fit.Config{}), ""))
}

// readConfig makes --config FILE the run's configuration, the flags given
// set over it (each flag given is set again on the file's values).
func (o *trainOptions) readConfig(f *pflag.FlagSet) error {
	if o.config == "" {
		return nil
	}
	file, err := os.Open(o.config)
	if err != nil {
		return usagef("--config: %v", err)
	}
	defer file.Close()
	cfg, err := fit.ReadConfig(file, fit.DefaultConfig())
	if err != nil {
		return usagef("--config %s: %v", o.config, err)
	}
	type given struct {
		fl    *pflag.Flag
		value string
		slice []string
	}
	var set []given
	f.Visit(func(fl *pflag.Flag) {
		g := given{fl: fl, value: fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			g.slice = sv.GetSlice()
		}
		set = append(set, g)
	})
	o.cfg = cfg
	for _, g := range set {
		if sv, ok := g.fl.Value.(pflag.SliceValue); ok {
			err = sv.Replace(g.slice)
		} else {
			err = g.fl.Value.Set(g.value)
		}
		if err != nil {
			return usagef("--%s: %v", g.fl.Name, err)
		}
	}
	o.fromFile = true
	return nil
}

// configOf makes the run's fit.Config from the flags (over --config's
// file), with every problem found in them, each named by its field.
func (o *trainOptions) configOf() (fit.Config, []augment.Problem) {
	cfg := o.cfg
	var problems []augment.Problem
	changed := func(flag string) bool { return o.flags != nil && o.flags.Changed(flag) }
	if changed("resolution-schedule") {
		if sched, err := parseResSchedule(o.resSchedule); err != nil {
			problems = append(problems, augment.Problem{Field: "data.resolution_schedule", Msg: strings.TrimPrefix(err.Error(), "--resolution-schedule ")})
		} else if len(sched) == 1 && sched[0] == 0 {
			cfg.Data.Progressive, cfg.Data.Schedule = true, nil
		} else {
			cfg.Data.Schedule, cfg.Data.Progressive = sched, false
		}
	}
	if !o.fromFile || changed("max-memory") {
		cfg.Model.MaxMemory = int64(o.maxMemory)
	}
	// The loader flags given, into the data's spec (the others keep the
	// defaults, or the file's values).
	ls := o.lf.spec()
	ls.OnError, ls.MaxBad, ls.Quarantine = o.onError, loader.Budget(o.maxBad), o.quarantine
	var fields []string
	for _, r := range loaderFlagTable {
		if changed(r.flag) && !trainRunFlags[r.flag] && jsonfield.ByName(reflect.ValueOf(&o.cfg.Data).Elem(), strings.Split(r.field, ".")[0]).IsValid() {
			switch r.flag {
			case "batch", "seed", "resolution", "layout", "classes", "label-offset": // train's own flags, bound to cfg
				continue
			}
			fields = append(fields, r.field)
		}
	}
	jsonfield.Copy(&cfg.Data.Spec, &ls, fields)
	if changed("augment-recipe") {
		name := cfg.Data.Recipe.Name
		cfg.Data.Recipe.UseNamed(name, func(field string) bool { return changed(loaderFlagOf("recipe." + field)) }) //nolint:errcheck // Validate names a bad one
		cfg.Data.Recipe.Name = name
	}
	problems = append(append(cfg.Problems(), problems...), o.lf.zeroProblems("data.")...)
	if o.nproc < 0 || (o.nproc > 0 && cfg.Parallel.Strategy != "ddp") {
		problems = append(problems, augment.Problem{Msg: "--nproc N (N ≥ 1) goes with --strategy ddp"})
	}
	for _, p := range checkNodes(o) {
		problems = append(problems, augment.Problem{Msg: p})
	}
	return cfg, problems
}
