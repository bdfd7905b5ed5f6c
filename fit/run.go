package fit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/internal/atomicfile"
	"github.com/faster-training/faster/internal/sysmem"
	"github.com/faster-training/faster/internal/usage"
	"github.com/faster-training/faster/train"
)

// Hooks are how a caller follows a run (the CLI draws its progress line
// and prints its epoch lines from them). Every hook may be nil.
type Hooks struct {
	// Train is called as each epoch's training starts (or resumes), with
	// the epoch (1-based), the run's epochs and the images left in the
	// epoch; the run calls the returned step after each step and done when
	// the epoch's training ends.
	Train func(epoch, epochs int, images int64) (step func(loss float64, images int), done func())
	// Epoch is called after each epoch's evaluation.
	Epoch func(EpochSummary)
	// Note reports what the run does besides training, for a person:
	// resuming from a checkpoint, saving one when interrupted, finding the
	// training already complete.
	Note func(msg string)
	// OpenBackend opens the run's backends (the first device's and each
	// replica's) by name ("": the default) and options (their Device
	// set); nil: train.Open, train.Default. Tests inject a device backend
	// (train.NewDeviceReference) to run a whole fit on device state.
	OpenBackend func(name string, o train.BackendOptions) (train.Backend, error)
}

func (h Hooks) note(format string, a ...any) {
	if h.Note != nil {
		h.Note(fmt.Sprintf(format, a...))
	}
}

// Run trains cfg's model on data (opened by OpenData for this rank), one
// rank of comm's group under strategy ddp (comm is nil otherwise), and
// returns what it did. With a checkpoint, rank 0 saves after every epoch
// (and when ctx is cancelled) and a rerun resumes from it. Problems of the
// configuration found only here (a batch that does not split over the
// ranks, more than the data's images, a model whose step does not fit the
// memory budget) are a *ConfigError, found before anything is allocated.
func Run(ctx context.Context, cfg Config, data *Data, comm collective.Comm, hooks Hooks) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rank, world := 0, 1
	if comm != nil {
		rank, world = comm.Rank(), comm.Size()
	}
	if cfg.Batch%world != 0 {
		return nil, configErrorf("batch", "%d does not split over %d processes", cfg.Batch, world)
	}
	if ck := cfg.Checkpoint.Path; ck != "" {
		// A symlink is saved to, and locked as, its target: an atomic
		// save would replace the link with a file and leave the target
		// behind, and two names of one file would have two locks.
		if p, err := filepath.EvalSymlinks(ck); err == nil {
			cfg.Checkpoint.Path = p
		}
	}
	if ck := cfg.Checkpoint.Path; ck != "" && rank == 0 {
		// Rank 0 writes the checkpoint: a second run saving to it fails
		// here, before any work (as a second pack into one destination).
		// A folder it cannot write to is a usage error, before the lock
		// (which would create its file there) and the first epoch.
		if err := atomicfile.CheckDir(ck); err != nil {
			return nil, configErrorf("checkpoint.path", "%s: %v", ck, err)
		}
		unlock, err := train.LockCheckpoint(ck)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	p, err := cfg.plan(data, rank, world)
	if err != nil {
		return nil, err
	}
	r, err := cfg.newRun(p, comm, hooks)
	if r != nil {
		defer r.close()
	}
	if err != nil {
		return nil, err
	}
	return r.train(ctx, p, rank, hooks)
}

// plan is what a run's shape is decided by: the data's sizes and
// classes, the engine's two streams, the steps of an epoch and the
// resolution schedule.
type plan struct {
	data                                 *Data
	classes, inC, inH, trainLen, testLen int
	samples                              int // that a checkpoint records
	steps                                int
	side                                 int // the largest side of the run: a schedule's last, the test side, a FixRes pass's
	trainS, testS                        train.Stream
	resSched                             []int
	world                                int
}

