package main

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/spf13/pflag"

	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/train"
)

// FixRes's test-resolution adjustment of the BatchNorm statistics
// (`faster train --fixres-bn N`): after training, N batches of the
// training images at the test resolution, under the test preprocessing,
// go forward in training mode to recompute every BatchNorm's running
// statistics (train.RecalibrateBN, torch.optim.swa_utils.update_bn's
// semantics); then the model is evaluated again.

func addFixResFlags(f *pflag.FlagSet, o *trainOptions) {
	f.IntVar(&o.fixresBN, "fixres-bn", 0, "after training, recompute the BatchNorm statistics from N batches of the training images at the test resolution with the test preprocessing (FixRes; swa_utils.update_bn's cumulative average), then evaluate again; 0: off")
}

func checkFixRes(o trainOptions) []string {
	if o.fixresBN < 0 {
		return []string{fmt.Sprintf("--fixres-bn %d: want a number of batches (0: off)", o.fixresBN)}
	}
	return nil
}

// fixresSummary is the adjustment's part of `faster train --json`.
type fixresSummary struct {
	Resolution int `json:"resolution"` // of the recalibration (the test resolution)
	train.BNRecalibration
	// The test figures before the adjustment; the summary's test_accuracy,
	// test_top5 and test_loss are those after it.
	TestAccuracyBefore float64 `json:"test_accuracy_before"`
	TestTop5Before     float64 `json:"test_top5_before"`
	TestLossBefore     metric  `json:"test_loss_before"`
	EvalSeconds        float64 `json:"eval_seconds"`
}

// openCalibration opens the training images of data under the eval
// recipe at the test resolution res, shuffled, in whole batches of this
// rank's share (base as for openStreams).
func openCalibration(data string, res int, base loader.Options) (*loaderStream, error) {
	co := base
	co.Transform, co.Resolution, co.Split, co.Shuffle, co.Drop = loader.Eval, res, "train", loader.ShuffleOn, true
	l, err := loader.Open(data, co)
	if err != nil {
		return nil, fmt.Errorf("--fixres-bn: %w", err)
	}
	return &loaderStream{l: l, res: res, full: res}, nil
}

// datasetStream is an in-memory training set as a Stream of this rank's
// part of each global batch, in the trainer's order of epoch e: what IDX
// data recalibrates on (its test images are the training images' size,
// with no other preprocessing).
type datasetStream struct {
	d           train.Dataset
	tr          *train.Trainer
	rank, local int
}

func (s *datasetStream) Shape() (c, h, w int) { return s.d.Shape() }
func (s *datasetStream) Len() int             { return s.d.Len() / s.tr.Batch * s.local }
func (s *datasetStream) Steps() int           { return s.d.Len() / s.tr.Batch }
func (s *datasetStream) Epoch(ctx context.Context, e, skip int) iter.Seq2[train.Batch, error] {
	return func(yield func(train.Batch, error) bool) {
		c, h, w := s.d.Shape()
		order := s.tr.Order(s.d.Len(), e)
		x, y := make([]float32, s.local*c*h*w), make([]int, s.local)
		for k := skip; k < s.Steps(); k++ {
			if err := ctx.Err(); err != nil {
				yield(train.Batch{}, err)
				return
			}
			lo := k*s.tr.Batch + s.rank*s.local
			s.d.Fill(order[lo:lo+s.local], x, y)
			if !yield(train.Batch{X: x, Y: y}, nil) {
				return
			}
		}
	}
}

// fixres recalibrates the BatchNorm statistics of what tr evaluates on
// calib and evaluates again, recording both evaluations in sum and
// reporting on out (unless --json).
func fixres(ctx context.Context, o trainOptions, tr *train.Trainer, calib train.Stream, evaluate func() (train.Metrics, error), sum *trainSummary, out io.Writer) error {
	_, res, _ := calib.Shape()
	fs := &fixresSummary{Resolution: res, TestAccuracyBefore: sum.TestAccuracy, TestTop5Before: sum.TestTop5, TestLossBefore: metric(sum.TestLoss)}
	rep, err := tr.RecalibrateBN(ctx, calib, 0, o.fixresBN)
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
	if !o.json {
		fmt.Fprintf(out, "BatchNorm statistics recomputed at %d×%d from %d batches (%d images, %.1f s): test loss %.4f → %.4f, acc %.2f%% → %.2f%%\n",
			res, res, rep.Batches, rep.Images, rep.Seconds, float64(fs.TestLossBefore), m.Loss, 100*fs.TestAccuracyBefore, 100*m.Top1)
	}
	return nil
}
