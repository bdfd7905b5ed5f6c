package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/faster-training/faster/fit"
)

// The training benchmark (`faster bench train`): the study's "Model
// Running" table, each cell a fresh `faster train --config FILE --json` process (its run a
// fit.Config written by CellConfig), or, with
// a target accuracy, time to accuracy against the PyTorch peer
// (tta.go).

// Strategies and Variants are the table's rows and columns.
var (
	Strategies = []string{"single", "dp", "ddp"}
	Variants   = []string{"plain", "autotune", "amp", "autotune+amp"}
)

// TrainConfig is one `faster bench train`: what every cell trains, and
// which cells.
type TrainConfig struct {
	Data             string
	Epochs           int
	Limit, TestLimit int // the first N images (0: all)
	Batch            int // the global batch
	LR               float64
	// LRSet: LR was given (time to accuracy: it overrides Recipe's rate).
	LRSet bool
	// Threads are the compute threads in all, shared by the devices of
	// dp and ddp (resolved: not 0).
	Threads int
	// Devices are dp's devices and ddp's processes.
	Devices    int
	Strategies []string // rows: single, dp, ddp
	Variants   []string // columns: plain, autotune, amp, autotune+amp
	// Ablation adds single-device plain runs without each default
	// (overlapped input, set_to_none gradients).
	Ablation bool
	SyncBN   bool   // dp and ddp with SyncBN
	Backend  string // "": faster train's default
	Device   string // faster train's --device ("": cpu)
	AMPDtype string // the AMP columns' amp_dtype ("": fit's default, bf16)
	// CUDAGraph runs the single-device cells' steps as captured graphs
	// (fit's parallel.cuda_graph; dp and ddp run eagerly).
	CUDAGraph bool
	Winograd  bool
	Filters   []int // ThinNet's stage widths (nil: the study's)
	// Repeats are the timed runs of every cell, in rounds of alternating
	// order; Warmup runs every cell briefly, untimed, first.
	Repeats int
	Warmup  bool

	// Time to accuracy (TargetAccuracy > 0, TimeToAccuracy).
	TargetAccuracy float64
	EvalEvery      int
	Recipe         string
	RecipeAblation bool
	Rounds         int
	Seed           uint64
	Peer, Python   string // the PyTorch peer script and the Python that runs it
	NoPeer         bool
	SameStart      bool
	OursDDP        int // ours as N DDP processes (0: one process)
	Curve          string

	// Faster is the faster binary each cell runs; Env its environment
	// (nil: this process's).
	Faster string
	Env    []string
	// Log gets each cell's progress (nil: discarded).
	Log io.Writer
}

// TrainCell is one cell of the study's "Model Running" table.
type TrainCell struct {
	Strategy     string  `json:"strategy"` // single, dp, ddp
	Variant      string  `json:"variant"`  // plain, autotune, amp, autotune+amp, or an ablation
	Seconds      float64 `json:"seconds"`  // training time, evaluation excluded
	ImagesPerSec float64 `json:"images_per_sec"`
	MsPerStep    float64 `json:"ms_per_step,omitempty"` // of the global batch
	TestAccuracy float64 `json:"test_accuracy"`
	Precision    string  `json:"precision"`
	NativeAMP    bool    `json:"native_precision"`
	Tuned        int     `json:"autotuned_ops,omitempty"`
	TuneSeconds  float64 `json:"tune_seconds,omitempty"` // of Seconds, spent autotuning (once per shape)
	// GraphRefused is why the device refused to capture the cell's step
	// (--cuda-graph): its steps ran eagerly. Replayed counts the steps
	// that ran as a replayed graph.
	GraphRefused string `json:"cuda_graph_refused,omitempty"`
	Replayed     int    `json:"cuda_graph_replayed,omitempty"`

	// With several repeats, Seconds (and the figures beside it) is the
	// median run's; Runs are every run's seconds in round order, Low and
	// High their extremes. Speedup is the median over rounds of the
	// baseline's seconds over this cell's in the same round, with
	// SpeedupLow and SpeedupHigh its extremes (0 for the baseline).
	Runs        []float64 `json:"seconds_runs,omitempty"`
	Low         float64   `json:"seconds_low,omitempty"`
	High        float64   `json:"seconds_high,omitempty"`
	Speedup     float64   `json:"speedup,omitempty"`
	SpeedupLow  float64   `json:"speedup_low,omitempty"`
	SpeedupHigh float64   `json:"speedup_high,omitempty"`
}