// plan sizes the run on data and checks what depends on it.
func (cfg *Config) plan(data *Data, rank, world int) (*plan, error) {
	classes, err := cfg.classes(data.names, data.testNames)
	if err != nil {
		return nil, err
	}
	p := &plan{data: data, classes: classes, world: world}
	p.inC, p.inH, p.trainLen, p.testLen, p.samples = data.sizes()
	if data.train != nil && p.trainLen == 0 {
		return nil, fmt.Errorf("--data %s: the number of records is unknown (shards without an .idx index beside each): index them, e.g. with DALI's tfrecord2idx", cfg.Data.Path)
	}
	if p.trainLen < cfg.Batch {
		return nil, configErrorf("batch", "%d is larger than the %d training images", cfg.Batch, p.trainLen)
	}
	// The engine's two streams: the training batches (in memory: the
	// trainer's stream of them, see run.train) and the test split.
	p.side, p.steps = p.inH, p.trainLen/cfg.Batch
	if data.train != nil {
		p.trainS, p.testS, p.resSched = data.train, data.test, data.train.sched
		p.steps = data.train.Steps() // the same on every rank
		p.side = max(p.side, data.train.full, data.test.full)
	} else {
		p.resSched = cfg.Data.Schedule
		if cfg.Data.Progressive {
			p.resSched = ProgressiveSchedule(p.inH, cfg.Epochs)
		}
		p.testS = train.EvalStream(data.memTest, cfg.Batch, rank, world)
	}
	return p, cfg.checkSchedule(p.steps)
}

// run is a run's engine: the backend, the model, the trainer with its
// replicas, and what it closes.
type run struct {
	cfg     *Config
	b       train.Backend
	net     *train.Sequential
	tr      *train.Trainer
	prec    train.Precision
	comm    collective.Comm
	closers []func()
}

