package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/faster-training/faster/progress"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/train"
	_ "github.com/faster-training/faster/train/onednn" // registers "onednn" when built with cgo
)

type trainOptions struct {
	data        string
	model       string
	backend     string
	epochs      int
	batch       int
	lr          float64
	momentum    float64
	weightDecay float64
	warmup      float64
	stepEpochs  float64
	gamma       float64
	threads     int
	normThreads int
	seed        uint64
	limit       int
	testLimit   int
	checkpoint  string
	testData    string
	resolution  int
	json        bool
}

func init() {
	commands = append(commands, func(stdout, stderr io.Writer) *cobra.Command {
		var o trainOptions
		c := &cobra.Command{
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
from it.

Exit status: 0 trained; 1 failed (bad data, backend error); 2 usage error;
130 interrupted (after saving the checkpoint, if any).`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, args []string) error {
				return runTrain(cmd.Context(), o, stdout, stderr)
			},
		}
		f := c.Flags()
		f.StringVar(&o.data, "data", "", "dataset: an IDX directory, a packed dataset (faster pack) or an ImageFolder tree (required)")
		f.StringVar(&o.testData, "test-data", "", "test images for an ImageFolder --data (a packed dataset uses its test split)")
		f.IntVar(&o.resolution, "resolution", 0, "image side for packed or ImageFolder data (default: the packed images' width, else 224)")
		f.StringVar(&o.model, "model", "thinnet", "model: thinnet or resnet18")
		f.StringVar(&o.backend, "backend", "", "compute backend: onednn or reference (default: onednn when built with cgo)")
		f.IntVar(&o.epochs, "epochs", 1, "epochs to train (in total, counting resumed ones)")
		f.IntVar(&o.batch, "batch", 512, "batch size")
		f.Float64Var(&o.lr, "lr", 0.001, "base learning rate")
		f.Float64Var(&o.momentum, "momentum", 0.9, "SGD momentum")
		f.Float64Var(&o.weightDecay, "weight-decay", 0, "SGD weight decay")
		f.Float64Var(&o.warmup, "warmup", 0, "epochs of linear learning-rate warm-up")
		f.Float64Var(&o.stepEpochs, "step-epochs", 0, "multiply the rate by --gamma every this many epochs (0: never)")
		f.Float64Var(&o.gamma, "gamma", 0.1, "step-decay factor")
		f.IntVar(&o.threads, "threads", 0, "compute threads (default: number of CPUs)")
		f.IntVar(&o.normThreads, "norm-threads", 0, "threads for BatchNorm (default: --threads; 1 can be faster on busy cores)")
		f.Uint64Var(&o.seed, "seed", 1, "seed for initial weights and shuffling")
		f.IntVar(&o.limit, "limit", 0, "train on the first N training images only (0: all)")
		f.IntVar(&o.testLimit, "test-limit", 0, "evaluate on the first N test images only (0: all)")
		f.StringVar(&o.checkpoint, "checkpoint", "", "save state to FILE after each epoch; resume from it when it exists")
		f.BoolVar(&o.json, "json", false, "print a JSON summary")
		return c
	})
}

type epochSummary struct {
	Epoch        int     `json:"epoch"`
	TrainLoss    float64 `json:"train_loss"`
	TrainAcc     float64 `json:"train_accuracy"`
	TestLoss     float64 `json:"test_loss"`
	TestAccuracy float64 `json:"test_accuracy"`
	TestTop5     float64 `json:"test_top5"`
	Images       int     `json:"images"`
	Seconds      float64 `json:"seconds"`
	ImagesPerSec float64 `json:"images_per_sec"`
}

type trainSummary struct {
	Model        string         `json:"model"`
	Backend      string         `json:"backend"`
	Threads      int            `json:"threads"`
	NormThreads  int            `json:"norm_threads,omitempty"`
	Batch        int            `json:"batch"`
	LR           float64        `json:"lr"`
	Epochs       int            `json:"epochs"`
	TrainImages  int            `json:"train_images"`
	TestImages   int            `json:"test_images"`
	Images       int            `json:"images"`  // images trained in this run
	Seconds      float64        `json:"seconds"` // training time of this run (excluding evaluation)
	ImagesPerSec float64        `json:"images_per_sec"`
	TestAccuracy float64        `json:"test_accuracy"`
	TestTop5     float64        `json:"test_top5"`
	TestLoss     float64        `json:"test_loss"`
	WallSeconds  float64        `json:"wall_seconds"`
	PerEpoch     []epochSummary `json:"per_epoch"`
}

// loadImages reads one split of an IDX directory into memory.
func loadImages(dir, split string, limit int) (*train.Images, error) {
	src, err := source.OpenIDX(dir, split)
	if err != nil {
		return nil, err
	}
	h, w := src.Size()
	items := src.Items()
	if limit > 0 && limit < len(items) {
		items = items[:limit]
	}
	d := &train.Images{C: 1, H: h, W: w, Mean: 0.2860, Std: 0.3530, Labels: make([]int, len(items)), Pixels: make([]byte, 0, len(items)*h*w)}
	for i, it := range items {
		d.Labels[i] = it.Label
		d.Pixels = append(d.Pixels, src.Pixels(i)...)
	}
	return d, nil
}

func runTrain(ctx context.Context, o trainOptions, stdout, stderr io.Writer) error {
	var problems []string
	if o.data == "" {
		problems = append(problems, "--data is required")
	}
	if o.model != "thinnet" && o.model != "resnet18" {
		problems = append(problems, fmt.Sprintf("--model %q: want thinnet or resnet18", o.model))
	}
	if o.epochs < 1 || o.batch < 1 || o.threads < 0 || o.normThreads < 0 || o.limit < 0 || o.testLimit < 0 {
		problems = append(problems, "--epochs and --batch must be positive; --threads, --norm-threads, --limit, --test-limit not negative")
	}
	if o.lr <= 0 {
		problems = append(problems, "--lr must be positive")
	}
	if len(problems) > 0 {
		return usagef("%s", joinLines(problems))
	}
	// Two kinds of data: IDX images held in memory (train.Dataset), or an
	// input pipeline over packed shards or an ImageFolder (train.Stream).
	var (
		trainSet, testSet       *train.Images
		trainStream, testStream *loaderStream
		err                     error
	)
	if isIDX(o.data) {
		if trainSet, err = loadImages(o.data, "train", o.limit); err != nil {
			return err
		}
		if testSet, err = loadImages(o.data, "test", o.testLimit); err != nil {
			return err
		}
	} else {
		if o.limit > 0 || o.testLimit > 0 {
			return usagef("--limit and --test-limit apply to IDX data only")
		}
		if trainStream, testStream, err = openStreams(o.data, o.testData, o.resolution, o.batch, o.seed); err != nil {
			return err
		}
		defer trainStream.l.Close()
		defer testStream.l.Close()
	}
	inC, inH, trainLen, testLen := 0, 0, 0, 0
	if trainSet != nil {
		inC, inH, trainLen, testLen = trainSet.C, trainSet.H, trainSet.Len(), testSet.Len()
	} else {
		inC, inH, _ = trainStream.Shape()
		trainLen, testLen = trainStream.Len(), testStream.Len()
	}
	if trainLen < o.batch {
		return usagef("--batch %d is larger than the %d training images", o.batch, trainLen)
	}
	bopts := train.BackendOptions{Threads: o.threads, NormThreads: o.normThreads}
	var b train.Backend
	if o.backend == "" {
		b, err = train.Default(bopts)
	} else {
		b, err = train.Open(o.backend, bopts)
		if errors.Is(err, train.ErrNoBackend) {
			return usagef("--backend: %v", err)
		}
	}
	if err != nil {
		return err
	}
	defer b.Close()
	var net *train.Sequential
	if o.model == "resnet18" {
		// The small-input stem for MNIST-sized images, the ImageNet one above 64 pixels.
		net, err = train.NewResNet18(b, train.ResNetConfig{InChannels: inC, Classes: 10, SmallInput: inH <= 64}, o.seed)
	} else {
		net, err = train.NewThinNet(b, train.ThinNetConfig{InChannels: inC, Classes: 10}, o.seed)
	}
	if err != nil {
		return err
	}
	defer net.Close()
	var sched train.Schedule = train.Constant(o.lr)
	if o.warmup > 0 || o.stepEpochs > 0 {
		sched = train.WarmupStep{Base: o.lr, WarmupEpochs: o.warmup, StepEpochs: o.stepEpochs, Gamma: o.gamma}
	}
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: float32(o.momentum), WeightDecay: float32(o.weightDecay)}, sched, o.batch, o.seed)
	defer tr.Close()
	if o.checkpoint != "" {
		if err := tr.LoadCheckpoint(o.checkpoint); err == nil {
			fmt.Fprintf(stderr, "resuming from %s at epoch %d step %d\n", o.checkpoint, tr.Epoch+1, tr.Step)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}

	sum := trainSummary{Model: o.model, Backend: b.Name(), Threads: b.Threads(), NormThreads: o.normThreads, Batch: o.batch, LR: o.lr, Epochs: o.epochs,
		TrainImages: trainLen, TestImages: testLen}
	wall := time.Now()
	steps := tr.StepsPerEpoch(trainLen)
	for tr.Epoch < o.epochs {
		epoch := tr.Epoch + 1
		line := newTrainLine(stderr, fmt.Sprintf("epoch %d/%d", epoch, o.epochs), int64((steps-tr.Step)*o.batch))
		onStep := func(r train.StepResult) error {
			line.step(r.Loss, r.Images)
			return nil
		}
		var res train.EpochResult
		if trainSet != nil {
			res, err = tr.TrainEpoch(ctx, trainSet, onStep)
		} else {
			res, err = tr.TrainStream(ctx, trainStream, onStep)
		}
		line.done()
		sum.Images += res.Images
		sum.Seconds += res.Seconds
		if err != nil {
			if o.checkpoint != "" && ctx.Err() != nil {
				if serr := tr.SaveCheckpoint(o.checkpoint); serr == nil {
					fmt.Fprintf(stderr, "saved %s at epoch %d step %d\n", o.checkpoint, tr.Epoch+1, tr.Step)
				}
			}
			return err
		}
		if o.checkpoint != "" {
			if err := tr.SaveCheckpoint(o.checkpoint); err != nil {
				return err
			}
		}
		var m train.Metrics
		if testSet != nil {
			m, err = train.Evaluate(ctx, b, net, testSet, o.batch)
		} else {
			m, err = train.EvaluateStream(ctx, b, net, testStream, 0)
		}
		if err != nil {
			return err
		}
		es := epochSummary{Epoch: epoch, TrainLoss: res.Loss, TrainAcc: res.Accuracy, TestLoss: m.Loss, TestAccuracy: m.Top1,
			TestTop5: m.Top5, Images: res.Images, Seconds: res.Seconds, ImagesPerSec: float64(res.Images) / max(res.Seconds, 1e-9)}
		sum.PerEpoch = append(sum.PerEpoch, es)
		sum.TestAccuracy, sum.TestTop5, sum.TestLoss = m.Top1, m.Top5, m.Loss
		if !o.json {
			fmt.Fprintf(stdout, "epoch %d/%d: train loss %.4f acc %.2f%%, test loss %.4f acc %.2f%% top-5 %.2f%%, %d images in %.1f s (%.1f images/s)\n",
				epoch, o.epochs, res.Loss, 100*res.Accuracy, m.Loss, 100*m.Top1, 100*m.Top5, res.Images, res.Seconds, es.ImagesPerSec)
		}
	}
	sum.WallSeconds = time.Since(wall).Seconds()
	if sum.Seconds > 0 {
		sum.ImagesPerSec = float64(sum.Images) / sum.Seconds
	}
	if o.json {
		return writeJSON(stdout, sum)
	}
	fmt.Fprintf(stdout, "trained %s on %s (%d threads, batch %d): %d images in %.1f s, %.1f images/s; test accuracy %.2f%%\n",
		o.model, b.Name(), b.Threads(), o.batch, sum.Images, sum.Seconds, sum.ImagesPerSec, 100*sum.TestAccuracy)
	return nil
}

func joinLines(s []string) string {
	out := s[0]
	for _, l := range s[1:] {
		out += "; " + l
	}
	return out
}

// trainLine draws the progress bar with the running loss appended. The
// progress.Bar only counts (it is given no writer); this line draws it,
// on a terminal only, from its own goroutine, stopped by done.
type trainLine struct {
	bar  *progress.Bar
	out  io.Writer
	loss atomic.Uint64 // float64 bits of the smoothed loss
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func newTrainLine(out io.Writer, label string, total int64) *trainLine {
	l := &trainLine{bar: progress.New(nil, label, total, "images"), out: out, stop: make(chan struct{})}
	if progress.IsTerminal(out) {
		l.wg.Add(1)
		go l.loop()
	}
	return l
}

func (l *trainLine) step(loss float64, images int) {
	old := l.lossValue()
	if l.bar.Items() > 0 {
		loss = 0.9*old + 0.1*loss
	}
	l.loss.Store(math.Float64bits(loss))
	l.bar.Add(int64(images), 0)
}

func (l *trainLine) lossValue() float64 { return math.Float64frombits(l.loss.Load()) }

func (l *trainLine) loop() {
	defer l.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			fmt.Fprintf(l.out, "\r\033[K%s  loss %.4f\n", l.bar.Line(), l.lossValue())
			return
		case <-t.C:
			fmt.Fprintf(l.out, "\r\033[K%s  loss %.4f", l.bar.Line(), l.lossValue())
		}
	}
}

func (l *trainLine) done() {
	l.once.Do(func() {
		close(l.stop)
		l.wg.Wait()
		l.bar.Done()
	})
}