// TrainSummary is the table (`faster bench train --json`).
type TrainSummary struct {
	Model    string      `json:"model"`
	Data     string      `json:"data"`
	Backend  string      `json:"backend"`
	Device   string      `json:"device"` // where the cells trained (fit.Summary's)
	Batch    int         `json:"batch"`
	Epochs   int         `json:"epochs"`
	Images   int         `json:"images_per_epoch"`
	Threads  int         `json:"threads"` // in all, for every cell
	Cells    []TrainCell `json:"cells"`
	Ablation []TrainCell `json:"ablation,omitempty"`
	Repeats  int         `json:"repeats"`
	// WarmupTuneSeconds is the autotuning the warm-up runs paid (what a
	// machine's first runs pay before the tune cache holds the choices).
	WarmupTuneSeconds float64 `json:"warmup_tune_seconds,omitempty"`
}

// trainSpec is one cell to run: a strategy and variant (or an ablation's
// name: CellConfig).
type trainSpec struct {
	strategy, variant string
	ablation          bool
}

// specs are c's cells in table order, the ablations last.
func (c TrainConfig) specs() []trainSpec {
	var specs []trainSpec
	for _, s := range c.Strategies {
		for _, v := range c.Variants {
			specs = append(specs, trainSpec{strategy: s, variant: v})
		}
	}
	if c.Ablation {
		specs = append(specs, trainSpec{"single", "no-overlap", true}, trainSpec{"single", "zero-grad", true})
	}
	return specs
}

// Train runs every cell of the table c.Repeats times, in rounds of
// alternating order (after an untimed warm-up run of each with c.Warmup),
// and returns the medians.
func Train(ctx context.Context, c TrainConfig) (TrainSummary, error) {
	if c.Log == nil {
		c.Log = io.Discard
	}
	sum := TrainSummary{Model: "thinnet", Data: c.Data, Batch: c.Batch, Epochs: c.Epochs, Threads: c.Threads}
	dir, err := os.MkdirTemp("", "faster-bench-train-")
	if err != nil {
		return sum, err
	}
	defer os.RemoveAll(dir)
	run := func(s trainSpec, warmup bool) (TrainCell, error) {
		cfg := c.CellConfig(s.strategy, s.variant)
		if warmup {
			// A few steps of the cell, untimed.
			cfg.Data.Limit, cfg.Data.TestLimit = 4*c.Batch, 4*c.Batch
			if c.Limit > 0 {
				cfg.Data.Limit = min(cfg.Data.Limit, c.Limit)
			}
			if c.TestLimit > 0 {
				cfg.Data.TestLimit = min(cfg.Data.TestLimit, c.TestLimit)
			}
		}
		args, err := c.cellArgs(dir, s.strategy+"-"+s.variant, cfg)
		if err != nil {
			return TrainCell{}, err
		}
		fmt.Fprintf(c.Log, "bench train: %s %s ...\n", s.strategy, s.variant)
		ts, err := c.runChild(ctx, args)
		if err != nil {
			return TrainCell{}, fmt.Errorf("%s %s: %w", s.strategy, s.variant, err)
		}
		if sum.Backend == "" {
			sum.Backend, sum.Device, sum.Images = ts.Backend, ts.Device, ts.TrainImages
		}
		cell := TrainCell{Strategy: s.strategy, Variant: s.variant, Seconds: ts.Seconds, ImagesPerSec: ts.ImagesPerSec, MsPerStep: ts.MsPerStep,
			TestAccuracy: ts.TestAccuracy, Precision: ts.Precision, NativeAMP: ts.NativeAMP, Tuned: len(ts.Autotune),
			TuneSeconds: ts.TuneSeconds}
		if g := ts.GraphSteps; g != nil {
			cell.Replayed = g.Replayed
			if g.GaveUp {
				cell.GraphRefused = g.Refused
			}
		}
		fmt.Fprintf(c.Log, "bench train: %s %s: %.1f s, %.1f images/s, test accuracy %.2f%%\n", s.strategy, s.variant, cell.Seconds, cell.ImagesPerSec, 100*cell.TestAccuracy)
		return cell, nil
	}
	specs := c.specs()
	if c.Warmup {
		// A few steps of each cell, untimed: a cold first cell would
		// otherwise make the baseline look slow (page cache, CPU clocks),
		// and autotuning's first run on the machine fills the tune cache.
		for _, s := range specs {
			w, err := run(s, true)
			if err != nil {
				return sum, fmt.Errorf("warm-up: %w", err)
			}
			sum.WarmupTuneSeconds += w.TuneSeconds
		}
		sum.Backend, sum.Images = "", 0 // the timed runs' figures, not the warm-up's
	}
	sum.Repeats = max(c.Repeats, 1)
	runs := make([][]TrainCell, len(specs))
	// Alternate the order between rounds: drift over the rounds hits every
	// cell alike.
	err = Rounds(sum.Repeats, len(specs), func(_, i int) error {
		cell, err := run(specs[i], false)
		if err != nil {
			return err
		}
		runs[i] = append(runs[i], cell)
		return nil
	})
	if err != nil {
		return sum, err
	}
	var base []TrainCell
	for i, s := range specs {
		if s.strategy == "single" && s.variant == "plain" {
			base = runs[i]
		}
	}
	for i, s := range specs {
		cell := MedianCell(runs[i], base)
		if s.ablation {
			sum.Ablation = append(sum.Ablation, cell)
		} else {
			sum.Cells = append(sum.Cells, cell)
		}
	}
	return sum, nil
}