func (r *run) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// newRun builds the engine of plan p: the model (its step's memory
// checked on its shapes first, before any of it is allocated), the
// trainer, its state from the checkpoint when there is one, and the
// replicas or the process group of the strategy. The run it returns is
// closed by the caller, also on error.
func (cfg *Config) newRun(p *plan, comm collective.Comm, hooks Hooks) (*run, error) {
	m := cfg.Model
	prec, _ := train.ParsePrecision("fp32")
	if cfg.Parallel.AMP {
		prec, _ = train.ParsePrecision(cfg.Parallel.AMPDtype)
	}
	threads := m.Threads
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	device, _ := ParseDevice(m.Device) // Validate checked it
	bopts := train.BackendOptions{Threads: max(1, threads/cfg.Parallel.Devices), NormThreads: m.NormThreads, Precision: prec, Autotune: cfg.Parallel.Autotune, Winograd: m.Winograd, Device: device, Pageable: cfg.Parallel.NoOverlap, ChannelsLast: cfg.Parallel.ChannelsLast}
	if cfg.Parallel.Autotune {
		bopts.TuneCache = cfg.Parallel.TuneCache
	}
	newNet := func() (train.Backend, *train.Sequential, error) {
		b, err := openBackend(hooks.OpenBackend, m.backendFor(device), bopts)
		if err != nil {
			return nil, nil, err
		}
		net, err := NewModel(b, m.Name, m.Filters, p.inC, p.inH, p.classes, cfg.Seed)
		if err != nil {
			b.Close()
			return nil, nil, err
		}
		return b, net, nil
	}
	shapes, err := NewModel(train.Shapes(), m.Name, m.Filters, p.inC, p.inH, p.classes, cfg.Seed)
	if err != nil {
		return nil, err
	}
	localRanks := 1
	if comm != nil {
		localRanks = max(cfg.Parallel.LocalRanks, 1)
	}
	if !isCUDA(device) { // a device's step is checked against its memory (checkDeviceMemory)
		err = cfg.checkStepMemory(shapes, p.inC, p.side, p.world, localRanks)
	}
	shapes.Close()
	if err != nil {
		return nil, err
	}
	b, net, err := newNet()
	if err != nil {
		return nil, err
	}
	if err := cfg.checkDeviceMemory(b, net, p.inC, p.side, p.world); err != nil {
		b.Close()
		net.Close()
		return nil, err
	}
	if _, ok := b.(train.StepProfiler); cfg.Parallel.Profile && !ok {
		b.Close()
		net.Close()
		return nil, configErrorf("parallel.profile", "backend %q does not time its device's calls (train.StepProfiler: cuda does)", b.Name())
	}
	if cfg.Parallel.CUDAGraph && !train.ImplementsCapture(b) {
		b.Close()
		net.Close()
		return nil, configErrorf("parallel.cuda_graph", "backend %q does not implement train.StepCapturer (cuda does)", b.Name())
	}
	r := &run{cfg: cfg, b: b, net: net, prec: prec, comm: comm}
	r.closers = append(r.closers, func() { b.Close() }, func() { net.Close() }) // closed in reverse
	o := cfg.Optim
	opt := &train.SGD{Momentum: float32(o.Momentum), WeightDecay: float32(o.WeightDecay), Nesterov: o.Nesterov}
	tr := train.NewTrainer(b, net, opt, cfg.newSchedule(p.steps), cfg.Batch, cfg.Seed)
	r.tr = tr
	r.closers = append(r.closers, tr.Close)
	tr.Classes = p.classes
	tr.LabelSmoothing, tr.EvalFlip = o.LabelSmoothing, cfg.Eval.TTA == "flip"
	if o.EMA > 0 {
		tr.EMA = &train.EMA{Decay: o.EMA, Warmup: o.EMAWarmup} // before loading: a checkpoint holds its average
	}
	if cfg.Parallel.AMP && prec == train.Float16 {
		tr.Scaler = train.NewGradScaler() // before loading: a checkpoint holds its state
	}
	// The data a checkpoint records: a rank's share times the ranks may
	// differ by rank, the dataset's length does not.
	tr.Data = train.DataID{Name: dataName(cfg.Data.Path), Samples: p.samples}
	tr.DataMoved = cfg.Checkpoint.SameData
	if ck := cfg.Checkpoint.Path; ck != "" {
		var de *train.DataError
		if err := tr.LoadCheckpoint(ck); err == nil {
			if tr.Step > p.steps {
				// Same data and batch: the same steps an epoch (all of
				// them when interrupted after the last). Past them, the
				// epoch would train nothing.
				return r, fmt.Errorf("%s: %w: step %d of an epoch of %d steps", ck, train.ErrCheckpoint, tr.Step, p.steps)
			}
			if tr.Epoch < cfg.Epochs {
				hooks.note("resuming from %s at epoch %d step %d", ck, tr.Epoch+1, tr.Step)
			}
		} else if errors.As(err, &de) && de.Moved() {
			return r, fmt.Errorf("%w: if it is the same data, moved, --same-data resumes it (its sample count is checked); else train into another --checkpoint", err)
		} else if errors.As(err, &de) && cfg.Checkpoint.SameData {
			return r, fmt.Errorf("%w: other data (--same-data resumes data that moved, of as many samples); train it into another --checkpoint", err)
		} else if errors.Is(err, train.ErrData) {
			return r, fmt.Errorf("%w: resume on the data it was saved on, or train into another --checkpoint", err)
		} else if errors.Is(err, train.ErrClasses) {
			return r, fmt.Errorf("%w: --data %s has %d classes; train it into another --checkpoint", err, cfg.Data.Path, p.classes)
		} else if !errors.Is(err, os.ErrNotExist) {
			return r, err
		}
	}
	closeReplicas, err := cfg.setupParallel(tr, comm, newNet)
	// The trainer lets go of the replicas before they close.
	r.closers = slices.Insert(r.closers, len(r.closers)-1, closeReplicas)
	if err != nil {
		return r, err
	}
	tr.NoOverlap, tr.ZeroGrad = cfg.Parallel.NoOverlap, cfg.Parallel.ZeroGrad
	tr.CaptureStep = cfg.Parallel.CUDAGraph
	tr.LossEvery = cfg.LogEvery
	if tr.LossEvery == 0 && train.DeviceOf(b) != "cpu" {
		tr.LossEvery = DeviceLogEvery
	}
	return r, nil
}

