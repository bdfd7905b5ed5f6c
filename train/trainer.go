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
type Trainer struct {
	Backend  Backend
	Net      Layer
	Opt      *SGD
	Schedule Schedule
	Batch    int
	Seed     uint64
	Epoch    int // epochs completed
	Step     int // steps completed in the current epoch

	x  Tensor
	ce *CrossEntropy
	xs []float32
	ys []int
}

// NewTrainer prepares training of net on b.
func NewTrainer(b Backend, net Layer, opt *SGD, sched Schedule, batch int, seed uint64) *Trainer {
	return &Trainer{Backend: b, Net: net, Opt: opt, Schedule: sched, Batch: batch, Seed: seed, ce: NewCrossEntropy(b)}
}

// StepResult reports one training step.
type StepResult struct {
	Epoch, Step, Steps int // Step counts from 1 up to Steps in this epoch
	Loss               float64
	Correct            int
	Images             int
	LR                 float64
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

func (t *Trainer) ensureInput(shape ...int) error {
	if t.x != nil && slices.Equal(t.x.Shape(), shape) {
		return nil
	}
	if t.x != nil {
		t.x.Release()
	}
	x, err := t.Backend.NewTensor(shape...)
	if err != nil {
		return err
	}
	t.x = x
	t.xs = make([]float32, numel(shape))
	t.ys = make([]int, shape[0])
	return nil
}

// TrainEpoch runs the remaining steps of the current epoch, calling onStep
// (may be nil) after each; then the trainer moves to the next epoch. It
// returns early with ctx's error, or with no error when onStep returns
// ErrStop.
func (t *Trainer) TrainEpoch(ctx context.Context, data Dataset, onStep func(StepResult) error) (EpochResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	steps, err := t.prepare(data)
	if err != nil {
		return EpochResult{}, err
	}
	order := t.Order(data.Len(), t.Epoch)
	tally := t.newTally()
	done := tally.result
	for t.Step < steps {
		if err := ctx.Err(); err != nil {
			return done(), err
		}
		data.Fill(order[t.Step*t.Batch:(t.Step+1)*t.Batch], t.xs, t.ys)
		r, err := t.step(t.xs, t.ys, steps, onStep)
		tally.add(r)
		if errors.Is(err, ErrStop) {
			return done(), nil
		}
		if err != nil {
			return done(), err
		}
	}
	t.Epoch++
	t.Step = 0
	return done(), nil
}

// prepare checks that data holds at least one batch and sizes the input
// tensor; it returns the steps of a full epoch.
func (t *Trainer) prepare(data interface {
	Len() int
	Shape() (c, h, w int)
}) (int, error) {
	if t.Batch <= 0 {
		return 0, fmt.Errorf("train: batch size %d", t.Batch)
	}
	steps := t.StepsPerEpoch(data.Len())
	if steps == 0 {
		return 0, fmt.Errorf("train: %d samples are fewer than one batch of %d", data.Len(), t.Batch)
	}
	c, h, w := data.Shape()
	return steps, t.ensureInput(t.Batch, c, h, w)
}

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
	y.res.Loss += r.Loss
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

// step trains on one batch (xs normalised NCHW, ys labels) and calls onStep.
// The result counts the batch only when the step ran.
func (t *Trainer) step(xs []float32, ys []int, steps int, onStep func(StepResult) error) (StepResult, error) {
	if err := t.x.Write(xs); err != nil {
		return StepResult{}, err
	}
	logits, err := t.Net.Forward(t.x, true)
	if err != nil {
		return StepResult{}, err
	}
	r, dl, err := t.ce.Forward(logits, ys, true)
	if err != nil {
		return StepResult{}, err
	}
	if _, err := t.Net.Backward(dl, false); err != nil {
		return StepResult{}, err
	}
	lr := t.Schedule.LR(float64(t.Epoch) + float64(t.Step+1)/float64(steps))
	t.Opt.Step(t.Net.Params(), lr)
	t.Step++
	sr := StepResult{Epoch: t.Epoch + 1, Step: t.Step, Steps: steps, Loss: r.Loss, Correct: r.Correct1, Images: t.Batch, LR: lr}
	if onStep != nil {
		return sr, onStep(sr)
	}
	return sr, nil
}

// Batch is one batch a Stream produces: X holds the images, normalised,
// NCHW float32; Y their labels. Both are valid until the next batch.
type Batch struct {
	X []float32
	Y []int
}

// Stream is a dataset that produces its batches itself, in its own
// deterministic order per epoch (an input pipeline that decodes and
// augments ahead of the trainer, overlapping input with compute).
type Stream interface {
	Shape() (c, h, w int)
	// Len is the number of samples an epoch yields.
	Len() int
	// Epoch yields epoch e's batches (0-based) from batch skip on, each of
	// the batch size the trainer uses.
	Epoch(ctx context.Context, e, skip int) iter.Seq2[Batch, error]
}

// TrainStream is TrainEpoch over a Stream: it runs the remaining steps of
// the current epoch on the stream's batches (a resumed epoch skips those
// already trained), then moves to the next epoch.
func (t *Trainer) TrainStream(ctx context.Context, data Stream, onStep func(StepResult) error) (EpochResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	steps, err := t.prepare(data)
	if err != nil {
		return EpochResult{}, err
	}
	tally := t.newTally()
	done := tally.result
	for b, err := range data.Epoch(ctx, t.Epoch, t.Step) {
		if err != nil {
			return done(), err
		}
		if t.Step >= steps {
			break
		}
		if len(b.Y) != t.Batch {
			return done(), fmt.Errorf("train: stream batch of %d, want %d", len(b.Y), t.Batch)
		}
		r, err := t.step(b.X, b.Y, steps, onStep)
		tally.add(r)
		if errors.Is(err, ErrStop) {
			return done(), nil
		}
		if err != nil {
			return done(), err
		}
	}
	if err := ctx.Err(); err != nil {
		return done(), err
	}
	t.Epoch++
	t.Step = 0
	return done(), nil
}

// Close releases the trainer's tensors (not the network or backend).
func (t *Trainer) Close() {
	if t.x != nil {
		t.x.Release()
		t.x = nil
	}
	t.ce.Close()
}

// Metrics are evaluation results.
type Metrics struct {
	Loss    float64 `json:"loss"`
	Top1    float64 `json:"top1"`
	Top5    float64 `json:"top5"`
	Samples int     `json:"samples"`
	Seconds float64 `json:"seconds"`
}

// Evaluate runs net in inference mode over all of data in batches of
// batch (the last one smaller).
func Evaluate(ctx context.Context, b Backend, net Layer, data Dataset, batch int) (Metrics, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e := newEvaluator(b, net, data)
	defer e.close()
	c, h, w := data.Shape()
	idx := make([]int, 0, batch)
	xs, ys := make([]float32, batch*c*h*w), make([]int, batch)
	for lo := 0; lo < data.Len(); lo += batch {
		if err := ctx.Err(); err != nil {
			return e.m, err
		}
		n := min(batch, data.Len()-lo)
		idx = idx[:0]
		for i := range n {
			idx = append(idx, lo+i)
		}
		data.Fill(idx, xs[:n*c*h*w], ys[:n])
		if err := e.add(xs[:n*c*h*w], ys[:n]); err != nil {
			return e.m, err
		}
	}
	return e.result(), nil
}

// EvaluateStream is Evaluate over one epoch of a Stream (its batches may
// be smaller at the end).
func EvaluateStream(ctx context.Context, b Backend, net Layer, data Stream, epoch int) (Metrics, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e := newEvaluator(b, net, data)
	defer e.close()
	c, h, w := data.Shape()
	for bt, err := range data.Epoch(ctx, epoch, 0) {
		if err != nil {
			return e.m, err
		}
		if n := len(bt.Y); n > 0 {
			if err := e.add(bt.X[:n*c*h*w], bt.Y); err != nil {
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
