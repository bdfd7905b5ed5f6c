package fit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/train"
)

func writeFolder(t *testing.T, classes, per int) string { return testenv.WriteFolder(t, classes, per) }

// packUnequal packs an ImageFolder of 27 JPEGs (3 classes) into nshards
// train shards and a test split, and returns the packed directory.
func packUnequal(t *testing.T, nshards int) string {
	t.Helper()
	folder := writeFolder(t, 3, 9)
	src, err := source.OpenImageFolder(folder)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "packed")
	for split, n := range map[string]int{"train": nshards, "test": 2} {
		if _, err := shard.Pack(context.Background(), src, folder, out, shard.PackOptions{Split: split, Shards: n}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// streamDigests runs epoch e of a training stream from batch skip on and
// returns one digest per batch (pixels and labels).
// openValid validates cfg and opens its data as rank 0 of 1, closed when
// the test ends.
func openValid(t *testing.T, cfg *Config) *Data {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := OpenData(context.Background(), cfg, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func streamDigests(t *testing.T, s *loaderStream, e, skip int) []string {
	t.Helper()
	var out []string
	for b, err := range s.Epoch(context.Background(), e, skip) {
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		for _, v := range b.X {
			binary.Write(h, binary.LittleEndian, math.Float32bits(v))
		}
		fmt.Fprint(h, b.Y)
		out = append(out, fmt.Sprintf("%x", h.Sum(nil))[:16])
	}
	return out
}

// `faster train --checkpoint` resumes a stream on packed shards (files,
// interleave, shuffle buffer: no index) by opening a fresh loader at the
// checkpoint's epoch and skipping the steps already trained: that must
// serve exactly the uninterrupted run's remaining batches, on every rank.
func TestStreamResumeServesTheRemainingBatches(t *testing.T) {
	packed := packUnequal(t, 3)
	for rank := range 2 {
		long, _, err := openStreams(context.Background(), packed, "", 16, loader.Options{Batch: 3, Seed: 11, ShardIdx: rank, NumShards: 2}, nil, false, 1, gpuDecode{})
		if err != nil {
			t.Fatal(err)
		}
		defer long.l.Close()
		var epochs [][]string
		for e := range 3 {
			d := streamDigests(t, long, e, 0)
			if len(d) != long.Steps() {
				t.Fatalf("rank %d epoch %d: %d batches, Steps() %d", rank, e, len(d), long.Steps())
			}
			epochs = append(epochs, d)
		}
		if slices.Equal(epochs[1], epochs[2]) {
			t.Fatalf("rank %d: epochs 1 and 2 serve the same batches", rank)
		}
		for _, e := range []int{1, 2} {
			for _, skip := range []int{0, 1, 2} {
				fresh, _, err := openStreams(context.Background(), packed, "", 16, loader.Options{Batch: 3, Seed: 11, ShardIdx: rank, NumShards: 2}, nil, false, 1, gpuDecode{})
				if err != nil {
					t.Fatal(err)
				}
				got := streamDigests(t, fresh, e, skip)
				fresh.l.Close()
				if !slices.Equal(got, epochs[e][skip:]) {
					t.Fatalf("rank %d: resumed at epoch %d step %d serves\n%v\nthe uninterrupted run\n%v", rank, e, skip, got, epochs[e][skip:])
				}
			}
		}
	}
}

// Data-parallel training on shards whose ranks hold unequal record counts
// (3 shards on 2 ranks: 18 and 9 records; 7 shards on 3 ranks) runs every
// epoch to its end on every rank: the trainer takes the loader's
// StepsPerEpoch, the same on all ranks, instead of this rank's own count.
func TestStreamDDPUnequalShards(t *testing.T) {
	for _, c := range []struct{ shards, world int }{{3, 2}, {7, 3}} {
		packed := packUnequal(t, c.shards)
		comms := collective.NewLocal(c.world)
		errs := make([]error, c.world)
		steps := make([]int, c.world)
		var wg sync.WaitGroup
		for r := range c.world {
			wg.Go(func() {
				defer func() {
					if errs[r] != nil {
						comms[r].Close() // the other ranks fail instead of waiting
					}
				}()
				s, _, err := openStreams(context.Background(), packed, "", 16, loader.Options{Batch: 2, Seed: 3, ShardIdx: r, NumShards: c.world}, nil, false, 1, gpuDecode{})
				if err != nil {
					errs[r] = err
					return
				}
				defer s.l.Close()
				steps[r] = s.Steps()
				b, err := train.Open("reference", train.BackendOptions{Threads: 1})
				if err != nil {
					errs[r] = err
					return
				}
				defer b.Close()
				net, err := train.NewThinNet(b, train.ThinNetConfig{InChannels: 3, Classes: 3, Filters: []int{4}, Blocks: []int{1}}, 1)
				if err != nil {
					errs[r] = err
					return
				}
				defer net.Close()
				tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.01), 2*c.world, 3)
				defer tr.Close()
				if errs[r] = tr.Distribute(comms[r], 1<<20); errs[r] != nil {
					return
				}
				for range 2 {
					if _, err := tr.TrainStream(context.Background(), s, nil); err != nil {
						errs[r] = fmt.Errorf("rank %d epoch %d: %w", r, tr.Epoch+1, err)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, cm := range comms {
			cm.Close()
		}
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("%d shards on %d ranks: %v", c.shards, c.world, err)
		}
		for r := range steps {
			if steps[r] != steps[0] || steps[r] < 1 {
				t.Fatalf("%d shards on %d ranks: steps per epoch %v", c.shards, c.world, steps)
			}
		}
	}
}

// A run on packed shards (streamed: no index is used) stopped in its
// second epoch, checkpointed, and resumed with a fresh model, trainer and
// loader ends at the uninterrupted run's weights bit for bit: the fresh
// loader serves epoch 1's order and the resume skips exactly the steps
// trained. (Before the epoch was an input of the pipeline, the fresh
// loader served epoch 0's order again.)
func TestStreamCheckpointResumeSameWeights(t *testing.T) {
	packed := packUnequal(t, 3)
	newRun := func(seed uint64) (*train.Trainer, *loaderStream, func()) {
		s, _, err := openStreams(context.Background(), packed, "", 16, loader.Options{Batch: 3, Seed: 5, ShardIdx: 0, NumShards: 1}, nil, false, 1, gpuDecode{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := train.Open("reference", train.BackendOptions{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		net, err := train.NewThinNet(b, train.ThinNetConfig{InChannels: 3, Classes: 3, Filters: []int{4}, Blocks: []int{1}}, seed)
		if err != nil {
			t.Fatal(err)
		}
		tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9, WeightDecay: 1e-3}, train.Constant(0.05), 3, 5)
		return tr, s, func() { tr.Close(); net.Close(); b.Close(); s.l.Close() }
	}
	weights := func(tr *train.Trainer) [][]float32 {
		var w [][]float32
		for _, p := range append(tr.Net.Params(), tr.Net.Buffers()...) {
			w = append(w, slices.Clone(p.Value))
		}
		return w
	}
	ctx := context.Background()
	straight, s, done := newRun(1)
	defer done()
	for range 2 {
		if _, err := straight.TrainStream(ctx, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	ckpt := filepath.Join(t.TempDir(), "ckpt")
	first, s1, done1 := newRun(1)
	defer done1()
	if _, err := first.TrainStream(ctx, s1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := first.TrainStream(ctx, s1, func(r train.StepResult) error {
		if r.Step == 3 {
			return train.ErrStop // "killed" after step 3 of epoch 2
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := first.SaveCheckpoint(ckpt); err != nil {
		t.Fatal(err)
	}
	resumed, s2, done2 := newRun(99) // other initial weights: all come from the file
	defer done2()
	if err := resumed.LoadCheckpoint(ckpt); err != nil {
		t.Fatal(err)
	}
	if resumed.Epoch != 1 || resumed.Step != 3 {
		t.Fatalf("resumed at epoch %d step %d, want 1, 3", resumed.Epoch, resumed.Step)
	}
	if _, err := resumed.TrainStream(ctx, s2, nil); err != nil {
		t.Fatal(err)
	}
	want, got := weights(straight), weights(resumed)
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("tensor %d differs from the uninterrupted run's after the resume", i)
		}
	}
}

// imageDigests hashes every image of epoch e of s (at most max batches),
// sorted: the multiset of the images a stream yields.
func imageDigests(t *testing.T, s *loaderStream, e, max int) []string {
	t.Helper()
	c, h, w := s.Shape()
	n := c * h * w
	var out []string
	k := 0
	for b, err := range s.Epoch(context.Background(), e, 0) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Y {
			hs := sha256.New()
			var buf []byte
			for _, v := range b.X[i*n : (i+1)*n] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			}
			hs.Write(buf)
			out = append(out, string(hs.Sum(nil)))
		}
		if k++; k == max {
			break
		}
	}
	slices.Sort(out)
	return out
}

// The recalibration batches are the training images under the eval
// recipe at the test resolution (not the train recipe's crops), whole
// batches, shuffled.
func TestFixResCalibrationImages(t *testing.T) {
	root := writeFolder(t, 3, 8)
	base := loader.Options{Batch: 4, Seed: 1, NumShards: 1}
	cs, err := openCalibration(context.Background(), root, 24, base)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.l.Close()
	eo := base
	eo.Transform, eo.Resolution = loader.Eval, 24
	el, err := loader.Open(root, eo)
	if err != nil {
		t.Fatal(err)
	}
	defer el.Close()
	ev := &loaderStream{l: el, res: 24, full: 24}
	if c, h, w := cs.Shape(); c != 3 || h != 24 || w != 24 {
		t.Fatalf("calibration images %d×%d×%d, want 3×24×24", c, h, w)
	}
	got, want := imageDigests(t, cs, 0, 0), imageDigests(t, ev, 0, 0)
	if !slices.Equal(got, want) {
		t.Fatalf("the calibration epoch's %d images are not the eval recipe's %d training images", len(got), len(want))
	}
	if len(imageDigests(t, cs, 0, 2)) != 8 {
		t.Error("two calibration batches are not 8 images")
	}
}

// MNIST is normalised with MNIST's statistics, Fashion-MNIST with its own.
func TestTrainIDXStatistics(t *testing.T) {
	fashion := testenv.WriteIDX(t, 8) // named fashion-toy
	digits := filepath.Join(t.TempDir(), "mnist")
	if err := os.Rename(fashion, digits); err != nil {
		t.Fatal(err)
	}
	d, names, _, err := loadImages(digits, "train", 0, loader.BadDataPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Mean != 0.1307 || d.Std != 0.3081 || len(names) != 10 {
		t.Errorf("MNIST: mean %g std %g, %d classes; want 0.1307, 0.3081, 10", d.Mean, d.Std, len(names))
	}
	d, names, _, err = loadImages(testenv.WriteIDX(t, 8), "train", 0, loader.BadDataPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Mean != 0.2860 || d.Std != 0.3530 || names[0] != "T-shirt/top" {
		t.Errorf("Fashion-MNIST: mean %g std %g, classes %v; want 0.2860, 0.3530", d.Mean, d.Std, names)
	}
}

// A packed dataset at a URL has its manifest fetched once before the
// first step, however many pipelines open it (the train and test splits,
// FixRes's calibration) and the width is learned from it (before: four
// fetches, five with FixRes).
func TestOpenDataReadsTheManifestOnce(t *testing.T) {
	packed := packUnequal(t, 2)
	var manifests atomic.Int64
	files := http.FileServer(http.Dir(packed))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if path.Base(r.URL.Path) == shard.ManifestName {
			manifests.Add(1)
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Data.Path, cfg.Batch, cfg.Eval.FixResBN = srv.URL, 3, 1
	d := openValid(t, &cfg)
	if d.train.full != 48 || d.calib == nil || d.test.Len() != 27 {
		t.Fatalf("width %d, calibration %v, %d test images; want 48 (the packed width), one, 27", d.train.full, d.calib != nil, d.test.Len())
	}
	if n := manifests.Load(); n != 1 {
		t.Errorf("the manifest was fetched %d times, want once", n)
	}
}

// Under progressive resizing the model is built for the first epoch's
// side (as `faster train` built it before fit), and the memory check
// takes the largest side of the run.
func TestOpenDataProgressiveSides(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Data.Path, cfg.Data.Resolution, cfg.Data.Progressive, cfg.Epochs, cfg.Batch = packUnequal(t, 2), 40, true, 3, 3
	d := openValid(t, &cfg)
	sched := ProgressiveSchedule(40, 3)
	if _, side, _, _, _ := d.sizes(); side != sched[0] {
		t.Errorf("the model's side %d, want the first epoch's %d (schedule %v)", side, sched[0], sched)
	}
	p, err := cfg.plan(d, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.side != 40 || !slices.Equal(p.resSched, sched) {
		t.Errorf("plan: largest side %d, schedule %v; want 40 and %v", p.side, p.resSched, sched)
	}
}