// summary is the run's Summary before anything is trained.
func (r *run) summary(p *plan) *Summary {
	cfg, m, o, par := r.cfg, r.cfg.Model, r.cfg.Optim, r.cfg.Parallel
	sum := &Summary{Model: m.Name, Backend: r.b.Name(), Device: train.DeviceOf(r.b), LossEvery: max(r.tr.LossEvery, 1), Strategy: par.Strategy, Devices: par.Devices, WorldSize: p.world, SyncBN: par.SyncBN && par.Strategy != "single",
		Precision: r.prec.String(), Overlap: !par.NoOverlap, ZeroGrad: "set_to_none", Threads: r.b.Threads(), NormThreads: m.NormThreads, Winograd: m.Winograd, Batch: cfg.Batch, LR: o.LR,
		Epochs: cfg.Epochs, Classes: p.classes, TrainImages: p.trainLen, TestImages: p.testLen, PerEpoch: []EpochSummary{},
		Recipe: cfg.Recipe, Schedule: cfg.scheduleName(), LabelSmoothing: o.LabelSmoothing, Nesterov: o.Nesterov, EMA: o.EMA, EMAWarmup: o.EMAWarmup, TTA: cfg.Eval.TTA,
		Resolutions: p.resSched, Curve: []CurvePoint{}, TargetAccuracy: cfg.Eval.TargetAccuracy}
	if par.ZeroGrad {
		sum.ZeroGrad = "zero"
	}
	sum.CUDAGraph = par.CUDAGraph
	if d := p.data.DecodeDevice(); d != "cpu" {
		sum.DecodeDevice = d
	}
	sum.InputLayout = string(p.data.InputLayout())
	if pr, ok := r.b.(train.PrecisionReporter); ok {
		_, sum.NativeAMP = pr.Precision()
	}
	return sum
}

// train trains the epochs left (or evaluates what the checkpoint holds
// when none is), then recalibrates for FixRes, and returns the summary.
func (r *run) train(ctx context.Context, p *plan, rank int, hooks Hooks) (*Summary, error) {
	cfg, tr := r.cfg, r.tr
	trainS, calib := p.trainS, train.Stream(p.data.calib) // calib: FixRes's batches
	if p.data.mem != nil {
		// IDX: the trainer's stream of the images in memory; FixRes
		// recalibrates on them too (the test images are their size, with
		// no other preprocessing).
		trainS = tr.StreamOf(p.data.mem)
		calib = trainS
	}
	sum := r.summary(p)
	if n := p.data.decodeNote; n != "" && rank == 0 {
		hooks.note("%s", n)
	}
	wall := time.Now()
	evaluate := func() (train.Metrics, error) { return tr.EvaluateStream(ctx, p.testS, 0) }
	if tr.Epoch >= cfg.Epochs {
		// Nothing to train: say so, and evaluate what the checkpoint holds.
		if rank == 0 {
			hooks.note("training is already complete: %s has trained %d epoch(s), --epochs is %d; evaluating it", cfg.Checkpoint.Path, tr.Epoch, cfg.Epochs)
		}
		m, err := evaluate()
		if err != nil {
			return nil, err
		}
		sum.AlreadyDone, sum.Epochs, sum.WeightsSHA256 = true, tr.Epoch, WeightsDigest(r.net)
		sum.TestAccuracy, sum.TestTop5, sum.TestLoss = m.Top1, m.Top5, m.Loss
		if cfg.Eval.FixResBN > 0 {
			if err := cfg.fixres(ctx, tr, calib, evaluate, sum); err != nil {
				return nil, err
			}
		}
		sum.WallSeconds = time.Since(wall).Seconds()
		return sum, nil
	}
	if err := r.epochs(ctx, p, trainS, evaluate, rank, sum, hooks); err != nil {
		return nil, err
	}
	var err error
	if r.comm != nil {
		if sum.DDP, err = commSummary(tr, r.comm, cfg.Parallel.TimeAllReduce); err != nil {
			return nil, err
		}
	}
	sum.WeightsSHA256 = WeightsDigest(r.net) // the trained weights, before FixRes
	sum.DecodeFallbacks, sum.DecodeShared = p.data.DecodeFallbacks(), p.data.DecodeShared()
	if cfg.Eval.FixResBN > 0 {
		if err := cfg.fixres(ctx, tr, calib, evaluate, sum); err != nil {
			return nil, err
		}
	}
	sum.WallSeconds = time.Since(wall).Seconds()
	if sum.Seconds > 0 {
		sum.ImagesPerSec = float64(sum.Images) / sum.Seconds
	}
	if steps := sum.Images / cfg.Batch; steps > 0 {
		sum.MsPerStep = 1000 * sum.Seconds / float64(steps)
	}
	if tu, ok := r.b.(train.Tuner); ok {
		sum.Autotune = tu.TuneChoices()
		for _, c := range sum.Autotune {
			sum.TuneSeconds += c.Seconds
		}
	}
	if tr.Scaler != nil {
		sum.SkippedSteps = tr.Scaler.Skipped
	}
	if st, ok := train.CaptureStatsOf(r.b); ok && cfg.Parallel.CUDAGraph {
		sum.GraphSteps = &st
	}
	if hc, ok := r.b.(train.HostCopyReporter); ok {
		if c := hc.HostCopies(); c.Staged+c.InPlace > 0 || c.Unpinned != "" {
			sum.HostCopies = &c
		}
	}
	return sum, nil
}