// CellConfig is one cell's run, as `faster train --config` reads it:
// strategy and variant (or an ablation: no-overlap, zero-grad) over the
// shared data and hyper-parameters, c.Threads in all (a ddp process gets
// its share). The launcher's --nproc is a flag of the command, not of the
// run (cellArgs).
func (c TrainConfig) CellConfig(strategy, variant string) fit.Config {
	cfg := fit.DefaultConfig()
	cfg.Data.Path, cfg.Data.Limit, cfg.Data.TestLimit = c.Data, c.Limit, c.TestLimit
	cfg.Epochs, cfg.Batch, cfg.Optim.LR = c.Epochs, c.Batch, c.LR
	cfg.Model.Threads, cfg.Model.Backend, cfg.Model.Winograd, cfg.Model.Filters = c.Threads, c.Backend, c.Winograd, c.Filters
	cfg.Model.Device = c.Device
	if c.AMPDtype != "" {
		cfg.Parallel.AMPDtype = c.AMPDtype
	}
	p := &cfg.Parallel
	p.Strategy = strategy
	p.SyncBN = c.SyncBN && strategy != "single"
	p.CUDAGraph = c.CUDAGraph && strategy == "single"
	switch strategy {
	case "dp":
		p.Devices = c.Devices
	case "ddp":
		cfg.Model.Threads = max(1, c.Threads/c.Devices)
	}
	p.Autotune = strings.Contains(variant, "autotune")
	p.AMP = strings.Contains(variant, "amp")
	p.NoOverlap, p.ZeroGrad = variant == "no-overlap", variant == "zero-grad"
	return cfg
}

// cellArgs writes cfg into dir as name.json and returns the `faster
// train` arguments that run it (--nproc for ddp).
func (c TrainConfig) cellArgs(dir, name string, cfg fit.Config) ([]string, error) {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	args := []string{"train", "--config", path, "--json"}
	if cfg.Parallel.Strategy == "ddp" {
		args = append(args, "--nproc", strconv.Itoa(c.Devices))
	}
	return args, nil
}

// runChild runs `faster train ... --json` (args after the binary) as a
// child process and returns its summary.
func (c TrainConfig) runChild(ctx context.Context, args []string) (fit.Summary, error) {
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	return RunSummary(ctx, c.Faster, args, env)
}

// PlotTrain writes a PNG bar chart of the cells' images/s to path.
func PlotTrain(path string, sum TrainSummary) error {
	var bars []Bar
	for _, c := range append(slices.Clip(sum.Cells), sum.Ablation...) {
		bars = append(bars, Bar{Label: c.Strategy + " " + c.Variant, Value: c.ImagesPerSec, Note: fmt.Sprintf("%.1f%%", 100*c.TestAccuracy)})
	}
	return PlotBars(path, fmt.Sprintf("faster bench train: ThinNet, batch %d, %d threads", sum.Batch, sum.Threads), "images/s", bars)
}

// WriteTrainTable writes the cells like the study's README: the baseline,
// then a row per strategy and a column per variant (c's), and the
// ablations.
func WriteTrainTable(w io.Writer, sum TrainSummary, c TrainConfig) error {
	on := ""
	if sum.Device != "" && sum.Device != "cpu" {
		on = " on " + sum.Device
	}
	fmt.Fprintf(w, "Model Running\n\nThinNet on %s, batch %d, %d epoch(s) of %d images, %d threads in all, %s backend%s\n\n",
		sum.Data, sum.Batch, sum.Epochs, sum.Images, sum.Threads, sum.Backend, on)
	cell := func(s, v string) *TrainCell {
		for i := range sum.Cells {
			if sum.Cells[i].Strategy == s && sum.Cells[i].Variant == v {
				return &sum.Cells[i]
			}
		}
		return nil
	}
	base := cell("single", "plain")
	if base != nil {
		fmt.Fprintf(w, "Baseline (single device, plain): %.1f s, %.1f images/s, test accuracy %.2f%%\n\n", base.Seconds, base.ImagesPerSec, 100*base.TestAccuracy)
	}
	header := []string{""}
	for _, v := range c.Variants {
		header = append(header, map[string]string{"plain": "plain", "autotune": "+autotune", "amp": "+AMP", "autotune+amp": "+autotune +AMP"}[v])
	}
	var rows [][]string
	for _, s := range c.Strategies {
		row := []string{map[string]string{"single": "single", "dp": fmt.Sprintf("DP (%d)", c.Devices), "ddp": fmt.Sprintf("DDP (%d)", c.Devices)}[s]}
		for _, v := range c.Variants {
			row = append(row, CellText(cell(s, v), base))
		}
		rows = append(rows, row)
	}
	if err := Table(w, header, rows); err != nil {
		return err
	}
	writeTrainNotes(w, sum, base)
	return nil
}

