package train

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"
)

// Dataset is a labelled set of images held in memory or loaded on demand.
type Dataset interface {
	Len() int
	// Shape is one image's (channels, height, width).
	Shape() (c, h, w int)
	// Fill writes the images idx, normalised, into x (len(idx)·C·H·W,
	// NCHW) and their labels into y.
	Fill(idx []int, x []float32, y []int)
}

// Images is an in-memory dataset of 8-bit images (NCHW bytes), normalised
// as (v/255 − Mean)/Std.
type Images struct {
	Pixels    []byte
	Labels    []int
	C, H, W   int
	Mean, Std float32
}

var _ Dataset = (*Images)(nil)

func (d *Images) Len() int             { return len(d.Labels) }
func (d *Images) Shape() (c, h, w int) { return d.C, d.H, d.W }

// Fill implements Dataset.
func (d *Images) Fill(idx []int, x []float32, y []int) {
	n := d.C * d.H * d.W
	std := d.Std
	if std == 0 {
		std = 1
	}
	scale, shift := 1/(255*std), -d.Mean/std
	for j, i := range idx {
		src, dst := d.Pixels[i*n:(i+1)*n], x[j*n:(j+1)*n]
		for k, v := range src {
			dst[k] = float32(v)*scale + shift
		}
		y[j] = d.Labels[i]
	}
}

// fillBytes copies images idx (C×H×W bytes each) into pix and their
// labels into y, and returns the normalisation Fill applies, as a
// ByteBatch takes it.
func (d *Images) fillBytes(idx []int, pix []byte, y []int) (mean, std []float32) {
	n := d.C * d.H * d.W
	for j, i := range idx {
		copy(pix[j*n:(j+1)*n], d.Pixels[i*n:(i+1)*n])
		y[j] = d.Labels[i]
	}
	return []float32{d.Mean}, []float32{d.Std} // a Std of 0 is 1 to both
}

// Subset returns the first n items of d (all when n ≤ 0 or n ≥ Len).
func (d *Images) Subset(n int) *Images {
	if n <= 0 || n >= d.Len() {
		return d
	}
	s := *d
	s.Pixels, s.Labels = d.Pixels[:n*d.C*d.H*d.W], d.Labels[:n]
	return &s
}