// resizable is a training stream whose side follows the resolution
// schedule (the loader's).
type resizable interface{ SetEpoch(e int) }

// epochs trains until cfg.Epochs or the target accuracy. Each epoch
// trains in stretches of Eval.Every steps (TrainStream stops at ErrStop
// and resumes where it stopped); an evaluation ends each stretch and the
// epoch. The clock (sum.Seconds) counts training only, so the curve's
// seconds and the time to the target exclude evaluation.
func (r *run) epochs(ctx context.Context, p *plan, trainS train.Stream, evaluate func() (train.Metrics, error), rank int, sum *Summary, hooks Hooks) error {
	cfg, tr, steps := r.cfg, r.tr, p.steps
	ck, every := cfg.Checkpoint.Path, cfg.Checkpoint.Every
	reached := false
	var lastEval train.Metrics
	evalAt := -1    // the global step of lastEval
	lastLoss := 0.0 // the training loss last read
	point := func(m train.Metrics) {
		g := tr.Epoch*steps + tr.Step
		lastEval, evalAt = m, g
		sum.EvalSeconds += m.Seconds
		sum.Curve = append(sum.Curve, CurvePoint{Step: g, Epoch: float64(g) / float64(steps), Seconds: sum.Seconds, TestAccuracy: m.Top1, TestLoss: Metric(m.Loss)})
		if t := cfg.Eval.TargetAccuracy; t > 0 && !reached && m.Top1 >= t {
			reached = true
			sum.SecondsToTarget, sum.StepsToTarget = ptr(sum.Seconds), g
		}
	}
	for tr.Epoch < cfg.Epochs && !reached {
		epoch := tr.Epoch + 1
		data := trainS
		side := resolutionAt(p.resSched, tr.Epoch, p.inH)
		if rs, ok := trainS.(resizable); ok {
			rs.SetEpoch(tr.Epoch)
		} else if p.data.mem != nil && side != p.inH {
			data = tr.StreamOf(train.NewResized(p.data.mem, side, side)) // IDX: resized in memory
		}
		step, done := func(float64, int) {}, func() {}
		if hooks.Train != nil {
			step, done = hooks.Train(epoch, cfg.Epochs, int64((steps-tr.Step)*cfg.Batch))
		}
		ran := 0 // the epoch's steps (a profile's count)
		onStep := func(r train.StepResult) error {
			ran++
			if r.LossSteps > 0 { // read at this step (Config.LogEvery)
				lastLoss = r.Loss
			}
			step(lastLoss, r.Images)
			// Mid-epoch checkpoints (the epoch's last step is saved below,
			// after the epoch ends). Rank 0 writes; the ranks are in step.
			if ck != "" && every > 0 && rank == 0 && r.Step%every == 0 && r.Step < r.Steps {
				if err := tr.SaveCheckpoint(ck); err != nil {
					return err
				}
			}
			if cfg.Eval.Every > 0 && ((r.Epoch-1)*steps+r.Step)%cfg.Eval.Every == 0 {
				return train.ErrStop
			}
			return nil
		}
		var total train.EpochResult // the epoch's stretches together
		correct := 0.0
		prof, _ := r.b.(train.StepProfiler)
		if !cfg.Parallel.Profile || epoch != cfg.Epochs {
			prof = nil
		}
		if prof != nil {
			if err := prof.StartProfile(); err != nil {
				done()
				return fmt.Errorf("parallel.profile: %w", err)
			}
		}
		for tr.Epoch < epoch && !reached {
			cpu0 := usage.CPU()
			res, err := tr.TrainStream(ctx, data, onStep)
			sum.CPUSeconds += (usage.CPU() - cpu0).Seconds()
			sum.Images += res.Images
			sum.Seconds += res.Seconds
			total.Images += res.Images
			total.Seconds += res.Seconds
			total.Loss += res.Loss * float64(res.Images)
			correct += res.Accuracy * float64(res.Images)
			if err != nil {
				done()
				if ck != "" && ctx.Err() != nil && rank == 0 {
					if serr := tr.SaveCheckpoint(ck); serr == nil {
						hooks.note("saved %s at epoch %d step %d", ck, tr.Epoch+1, tr.Step)
					}
				}
				return err
			}
			if tr.Epoch < epoch && tr.Step < steps { // stopped for an evaluation mid-epoch
				m, err := evaluate()
				if err != nil {
					done()
					return err
				}
				point(m)
			}
		}
		done()
		if prof != nil {
			dp, err := prof.StopProfile()
			if err != nil {
				return fmt.Errorf("parallel.profile: %w", err)
			}
			sum.Profile = profileSummary(epoch, ran, total.Seconds, dp)
		}
		if total.Images > 0 {
			total.Loss /= float64(total.Images)
			total.Accuracy = correct / float64(total.Images)
		}
		if ck != "" && rank == 0 {
			if err := tr.SaveCheckpoint(ck); err != nil {
				return err
			}
		}
		m := lastEval
		if !reached && evalAt != tr.Epoch*steps { // not evaluated at this step yet
			var err error
			if m, err = evaluate(); err != nil {
				return err
			}
			point(m)
		}
		es := EpochSummary{Epoch: epoch, TrainLoss: total.Loss, TrainAcc: total.Accuracy, TestLoss: m.Loss, TestAccuracy: m.Top1, Resolution: side,
			TestTop5: m.Top5, Images: total.Images, Seconds: total.Seconds, ImagesPerSec: float64(total.Images) / max(total.Seconds, 1e-9)}
		sum.PerEpoch = append(sum.PerEpoch, es)
		sum.TestAccuracy, sum.TestTop5, sum.TestLoss = m.Top1, m.Top5, m.Loss
		if hooks.Epoch != nil {
			hooks.Epoch(es)
		}
	}
	return nil
}