// writeTrainNotes writes what the table's cells mean, and the ablations.
func writeTrainNotes(w io.Writer, sum TrainSummary, base *TrainCell) {
	if sum.Repeats > 1 {
		fmt.Fprintf(w, "\ncells: median training seconds of %d runs [lowest–highest] (of which autotuning) · final test accuracy · speed-up over the baseline, the median of the rounds' ratios [lowest–highest]; a ratio whose spread holds 1.0 is marked ≈ (no difference shown)\n", sum.Repeats)
	} else {
		fmt.Fprintln(w, "\ncells: training seconds (of which autotuning, once per layer shape) · final test accuracy · speed-up over the baseline (one run each: no spread; --repeats for medians)")
	}
	if sum.WarmupTuneSeconds > 0 {
		fmt.Fprintf(w, "autotuning: the warm-up runs spent %.1f s tuning (choices kept in the tune cache, so the timed runs pay only for what the warm-up's shapes did not cover)\n", sum.WarmupTuneSeconds)
	}
	for _, c := range sum.Cells {
		if c.Precision != "fp32" && !c.NativeAMP {
			fmt.Fprintln(w, "AMP: bf16 emulated by rounding (this CPU has no bf16 instructions): it shows accuracy, not speed")
			break
		}
	}
	for _, c := range sum.Cells {
		if c.GraphRefused != "" {
			fmt.Fprintf(w, "CUDA graph: %s %s ran eagerly, the device refused the capture: %s\n", c.Strategy, c.Variant, c.GraphRefused)
		}
	}
	if base != nil && len(sum.Ablation) > 0 {
		fmt.Fprintln(w, "\nSingle device, plain, without each of the defaults:")
		for _, a := range sum.Ablation {
			what := map[string]string{"no-overlap": "input prepared after each step (no overlap)", "zero-grad": "gradients zeroed and accumulated (zero_grad without set_to_none)"}[a.Variant]
			fmt.Fprintf(w, "  %s: %.1f s vs %.1f s: the default is %s as fast\n", what, a.Seconds, base.Seconds, RatioText(1/a.Speedup, 1/a.SpeedupHigh, 1/a.SpeedupLow, len(a.Runs) > 1))
		}
	}
}

// MedianCell is a cell's figures over its runs: those of the median run
// by seconds (the lower middle of an even count), the runs' spread, and
// the speed-up over the baseline's run of the same round (base; none for
// the baseline itself or without one).
func MedianCell(runs, base []TrainCell) TrainCell {
	secs := func(cells []TrainCell) []float64 {
		var v []float64
		for _, c := range cells {
			v = append(v, c.Seconds)
		}
		return v
	}
	i, low, high := Median(secs(runs))
	c := runs[i]
	c.Runs, c.Low, c.High = secs(runs), low, high
	if len(base) == len(runs) && &base[0] != &runs[0] {
		if mid, lo, hi, ok := PairedRatio(secs(base), c.Runs); ok {
			c.Speedup, c.SpeedupLow, c.SpeedupHigh = mid, lo, hi
		}
	}
	return c
}

// CellText is a table cell: seconds (median [spread]), tuning, accuracy,
// speed-up over the baseline.
func CellText(c, base *TrainCell) string {
	if c == nil {
		return "—"
	}
	text := fmt.Sprintf("%.1f s", c.Seconds)
	if len(c.Runs) > 1 {
		text += fmt.Sprintf(" [%.1f–%.1f]", c.Low, c.High)
	}
	if c.TuneSeconds > 0 {
		text += fmt.Sprintf(" (%.1f tuning)", c.TuneSeconds)
	}
	text += fmt.Sprintf(" · %.1f%%", 100*c.TestAccuracy)
	if base != nil && c != base && c.Speedup > 0 {
		text += " · " + RatioText(c.Speedup, c.SpeedupLow, c.SpeedupHigh, len(c.Runs) > 1)
	}
	return text
}

func joinInts(v []int) string {
	var s []string
	for _, x := range v {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}