// Trainer runs SGD epochs over a dataset. Its position (Epoch, Step) and
// the optimiser's state are what a checkpoint saves; the order of samples
// in an epoch depends only on Seed and Epoch, so a resumed run sees the
// same batches as an uninterrupted one.
//
// One trainer drives one device (its Backend and Net), several devices of
// one process (AddReplica: data parallelism, like torch.nn.DataParallel) or
// one rank of several processes (Distribute: like
// torch.nn.parallel.DistributedDataParallel). Batch is always the global
// batch: the devices and ranks split it.
type Trainer struct {
	Backend  Backend
	Net      Layer
	Opt      *SGD
	Schedule Schedule
	Batch    int
	Seed     uint64
	Epoch    int // epochs completed
	Step     int // steps completed in the current epoch
	// Classes is the number of outputs of the model's head: a checkpoint
	// records it and one of another class count does not load (0: not
	// recorded, not checked).
	Classes int
	// Data identifies the training data: a checkpoint records it and one
	// saved training on other data does not load (zero: not recorded, not
	// checked). See DataID.
	Data DataID
	// DataMoved loads a checkpoint saved on data of another name (the
	// dataset moved, or is reached by another path) when its sample
	// count is Data's; data of another count is still refused.
	DataMoved bool

	// Scaler, when set, scales the loss gradient and skips the steps whose
	// gradients are not finite (mixed precision; see GradScaler).
	Scaler *GradScaler
	// ZeroGrad zeroes the gradients before each backward pass and adds the
	// new ones into them — torch's zero_grad() without set_to_none — where
	// the default lets the backward pass overwrite them
	// (zero_grad(set_to_none=True)). It is there to measure the difference.
	ZeroGrad bool
	// NoOverlap prepares each batch (gather, normalise, copy into the
	// engine's memory) only once the previous step is done; by default the
	// next batch is prepared while the current step runs (the study's
	// pin_memory + non_blocking).
	NoOverlap bool
	// CaptureStep runs each step's device work (input staged into a fixed
	// tensor, forward, backward, the GradScaler's unscale, the
	// optimiser's step) through the backend's StepCapturer: recorded once
	// as a CUDA graph and replayed. The GradScaler's flag and the loss's
	// sums are read after the step, outside the record. It needs a
	// backend that implements StepCapturer, one device of one process
	// and a device state; the feeder then holds each batch in host
	// memory, and the step copies it in. Off by default.
	CaptureStep bool

	// LabelSmoothing is the loss's ε (CrossEntropy.LabelSmoothing).
	LabelSmoothing float64
	// LossEvery is the number of steps between reads of the loss's sums
	// (0 and 1: every step). A backend that keeps the loss on its device
	// (LossBackend) is synchronised once per read; the steps between
	// report no loss (StepResult.LossSteps 0), and a non-finite loss is
	// seen at the read.
	LossEvery int
	// EMA, when set, is updated after every step that updates the weights,
	// and Evaluate and EvaluateStream evaluate its average instead of the
	// weights being trained.
	EMA *EMA
	// EvalFlip makes Evaluate and EvaluateStream average each image's
	// logits with those of its mirror image (flip test-time augmentation).
	EvalFlip bool

	devs []*device // devs[0] runs on the trainer's Backend and Net
	// state holds the parameters, gradients, momentum and EMA: the
	// backend's (ParamStore, native true) or the host adapter. It is
	// bound by prepare, for the Opt, EMA and Scaler it was made with.
	state       State
	native      bool
	stateOpt    *SGD
	stateEMA    *EMA
	stateScaler *GradScaler
	emaHave     bool // native: the device holds an average
	unread      int  // steps whose loss is not read yet
	dist        *distributed
	scratch     [][]float32 // ZeroGrad: where the backward pass writes
	inShape     []int       // c, h, w of the staged inputs
	hostX       []float32
	hostY       []int
	held        [2]heldBatch // CaptureStep: the feeder's batches, in host memory
}

// NewTrainer prepares training of net on b.
func NewTrainer(b Backend, net Layer, opt *SGD, sched Schedule, batch int, seed uint64) *Trainer {
	t := &Trainer{Backend: b, Net: net, Opt: opt, Schedule: sched, Batch: batch, Seed: seed}
	t.devs = []*device{{b: b, net: net, params: net.Params()}}
	return t
}

// StepResult reports one training step.
type StepResult struct {
	Epoch, Step, Steps int // Step counts from 1 up to Steps in this epoch
	// Loss is the mean loss and Correct the top-1 count of the LossSteps
	// steps ending with this one (Trainer.LossEvery; 1 by default; 0: the
	// loss was not read at this step, and both are zero).
	Loss      float64
	Correct   int
	LossSteps int
	Images    int
	LR        float64
	// Skipped: the scaler found non-finite gradients and skipped the
	// step. With the GradScaler on the device (ScalerState) it is known
	// only where the trainer reads it back — at the steps that read the
	// loss, or every step with an EMA — and then says whether any step
	// since the last reading was skipped.
	Skipped bool
}

// EpochResult summarises the steps an epoch call ran.
type EpochResult struct {
	Epoch    int     // the epoch's number, from 1
	Loss     float64 // mean training loss over the steps run
	Accuracy float64 // training top-1 over the steps run
	Images   int
	Seconds  float64
}

// ErrStop, returned by an onStep callback, ends TrainEpoch early without
// error; the trainer's position says where it stopped.
var ErrStop = errors.New("stop training")

// StepsPerEpoch is the number of full batches in n samples (the last
// partial batch is dropped, as PyTorch's drop_last).
func (t *Trainer) StepsPerEpoch(n int) int { return n / t.Batch }

// Order returns the sample order of an epoch (0-based).
func (t *Trainer) Order(n, epoch int) []int {
	return rand.New(rand.NewPCG(t.Seed, uint64(epoch)+1)).Perm(n)
}