// commSummary reports the trainer's gradient communication and, with
// rounds > 0, times that many rounds of a step's all-reduces alone (every
// rank takes part; the gradients are summed over again, after training).
func commSummary(tr *train.Trainer, comm collective.Comm, rounds int) (*DDPSummary, error) {
	cs := tr.CommStats()
	s := &DDPSummary{Steps: cs.Steps, BucketBytes: cs.Buckets}
	if cs.Steps > 0 {
		s.AllReducePerStep = cs.AllReduce.Seconds() / float64(cs.Steps)
		s.ExposedPerStep = cs.Exposed.Seconds() / float64(cs.Steps)
	}
	if rounds <= 0 {
		return s, nil
	}
	if err := comm.Barrier(); err != nil {
		return nil, err
	}
	start := time.Now()
	for range rounds {
		if err := tr.AllReduceGrads(); err != nil {
			return nil, err
		}
	}
	s.AlonePerStep, s.AloneRounds = ptr(time.Since(start).Seconds()/float64(rounds)), rounds
	return s, nil
}

// fixres recalibrates the BatchNorm statistics of what tr evaluates on
// calib (FixRes's test-resolution adjustment: Eval.FixResBN batches of the
// training images at the test resolution, under the test preprocessing,
// forward in training mode; train.RecalibrateBN, torch.optim.swa_utils.
// update_bn's semantics) and evaluates again, recording both evaluations
// in sum.
func (cfg *Config) fixres(ctx context.Context, tr *train.Trainer, calib train.Stream, evaluate func() (train.Metrics, error), sum *Summary) error {
	_, res, _ := calib.Shape()
	fs := &FixResSummary{Resolution: res, TestAccuracyBefore: sum.TestAccuracy, TestTop5Before: sum.TestTop5, TestLossBefore: Metric(sum.TestLoss)}
	rep, err := tr.RecalibrateBN(ctx, calib, 0, cfg.Eval.FixResBN)
	if err != nil {
		return fmt.Errorf("--fixres-bn: %w", err)
	}
	fs.BNRecalibration = rep
	m, err := evaluate()
	if err != nil {
		return err
	}
	fs.EvalSeconds = m.Seconds
	sum.FixResBN = fs
	sum.TestAccuracy, sum.TestTop5, sum.TestLoss = m.Top1, m.Top5, m.Loss
	return nil
}

