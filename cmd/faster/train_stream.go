package main

import (
	"context"
	"fmt"
	"iter"
	"os"
	"strings"

	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/storage"
	"github.com/faster-training/faster/train"
)

// loaderStream feeds the trainer from an input pipeline: the loader's
// train or eval recipe decodes and augments ahead of the training step.
type loaderStream struct {
	l      *loader.Loader
	res    int   // of the epoch being trained (SetEpoch)
	full   int   // the resolution without a schedule
	sched  []int // the loader's resolution schedule, if any
	labels []int
}

// SetEpoch makes Shape that of epoch e (0-based) under the resolution
// schedule.
func (s *loaderStream) SetEpoch(e int) { s.res = resolutionAt(s.sched, e, s.full) }

var _ train.Stream = (*loaderStream)(nil)

func (s *loaderStream) Shape() (c, h, w int) { return 3, s.res, s.res }
func (s *loaderStream) Len() int             { return s.l.Len() }

// Steps is the loader's StepsPerEpoch: the same on every rank, from every
// shard's record count (not this rank's share), so no rank ends its epoch
// while the others wait in an all-reduce.
func (s *loaderStream) Steps() int { return s.l.StepsPerEpoch() }

func (s *loaderStream) Epoch(ctx context.Context, e, skip int) iter.Seq2[train.Batch, error] {
	n := 3 * s.res * s.res
	return func(yield func(train.Batch, error) bool) {
		i := 0
		for b, err := range s.l.IterEpoch(ctx, e) {
			if err != nil {
				yield(train.Batch{}, err)
				return
			}
			if i++; i <= skip || b.Valid == 0 {
				b.Release()
				continue
			}
			s.labels = s.labels[:0]
			for j := range b.Valid {
				s.labels = append(s.labels, b.Items[j].Label)
			}
			ok := yield(train.Batch{X: pipeline.Float32s(b.Data)[:b.Valid*n], Y: s.labels}, nil)
			b.Release()
			if !ok {
				return
			}
		}
	}
}

// isIDX reports whether data is an MNIST-style IDX directory.
func isIDX(data string) bool {
	k, err := source.Detect(data)
	return err == nil && k == "idx"
}

// openStreams opens the train and test pipelines of a packed dataset (its
// train and test splits; a local directory or a storage URL such as
// s3://bucket/prefix) or of an ImageFolder tree (with testData for the
// test images), at resolution res (0: the packed images' width, else 224).
// base gives the options both share: the local batch, the seed (of the
// train pipeline), this rank's share (ShardIdx of NumShards), the labels'
// offset and class count. sched is the train pipeline's resolution
// schedule (progressive resizing; nil: none, {0}: progressiveSchedule);
// the test pipeline stays at res.
func openStreams(data, testData string, res int, base loader.Options, sched []int, epochs int) (trainS, testS *loaderStream, err error) {
	if !strings.ContainsAny(data, "*?[") && !storage.IsURL(data) { // a glob of shards is the loader's to match
		if _, err := os.Stat(data); err != nil {
			return nil, nil, err
		}
	}
	packed, evalSplit := false, "test"
	if m, err := shard.LoadManifestAt(context.Background(), data); err == nil && len(m.Splits) > 0 {
		packed = true
		if res == 0 {
			res = shard.PackedWidth(context.Background(), data, "train", base.ShardIdx)
		}
		if testData == "" {
			testData = data
		}
	} else if sp := shard.EvalSplit(data); sp != "" {
		// TensorFlow's ImageNet shards: train-* and validation-* side by side.
		packed, evalSplit = true, sp
		if testData == "" {
			testData = data
		}
	}
	if res == 0 {
		res = 224
	}
	if testData == "" {
		return nil, nil, usagef("--data %s is not a packed dataset with a test split: give --test-data", data)
	}
	if len(sched) == 1 && sched[0] == 0 {
		sched = progressiveSchedule(res, epochs)
	}
	to := base
	to.Transform, to.Resolution, to.Drop, to.Split, to.Schedule = loader.Train, res, true, "train", sched
	tl, err := loader.Open(data, to)
	if err != nil {
		return nil, nil, err
	}
	split := "train"
	if packed && testData == data {
		split = evalSplit
	}
	eo := base
	eo.Transform, eo.Resolution, eo.Split, eo.Seed = loader.Eval, res, split, 0
	el, err := loader.Open(testData, eo)
	if err != nil {
		tl.Close()
		return nil, nil, fmt.Errorf("test data: %w", err)
	}
	return &loaderStream{l: tl, res: resolutionAt(sched, 0, res), full: res, sched: sched}, &loaderStream{l: el, res: res, full: res}, nil
}