// LocalBatch is the part of the global batch this process trains on:
// Batch divided by the number of ranks.
func (t *Trainer) LocalBatch() int {
	if t.dist != nil {
		return t.Batch / t.dist.comm.Size()
	}
	return t.Batch
}

// ensureInput sizes the devices' input tensors (two per device, so one is
// filled while the other is used) for a local batch of images c×h×w.
func (t *Trainer) ensureInput(c, h, w int) error {
	local := t.LocalBatch()
	if t.inShape != nil && slices.Equal(t.inShape, []int{local, c, h, w}) {
		return nil
	}
	t.releaseInput()
	lo := 0
	for i, d := range t.devs {
		hi := lo + local/len(t.devs)
		if i < local%len(t.devs) {
			hi++
		}
		d.lo, d.hi = lo, hi
		lo = hi
		if d.in == nil {
			in, err := newByteInput(d.b)
			if err != nil {
				return err
			}
			d.in = in
		}
		for s := range d.x {
			x, err := d.b.NewTensor(hi-d.lo, c, h, w)
			if err != nil {
				return err
			}
			d.x[s] = x
			d.ys[s] = make([]int, hi-d.lo)
		}
	}
	t.inShape = []int{local, c, h, w}
	t.hostX = make([]float32, local*c*h*w)
	t.hostY = make([]int, local)
	return nil
}

func (t *Trainer) releaseInput() {
	for i := range t.held {
		t.held[i].freeMem()
	}
	for _, d := range t.devs {
		for s, x := range d.x {
			if x != nil {
				x.Release()
				d.x[s] = nil
			}
		}
	}
	t.inShape = nil
}

// TrainEpoch runs the remaining steps of the current epoch, calling onStep
// (may be nil) after each; then the trainer moves to the next epoch. It
// returns early with ctx's error, or with no error when onStep returns
// ErrStop. In distributed training every rank passes the whole dataset
// and trains on its part of each global batch. It is TrainStream over
// data as the trainer's stream (StreamOf): the engine has one data seam.
func (t *Trainer) TrainEpoch(ctx context.Context, data Dataset, onStep func(StepResult) error) (EpochResult, error) {
	if t.Batch > 0 && data.Len() < t.Batch {
		return EpochResult{}, fmt.Errorf("train: %d samples are fewer than one batch of %d", data.Len(), t.Batch)
	}
	return t.TrainStream(ctx, t.StreamOf(data), onStep)
}

// TrainStream is TrainEpoch over a Stream: it runs the remaining steps of
// the current epoch on the stream's batches (a resumed epoch skips those
// already trained), then moves to the next epoch. In distributed training
// each rank's stream yields that rank's batches (of LocalBatch samples);
// the epoch has data.Steps() steps, which must be the same on every rank.
func (t *Trainer) TrainStream(ctx context.Context, data Stream, onStep func(StepResult) error) (EpochResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	steps, err := t.prepare(data, max(data.Steps(), 0))
	if err != nil {
		return EpochResult{}, err
	}
	res, err := t.run(ctx, steps, data.Epoch(ctx, t.Epoch, t.Step), onStep)
	// A device state lives for the call: the host values are the
	// network's again when it returns (to evaluate, recalibrate, save or
	// change), and the next call binds them afresh. A captured step's
	// record outlives it: the next call's steps replay it only where
	// their calls name the same memory (a backend that gives a state
	// back the same addresses, as cuda does, replays across epochs;
	// StepCapturer checks every call), and Close releases it.
	if uerr := t.unbindState(); uerr != nil && err == nil {
		err = uerr
	}
	return res, err
}

// prepare checks that data holds at least one batch and sizes the input
// tensors; it returns steps unless that is zero.
func (t *Trainer) prepare(data interface {
	Len() int
	Shape() (c, h, w int)
}, steps int) (int, error) {
	if t.Batch <= 0 {
		return 0, fmt.Errorf("train: batch size %d", t.Batch)
	}
	if t.LocalBatch()*max(1, t.size()) != t.Batch || t.LocalBatch() < len(t.devs) {
		return 0, fmt.Errorf("train: batch %d does not split over %d ranks of %d devices", t.Batch, t.size(), len(t.devs))
	}
	if steps == 0 {
		return 0, fmt.Errorf("train: %d samples are fewer than one batch of %d", data.Len(), t.Batch)
	}
	for _, d := range t.devs {
		if err := d.ensureLoss(t.LabelSmoothing); err != nil {
			return 0, err
		}
	}
	if err := t.bindState(); err != nil {
		return 0, err
	}
	c, h, w := data.Shape()
	if err := t.ensureInput(c, h, w); err != nil {
		return 0, err
	}
	return steps, t.ensureHeld(4 * t.LocalBatch() * c * h * w)
}