// setupParallel adds dp's replicas or joins ddp's group. The returned
// function closes the replicas' networks and backends; call it after the
// trainer's Close (it is never nil).
func (cfg *Config) setupParallel(tr *train.Trainer, comm collective.Comm, newNet func() (train.Backend, *train.Sequential, error)) (func(), error) {
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	p := cfg.Parallel
	switch p.Strategy {
	case "dp":
		var comms []collective.Comm
		if p.SyncBN {
			comms = collective.NewLocal(p.Devices)
			train.SyncBatchNorm(tr.Net, comms[0].AllReduceF64)
		}
		for i := 1; i < p.Devices; i++ {
			b, net, err := newNet()
			if err != nil {
				return closeAll, err
			}
			closers = append(closers, func() { net.Close(); b.Close() })
			if comms != nil {
				train.SyncBatchNorm(net, comms[i].AllReduceF64)
			}
			if err := tr.AddReplica(b, net); err != nil {
				return closeAll, err
			}
		}
	case "ddp":
		if comm == nil {
			return closeAll, configErrorf("parallel.strategy", "ddp needs a process group")
		}
		if p.SyncBN {
			train.SyncBatchNorm(tr.Net, comm.AllReduceF64)
		}
		return closeAll, tr.Distribute(comm, p.BucketKB<<10)
	}
	return closeAll, nil
}

// NewModel builds the model (thinnet or resnet18) on b for images of inC channels and side inH
// with a head of classes outputs.
func NewModel(b train.Backend, model string, filters []int, inC, inH, classes int, seed uint64) (*train.Sequential, error) {
	if model == "resnet18" {
		// The small-input stem for MNIST-sized images, the ImageNet one above 64 pixels.
		return train.NewResNet18(b, train.ResNetConfig{InChannels: inC, Classes: classes, SmallInput: inH <= 64, Widths: filters}, seed)
	}
	c := train.ThinNetConfig{InChannels: inC, Classes: classes, Filters: filters}
	for range filters {
		c.Blocks = append(c.Blocks, 2)
	}
	return train.NewThinNet(b, c, seed)
}

// maxClasses bounds the model's head (ThinNet's 512×classes weights, with
// their gradients and momentum, take 6 GB at the bound): a class count
// above it comes from a mistake or from damaged labels.
const maxClasses = 1 << 20

// classes is the number of classes the model's head gets: the number the
// training data records (names; an LMDB or WebDataset records its largest
// label), or Data.Classes, which may be larger (outputs no label uses)
// and is needed for data that records none. The test data's classes
// (testNames) must begin with the training data's — a test tree missing
// the last class is fine, one missing another would shift the labels.
func (cfg *Config) classes(names, testNames []string) (int, error) {
	if len(names) > 0 && len(testNames) > 0 && !slices.Equal(testNames, names[:min(len(names), len(testNames))]) {
		return 0, fmt.Errorf("the test data's %d classes (%s) are not those of the training data's %d (%s): their labels would not agree",
			len(testNames), abbrev(testNames), len(names), abbrev(names))
	}
	n, want := max(len(names), len(testNames)), cfg.Data.Classes
	switch {
	case want > maxClasses:
		return 0, configErrorf("data.classes", "%d: more than %d", want, maxClasses)
	case n > maxClasses:
		return 0, fmt.Errorf("--data %s has %d classes, more than %d (a label read from damaged data?)", cfg.Data.Path, n, maxClasses)
	case want > 0 && want < n:
		return 0, configErrorf("data.classes", "%d: the data has %d classes", want, n)
	case want > 0:
		return want, nil
	case n > 0:
		return n, nil
	}
	return 0, configErrorf("data.path", "%s does not record its classes (no class folders or manifest classes): give data.classes N", cfg.Data.Path)
}

// checkDeviceMemory refuses a training step that would not fit the
// memory of the backend's device (train.DeviceMemory), where its tensors
// live instead of the host's memory checkStepMemory budgets; nothing for
// a backend on the host.
func (cfg *Config) checkDeviceMemory(b train.Backend, net train.Layer, inC, side, world int) error {
	budget, ok, err := train.MemoryBudget(b)
	if !ok {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: device memory: %w", b.Name(), err)
	}
	n := cfg.Batch / world
	m, err := train.EstimateMemory(net, n, inC, side, side)
	if err != nil {
		return configErrorf("model.name", "%s at %d×%d×%d, batch %d: %v", cfg.Model.Name, inC, side, side, n, err)
	}
	if m.Total() > budget {
		return configErrorf("model.name", "%s at %d×%d, batch %d per rank: a training step holds %.1f GB, above the %.1f GB free on %s; lower batch or data.resolution",
			cfg.Model.Name, side, side, n, float64(m.Total())/1e9, float64(budget)/1e9, train.DeviceOf(b))
	}
	return nil
}

// abbrev lists the first few of names.
func abbrev(names []string) string {
	if len(names) > 4 {
		return strings.Join(names[:4], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}

// dataName is the data's path as a checkpoint records it (train.DataID):
// a URL as given, a path made absolute with its symlinks resolved, so
// that runs from other folders or through a link name the same data alike.
func dataName(data string) string {
	if strings.Contains(data, "://") {
		return data
	}
	p, err := filepath.Abs(data)
	if err != nil {
		return data
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

// checkStepMemory refuses, before anything is allocated, a model and
// batch whose training step would not fit: the activations and parameters
// of Batch/world images of inC×side×side (the largest side of the run)
// against Model.MaxMemory, by default half the memory of this machine (or
// its container) shared by the localRanks ranks on it. The loader budgets
// its batches in flight in the same way (loader.Options.MaxBatchMemory).
func (cfg *Config) checkStepMemory(net train.Layer, inC, side, world, localRanks int) error {
	n, model := cfg.Batch/world, cfg.Model.Name
	m, err := train.EstimateMemory(net, n, inC, side, side)
	if err != nil {
		return configErrorf("model.name", "%s at %d×%d×%d, batch %d: %v", model, inC, side, side, n, err)
	}
	budget, what := cfg.Model.MaxMemory, "--max-memory"
	if budget == 0 {
		budget, what = sysmem.Total()/2/int64(localRanks), "half this machine's memory"
		if localRanks > 1 {
			what += fmt.Sprintf(" shared by its %d ranks", localRanks)
		}
	}
	if m.Total() > budget {
		return configErrorf("model.name", "%s at %d×%d, batch %d per rank: a training step holds %.1f GB (activations %.1f GB, parameters with gradients and momentum %.1f GB), above %s (%.1f GB); lower batch or data.resolution, or raise model.max_memory",
			model, side, side, n, float64(m.Total())/1e9, float64(m.Activations)/1e9, float64(m.Params)/1e9, what, float64(budget)/1e9)
	}
	return nil
}

// profileSummary is a profiled epoch's summary, per step.
func profileSummary(epoch, steps int, seconds float64, dp train.DeviceProfile) *ProfileSummary {
	n := float64(max(steps, 1))
	return &ProfileSummary{Epoch: epoch, Steps: steps, BusyMs: dp.BusyMs / n, IdleMs: dp.GapMs / n, CallsPer: float64(dp.Calls) / n,
		WallMsStep: seconds * 1e3 / n, Rows: dp.Rows}
}