// size is the number of ranks (1 without Distribute).
func (t *Trainer) size() int {
	if t.dist != nil {
		return t.dist.comm.Size()
	}
	return 1
}

// run trains on batches until the epoch's steps are done: each batch is
// staged into the devices' input tensors — by a goroutine, while the
// previous step runs, unless NoOverlap — then stepped on.
func (t *Trainer) run(ctx context.Context, steps int, batches iter.Seq2[Batch, error], onStep func(StepResult) error) (EpochResult, error) {
	tally := t.newTally()
	done := tally.result
	local := t.LocalBatch()
	defer func() { // after the feeder has stopped: rows a step never took
		for i := range t.held {
			t.held[i].releaseRows()
		}
	}()
	stepOn := func(slot int) (bool, error) {
		r, err := t.step(slot, steps, onStep)
		tally.add(r)
		if errors.Is(err, ErrStop) {
			return false, nil
		}
		return err == nil, err
	}
	if t.NoOverlap {
		for b, err := range batches {
			if err != nil {
				return done(), err
			}
			if t.Step >= steps {
				b.Rows.release()
				break
			}
			if err := ctx.Err(); err != nil {
				b.Rows.release()
				return done(), err
			}
			if err := t.stage(0, b, local); err != nil {
				return done(), err
			}
			more, err := stepOn(0)
			if werr := t.held[0].wait(); werr != nil && more {
				more, err = false, werr
			}
			if !more {
				return done(), err
			}
		}
	} else {
		f := t.startFeeder(batches, steps-t.Step, local)
		defer f.stop()
		for t.Step < steps {
			if err := ctx.Err(); err != nil {
				return done(), err
			}
			s, ok := <-f.ready
			if !ok {
				break
			}
			if s.err != nil {
				return done(), s.err
			}
			more, err := stepOn(s.slot)
			// The slot goes back to the feeder once the step's copies
			// from it have read it (held in the backend's host memory,
			// they may still be running; a wait on the step's goroutine,
			// outside any captured region).
			if werr := t.held[s.slot].wait(); werr != nil && more {
				more, err = false, werr
			}
			f.free <- s.slot
			if !more {
				return done(), err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return done(), err
	}
	if t.Step < steps {
		return done(), fmt.Errorf("train: the data ended after %d of %d steps", t.Step, steps)
	}
	for _, d := range t.devs { // the epoch's time includes its queued work
		if err := Sync(d.b); err != nil {
			return done(), err
		}
	}
	t.Epoch++
	t.Step = 0
	return done(), nil
}

// stage copies a local batch into input slot s of every device, or
// with CaptureStep into held batch s (the step copies it in).
func (t *Trainer) stage(s int, b Batch, local int) error {
	if t.CaptureStep {
		if len(b.Y) != local {
			b.Rows.release()
			return fmt.Errorf("train: batch of %d, want %d", len(b.Y), local)
		}
		t.held[s].hold(b)
		return nil
	}
	return t.stageDevice(s, b, local)
}

// stageDevice copies a local batch into input slot s of every device.
// Rows in device memory are read by each device's DeviceInputOp and given
// back (Done) before it returns, whatever happens.
func (t *Trainer) stageDevice(s int, b Batch, local int) error {
	if b.Rows != nil {
		defer b.Rows.release()
	}
	if len(b.Y) != local {
		return fmt.Errorf("train: batch of %d, want %d", len(b.Y), local)
	}
	if r := b.Rows; r != nil {
		if r.N != local {
			return fmt.Errorf("train: %d rows in device memory for a batch of %d", r.N, local)
		}
		for _, d := range t.devs {
			if d.rows == nil {
				op, err := newDeviceInput(d.b, r)
				if err != nil {
					return err
				}
				d.rows = op
			}
			if err := d.rows.Load(d.x[s], *r, d.lo, d.hi); err != nil {
				return err
			}
			copy(d.ys[s], b.Y[d.lo:d.hi])
		}
		return nil
	}
	if bb := b.Bytes; bb.Pixels != nil {
		per := len(bb.Pixels) / local
		for _, d := range t.devs {
			part := bb
			part.Pixels, part.N = bb.Pixels[d.lo*per:d.hi*per], d.hi-d.lo
			if err := d.in.Normalize(d.x[s], part); err != nil {
				return err
			}
			copy(d.ys[s], b.Y[d.lo:d.hi])
		}
		return nil
	}
	per := len(b.X) / local
	for _, d := range t.devs {
		if err := d.x[s].Write(b.X[d.lo*per : d.hi*per]); err != nil {
			return err
		}
		copy(d.ys[s], b.Y[d.lo:d.hi])
	}
	return nil
}

// feeder stages batches into two input slots from its own goroutine: it
// fills a free slot while the trainer steps on the other.
type feeder struct {
	ready  chan staged // bounded: at most the two slots are in flight
	free   chan int
	quit   chan struct{}
	exited chan struct{}
}

type staged struct {
	slot int
	err  error
}

func (t *Trainer) startFeeder(batches iter.Seq2[Batch, error], n, local int) *feeder {
	f := &feeder{ready: make(chan staged, 2), free: make(chan int, 2), quit: make(chan struct{}), exited: make(chan struct{})}
	f.free <- 0
	f.free <- 1
	go func() {
		defer close(f.exited)
		defer close(f.ready)
		if n <= 0 {
			return
		}
		for b, err := range batches {
			var slot int
			select {
			case slot = <-f.free:
			case <-f.quit:
				b.Rows.release()
				return
			}
			if err == nil {
				err = t.stage(slot, b, local)
			}
			select {
			case f.ready <- staged{slot, err}:
			case <-f.quit:
				return
			}
			if n--; err != nil || n == 0 {
				return
			}
		}
	}()
	return f
}

// stop ends the feeder's goroutine and waits for it.
func (f *feeder) stop() {
	close(f.quit)
	<-f.exited
}

// step trains on input slot s and calls onStep. The result counts the
// batch only when the step ran.
func (t *Trainer) step(s, steps int, onStep func(StepResult) error) (StepResult, error) {
	every := max(t.LossEvery, 1)
	read := (t.Step+1)%every == 0 || t.Step+1 == steps
	if t.CaptureStep {
		return t.stepCaptured(s, steps, read, onStep)
	}
	r, err := t.forwardBackward(s, read)
	if err != nil {
		return StepResult{}, err
	}
	t.unread++
	lossSteps := 0
	if read {
		lossSteps, t.unread = t.unread, 0
	}
	st := t.state
	lr := t.Schedule.LR(float64(t.Epoch) + float64(t.Step+1)/float64(steps))
	// A non-finite loss (the same on every rank: it is all-reduced) stops
	// training, unless the scaler will skip the step and the weights are
	// still finite (mixed precision overflowing now and then).
	if read && !isFinite(r.Loss) {
		bad, err := st.NonFinite(true)
		if err != nil {
			return StepResult{}, err
		}
		if t.Scaler == nil || len(bad) > 0 {
			return StepResult{}, t.nonFinite(s, fmt.Sprintf("the loss is %g", r.Loss), lr)
		}
	}
	skipped, stepped := false, false
	switch {
	case t.scaled() != nil: // unscale, step and update on the device
		if err := t.scaledStep(lr); err != nil {
			return StepResult{}, err
		}
		var err error
		if skipped, err = t.readScaler(read); err != nil {
			return StepResult{}, err
		}
		stepped = true
	case t.Scaler != nil:
		finite, err := t.unscale(float32(1 / t.Scaler.Scale))
		if err != nil {
			return StepResult{}, err
		}
		t.Scaler.Update(finite)
		skipped = !finite
	}
	if !skipped {
		if !stepped {
			if err := t.onStates(func(st State) error { return st.SGDStep(t.Opt, lr) }); err != nil {
				return StepResult{}, err
			}
		}
		// A backend may hide a NaN from the loss (oneDNN's ReLU maps it
		// to 0) while it reaches the gradients: check the weights too —
		// on a device state at the loss's reads only (checkWeights), as
		// the loss itself, so that a step waits for no read.
		if t.checkWeights(read) {
			bad, err := st.NonFinite(true)
			if err != nil {
				return StepResult{}, err
			}
			if len(bad) > 0 {
				return StepResult{}, t.nonFinite(s, "the update left parameters that are not finite", lr)
			}
		}
		if err := t.updateEMA(); err != nil {
			return StepResult{}, err
		}
	}
	return t.endStep(steps, r, lossSteps, lr, skipped, onStep)
}

// checkWeights reports whether a step checks that the updated weights
// are finite: every step on the host path; on a device state only at the
// steps that read the loss (LossEvery), whose check is one reduction read
// back, so that the steps between queue their work without waiting (a
// non-finite weight, as a non-finite loss, is then seen at the next read:
// the last step of an epoch always reads).
func (t *Trainer) checkWeights(read bool) bool { return read || !t.native }

// endStep counts the step, keeps its tuning choices and reports it.
func (t *Trainer) endStep(steps int, r Result, lossSteps int, lr float64, skipped bool, onStep func(StepResult) error) (StepResult, error) {
	t.Step++
	for _, d := range t.devs { // a step's new tuning choices, kept now
		if f, ok := d.b.(TuneFlusher); ok {
			f.FlushTuneCache()
		}
	}
	sr := StepResult{Epoch: t.Epoch + 1, Step: t.Step, Steps: steps, Loss: r.Loss, Correct: r.Correct1, LossSteps: lossSteps, Images: t.Batch, LR: lr, Skipped: skipped}
	if onStep != nil {
		return sr, onStep(sr)
	}
	return sr, nil
}

// stepCaptured is step with CaptureStep: the device work in one captured
// step (capturedStep), the checks the eager step makes before the update
// made after it from the flags read then: a non-finite loss without a
// GradScaler, or parameters not finite, stop training.
func (t *Trainer) stepCaptured(s, steps int, read bool, onStep func(StepResult) error) (StepResult, error) {
	lr := t.Schedule.LR(float64(t.Epoch) + float64(t.Step+1)/float64(steps))
	r, skipped, err := t.capturedStep(s, read, lr)
	if err != nil {
		return StepResult{}, err
	}
	t.unread++
	lossSteps := 0
	if read {
		lossSteps, t.unread = t.unread, 0
	}
	if read && !isFinite(r.Loss) && t.Scaler == nil {
		return StepResult{}, t.nonFinite(0, fmt.Sprintf("the loss is %g", r.Loss), lr)
	}
	if t.checkWeights(read) {
		bad, err := t.state.NonFinite(true)
		if err != nil {
			return StepResult{}, err
		}
		if len(bad) > 0 {
			return StepResult{}, t.nonFinite(0, "the update left parameters that are not finite", lr)
		}
	}
	if !skipped {
		if err := t.updateEMA(); err != nil {
			return StepResult{}, err
		}
	}
	return t.endStep(steps, r, lossSteps, lr, skipped, onStep)
}

// Batch is one batch a Stream produces: X holds the images, normalised,
// NCHW float32; Y their labels. Both are valid until the next batch.
// A stream may instead give the images as bytes (Bytes.Pixels set, X
// nil), N×H×W×C, which the trainer has the backend normalise
// (ByteInputBackend; NormalizeHWC on the host otherwise), or as rows
// already in the backend's device memory (Rows set, X nil: a GPU decode
// stage's batch), which the backend reads there (DeviceInputBackend) and
// the trainer gives back with Rows.Done once read.
type Batch struct {
	X     []float32
	Y     []int
	Bytes ByteBatch
	Rows  *DeviceRows
}

// floats is the batch's first n images (per values each) as normalised
// floats on the host: X, or Bytes normalised into *buf (NormalizeHWC),
// for the host's evaluator. Rows in device memory are refused.
func (b Batch) floats(n, per int, buf *[]float32) ([]float32, error) {
	if b.Rows != nil {
		return nil, b.Rows.refuse()
	}
	if b.Bytes.Pixels == nil {
		return b.X[:n*per], nil
	}
	if cap(*buf) < n*per {
		*buf = make([]float32, n*per)
	}
	out := (*buf)[:n*per]
	bb := b.Bytes
	bb.Pixels, bb.N = bb.Pixels[:n*per], n
	return out, NormalizeHWC(out, bb)
}

// Stream is a dataset that produces its batches itself, in its own
// deterministic order per epoch (an input pipeline that decodes and
// augments ahead of the trainer, overlapping input with compute).
type Stream interface {
	Shape() (c, h, w int)
	// Len is the number of samples an epoch yields on this rank.
	Len() int
	// Steps is the number of batches an epoch yields, the same on every
	// rank (see loader.Loader.StepsPerEpoch): the epoch's length in steps.
	Steps() int
	// Epoch yields epoch e's batches (0-based) from batch skip on, each of
	// the batch size the trainer uses.
	Epoch(ctx context.Context, e, skip int) iter.Seq2[Batch, error]
}

// Close releases the trainer's tensors and stops its replicas' and
// all-reduce goroutines (the networks and backends stay open). Calling it
// again does nothing.
func (t *Trainer) Close() {
	if c, ok := t.Backend.(StepCapturer); ok && t.CaptureStep {
		c.ReleaseStep() // the record names the trainer's memory
	}
	t.releaseInput()
	t.unbindState() // pulls first: the host mirrors keep the weights
	for _, d := range t.devs {
		if d.loss != nil {
			d.loss.Close()
			d.loss = nil
		}
		if d.in != nil {
			d.in.Close()
			d.in = nil
		}
		if d.rows != nil {
			d.rows.Close()
			d.rows = nil
		}
		if d.jobs != nil {
			close(d.jobs)
			<-d.exited
			d.jobs = nil
		}
	}
	if t.dist != nil {
		t.dist.close()
		t.dist = nil
	}
}

// Metrics are evaluation results.
type Metrics struct {
	Loss    float64 `json:"loss"`
	Top1    float64 `json:"top1"`
	Top5    float64 `json:"top5"`
	Samples int     `json:"samples"`
	Seconds float64 `json:"seconds"`
}

// EvalOptions are choices of how a model is evaluated.
type EvalOptions struct {
	// Flip averages the logits of each image and of its mirror image
	// (left-right; flip test-time augmentation).
	Flip bool
}

// Evaluate runs net in inference mode over all of data in batches of
// batch (the last one smaller).
func Evaluate(ctx context.Context, b Backend, net Layer, data Dataset, batch int) (Metrics, error) {
	return EvaluateWith(ctx, b, net, data, batch, EvalOptions{})
}

// EvaluateWith is Evaluate with options: EvaluateStreamWith over data as
// an evaluation stream (EvalStream).
func EvaluateWith(ctx context.Context, b Backend, net Layer, data Dataset, batch int, opts EvalOptions) (Metrics, error) {
	return EvaluateStreamWith(ctx, b, net, EvalStream(data, batch, 0, 1), 0, opts)
}

// EvaluateStream is Evaluate over one epoch of a Stream (its batches may
// be smaller at the end).
func EvaluateStream(ctx context.Context, b Backend, net Layer, data Stream, epoch int) (Metrics, error) {
	return EvaluateStreamWith(ctx, b, net, data, epoch, EvalOptions{})
}

// EvaluateStreamWith is EvaluateStream with options.
func EvaluateStreamWith(ctx context.Context, b Backend, net Layer, data Stream, epoch int, opts EvalOptions) (Metrics, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e := newEvaluator(b, net, data)
	e.flip = opts.Flip
	defer e.close()
	c, h, w := data.Shape()
	var buf []float32
	for bt, err := range data.Epoch(ctx, epoch, 0) {
		if err != nil {
			return e.m, err
		}
		if n := len(bt.Y); n > 0 {
			xs, err := bt.floats(n, c*h*w, &buf)
			if err != nil {
				return e.m, err
			}
			if err := e.add(xs, bt.Y); err != nil {
				return e.m, err
			}
		}
	}
	return e.result(), nil
}

// evaluator accumulates inference metrics over batches of any size.
type evaluator struct {
	b       Backend
	net     Layer
	ce      *CrossEntropy
	c, h, w int
	start   time.Time
	m       Metrics
	c1, c5  int
	flip    bool
	logits  []float32 // flip: the unflipped images' logits
	flipped []float32
}

func newEvaluator(b Backend, net Layer, data interface{ Shape() (c, h, w int) }) *evaluator {
	c, h, w := data.Shape()
	return &evaluator{b: b, net: net, ce: NewCrossEntropy(b), c: c, h: h, w: w, start: time.Now()}
}

// add runs one batch: xs holds len(ys) images, NCHW.
func (e *evaluator) add(xs []float32, ys []int) error {
	n := len(ys)
	x, err := e.b.NewTensor(n, e.c, e.h, e.w)
	if err != nil {
		return err
	}
	defer x.Release()
	if err := x.Write(xs); err != nil {
		return err
	}
	logits, err := e.net.Forward(x, false)
	if err != nil {
		return err
	}
	if e.flip {
		if logits, err = e.addFlipped(x, xs, logits); err != nil {
			return err
		}
		defer logits.Release()
	}
	r, _, err := e.ce.Forward(logits, ys, false)
	if err != nil {
		return err
	}
	e.m.Loss += r.Loss * float64(n)
	e.c1 += r.Correct1
	e.c5 += r.Correct5
	e.m.Samples += n
	return nil
}

// addFlipped runs the mirror images of xs (in x, which it overwrites)
// and returns a new tensor of the mean of their logits and logits.
func (e *evaluator) addFlipped(x Tensor, xs []float32, logits Tensor) (Tensor, error) {
	e.logits = slices.Grow(e.logits[:0], Numel(logits.Shape()))[:Numel(logits.Shape())]
	if err := logits.Read(e.logits); err != nil {
		return nil, err
	}
	e.flipped = mirrorRows(e.flipped, xs, e.w)
	if err := x.Write(e.flipped); err != nil {
		return nil, err
	}
	fl, err := e.net.Forward(x, false)
	if err != nil {
		return nil, err
	}
	mean := make([]float32, len(e.logits))
	if err := fl.Read(mean); err != nil {
		return nil, err
	}
	for i, v := range e.logits {
		mean[i] = (mean[i] + v) / 2
	}
	out, err := e.b.NewTensor(logits.Shape()...)
	if err != nil {
		return nil, err
	}
	if err := out.Write(mean); err != nil {
		out.Release()
		return nil, err
	}
	return out, nil
}

func (e *evaluator) result() Metrics {
	m := e.m
	if m.Samples > 0 {
		m.Loss /= float64(m.Samples)
		m.Top1 = float64(e.c1) / float64(m.Samples)
		m.Top5 = float64(e.c5) / float64(m.Samples)
	}
	m.Seconds = time.Since(e.start).Seconds()
	return m
}

func (e *evaluator) close() { e.ce.Close() }

// tally sums the steps of one epoch call into an EpochResult.
type tally struct {
	res     EpochResult
	batch   int
	correct int
	start   time.Time
}

func (t *Trainer) newTally() *tally {
	return &tally{res: EpochResult{Epoch: t.Epoch + 1}, batch: t.Batch, start: time.Now()}
}

func (y *tally) add(r StepResult) {
	y.res.Loss += r.Loss * float64(r.LossSteps)
	y.res.Images += r.Images
	y.correct += r.Correct
}

func (y *tally) result() EpochResult {
	res := y.res
	res.Seconds = time.Since(y.start).Seconds()
	if res.Images > 0 {
		res.Loss /= float64(res.Images / y.batch)
		res.Accuracy = float64(y.correct) / float64(res.Images)
	}
	return res
}
