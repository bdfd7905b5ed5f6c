package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"

	"github.com/faster-training/faster/internal/testenv"
)

// makeTree writes an ImageFolder of small JPEGs (3 classes) and packs it
// into shards; it returns both paths.
func makeTree(t testing.TB, perClass int) (folder, shards string) {
	return makeTreeShards(t, perClass, 5)
}

// makeTreeShards is makeTree packing into nshards shards.
func makeTreeShards(t testing.TB, perClass, nshards int) (folder, shards string) {
	folder = t.TempDir()
	for c, name := range []string{"ant", "bee", "cat"} {
		os.MkdirAll(filepath.Join(folder, name), 0o755)
		for i := range perClass {
			w, h := 40+i%7*3, 30+c*5+i%3
			img := image.NewRGBA(image.Rect(0, 0, w, h))
			for y := range h {
				for x := range w {
					img.Set(x, y, color.RGBA{uint8(x * 6), uint8(y * 8), uint8(c*80 + i), 255})
				}
			}
			var b bytes.Buffer
			jpeg.Encode(&b, img, &jpeg.Options{Quality: 95})
			os.WriteFile(filepath.Join(folder, name, fmt.Sprintf("%03d.jpg", i)), b.Bytes(), 0o644)
		}
	}
	src, err := source.OpenImageFolder(folder)
	if err != nil {
		t.Fatal(err)
	}
	shards = t.TempDir()
	if _, err := shard.Pack(context.Background(), src, folder, shards, shard.PackOptions{Shards: nshards}); err != nil {
		t.Fatal(err)
	}
	return folder, shards
}

type epoch struct {
	keys    []string // every row served, repeats included
	labels  []int
	rows    [][]byte
	nb      int
	sizes   []int // rows of each batch
	repeats int   // rows that repeat a sample of the epoch
	first   []string
}

func runEpoch(t testing.TB, l *Loader, e int) epoch {
	var out epoch
	for b, err := range l.IterEpoch(context.Background(), e) {
		if err != nil {
			t.Fatal(err)
		}
		out.nb++
		out.sizes = append(out.sizes, b.Valid)
		out.repeats += b.Repeats
		for i := range b.Valid {
			if i < b.Valid-b.Repeats {
				out.first = append(out.first, b.Items[i].Key)
			}
			out.keys = append(out.keys, b.Items[i].Key)
			out.labels = append(out.labels, b.Items[i].Label)
			if b.RowBytes > 0 {
				out.rows = append(out.rows, bytes.Clone(b.Row(i)))
			}
		}
		b.Release()
	}
	return out
}

func TestTrainDeterministicAcrossWorkers(t *testing.T) {
	folder, shards := makeTree(t, 12)
	for _, path := range []string{folder, shards} {
		open := func(workers int, seed uint64) *Loader {
			l, err := Open(path, Options{Resolution: 24, Batch: 5, Workers: workers, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		a, b, c := runEpoch(t, open(1, 3), 0), runEpoch(t, open(3, 3), 0), runEpoch(t, open(2, 4), 0)
		if len(a.keys) != 36 || len(a.rows[0]) != 24*24*3*4 {
			t.Fatalf("%s: %d samples, row %d bytes", path, len(a.keys), len(a.rows[0]))
		}
		if !slices.Equal(a.keys, b.keys) || !slices.EqualFunc(a.rows, b.rows, bytes.Equal) {
			t.Fatalf("%s: 1 and 3 workers give different batches", path)
		}
		if slices.Equal(a.keys, c.keys) {
			t.Fatalf("%s: different seeds give the same order", path)
		}
		classes := []string{"ant", "bee", "cat"}
		for i, k := range a.keys {
			if !strings.HasPrefix(k, classes[a.labels[i]]+"/") {
				t.Fatalf("%s: %s has label %d", path, k, a.labels[i])
			}
		}
		sorted := slices.Sorted(slices.Values(a.keys))
		if len(slices.Compact(sorted)) != 36 {
			t.Fatalf("%s: samples repeated within an epoch", path)
		}
		// The next epoch reshuffles and re-augments.
		l := open(2, 3)
		e0, e1 := runEpoch(t, l, 0), runEpoch(t, l, 1)
		if slices.Equal(e0.keys, e1.keys) {
			t.Fatalf("%s: epochs 0 and 1 in the same order", path)
		}
	}
}

// The same samples read from the ImageFolder and from the packed shards
// decode to the same pixels.
func TestFolderAndShardsAgree(t *testing.T) {
	folder, shards := makeTree(t, 6)
	for _, tr := range []Transform{Eval, Train} {
		byKey := map[string][]byte{}
		for _, path := range []string{folder, shards} {
			l, err := Open(path, Options{Transform: tr, Resolution: 16, Batch: 4, Shuffle: ShuffleOff, Layout: U8HWC, Seed: 9})
			if err != nil {
				t.Fatal(err)
			}
			e := runEpoch(t, l, 0)
			if len(e.keys) != 18 {
				t.Fatalf("%s: %d samples", path, len(e.keys))
			}
			for i, k := range e.keys {
				if prev, ok := byKey[k]; ok && tr == Eval && !bytes.Equal(prev, e.rows[i]) {
					t.Fatalf("%s %s: pixels differ between folder and shards", tr, k)
				}
				byKey[k] = e.rows[i]
			}
		}
	}
}

// Every rank yields StepsPerEpoch batches of the same sizes, never one of
// zero rows, on sources whose ranks hold unequal counts (3 shards of 8, 7,
// 7 records on 2 ranks; 7 shards on 3; 5 shards and the ImageFolder on 1
// to 6 ranks). Without Drop the ranks serve every sample once plus the
// reported repeats; with Drop, whole batches without repeats.
func TestRanksEqualStepsAndBatchSizes(t *testing.T) {
	folder, shards5 := makeTreeShards(t, 7, 5) // 21 samples
	_, shards3 := makeTreeShards(t, 7, 3)
	_, shards7 := makeTreeShards(t, 7, 7)
	type src struct {
		path   string
		global bool
		worlds []int
	}
	for _, sc := range []src{{folder, false, []int{1, 2, 3, 4, 5, 6}}, {shards5, false, []int{1, 2, 3, 4, 5, 6}},
		{shards5, true, []int{2, 4}}, {shards3, false, []int{2}}, {shards7, false, []int{3}}} {
		for _, world := range sc.worlds {
			for _, drop := range []bool{false, true} {
				var all, firsts []string
				var sizes0 []int
				steps0, repeats := -1, 0
				for rank := range world {
					l, err := Open(sc.path, Options{Transform: None, Batch: 2, NumShards: world, ShardIdx: rank, Seed: 5, GlobalShuffle: sc.global, Drop: drop})
					if err != nil {
						t.Fatal(err)
					}
					e := runEpoch(t, l, 1)
					l.Close()
					what := fmt.Sprintf("%s world %d drop %v rank %d", sc.path, world, drop, rank)
					if e.nb != l.StepsPerEpoch() {
						t.Fatalf("%s: %d batches, StepsPerEpoch %d", what, e.nb, l.StepsPerEpoch())
					}
					if rank == 0 {
						steps0, sizes0 = l.StepsPerEpoch(), e.sizes
					} else if l.StepsPerEpoch() != steps0 || !slices.Equal(e.sizes, sizes0) {
						t.Fatalf("%s: steps %d, batch sizes %v; rank 0: %d, %v", what, l.StepsPerEpoch(), e.sizes, steps0, sizes0)
					}
					if slices.Contains(e.sizes, 0) {
						t.Fatalf("%s: a batch of zero rows: %v", what, e.sizes)
					}
					all = append(all, e.keys...)
					firsts = append(firsts, e.first...)
					repeats += e.repeats
				}
				slices.Sort(firsts)
				if len(slices.Compact(slices.Clone(firsts))) != len(firsts) {
					t.Fatalf("%s world %d drop %v: a sample served twice outside the repeats", sc.path, world, drop)
				}
				if !drop && (len(firsts) != 21 || len(all) != 21+repeats) {
					t.Fatalf("%s world %d: %d distinct samples (want 21) and %d rows with %d repeats", sc.path, world, len(firsts), len(all), repeats)
				}
				if drop && repeats != 0 {
					t.Fatalf("%s world %d drop: %d repeats", sc.path, world, repeats)
				}
			}
		}
	}
}

// Global shuffle by index serves every record once per epoch, in an order
// that mixes records across shards, the same for every worker count.
func TestGlobalShuffle(t *testing.T) {
	_, shards := makeTree(t, 8)
	open := func(workers int) *Loader {
		l, err := Open(shards, Options{Resolution: 16, Batch: 4, Seed: 2, Workers: workers, GlobalShuffle: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	a, b := runEpoch(t, open(1), 0), runEpoch(t, open(3), 0)
	if len(a.keys) != 24 || !slices.Equal(a.keys, b.keys) || !slices.EqualFunc(a.rows, b.rows, bytes.Equal) {
		t.Fatalf("global shuffle: %d samples; workers change the result: %v", len(a.keys), !slices.Equal(a.keys, b.keys))
	}
	// Shards hold contiguous runs of the sorted keys; a global permutation
	// puts neighbours from different shards next to each other.
	sorted := slices.Sorted(slices.Values(a.keys))
	if slices.Equal(sorted, a.keys) || len(slices.Compact(slices.Clone(sorted))) != 24 {
		t.Fatal("not a permutation of all records")
	}
	l := open(2)
	if e0, e1 := runEpoch(t, l, 0), runEpoch(t, l, 1); slices.Equal(e0.keys, e1.keys) {
		t.Fatal("global shuffle repeats the order across epochs")
	}
}

func TestResolutionSchedule(t *testing.T) {
	folder, _ := makeTree(t, 3)
	l, err := Open(folder, Options{Schedule: []int{16, 32}, Batch: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for e, res := range []int{16, 32, 32} {
		got := runEpoch(t, l, e)
		if len(got.rows[0]) != res*res*3*4 {
			t.Fatalf("epoch %d: row of %d bytes, want resolution %d", e, len(got.rows[0]), res)
		}
	}
}

func TestEarlyBreakCancelAndErrors(t *testing.T) {
	folder, shards := makeTree(t, 10)
	base := runtime.NumGoroutine()
	for _, path := range []string{folder, shards} {
		l, _ := Open(path, Options{Resolution: 16, Batch: 3, Seed: 1})
		for _, k := range []int{0, 1, 4} {
			n := 0
			for b, err := range l.Iter(context.Background()) {
				if err != nil {
					t.Fatal(err)
				}
				b.Release()
				if n == k {
					break
				}
				n++
			}
		}
		last := testenv.CancelAfter(l.Iter, 2, (*Batch).Release)
		if !errors.Is(last, context.Canceled) {
			t.Fatalf("%s: cancelled epoch ended with %v", path, last)
		}
	}
	testenv.GoroutinesBack(t, base)
	// A corrupt image fails the epoch, naming the sample.
	os.WriteFile(filepath.Join(folder, "bee", "001.jpg"), []byte("\xff\xd8\xffgarbage"), 0o644)
	l, _ := Open(folder, Options{Resolution: 16, Batch: 3, Shuffle: ShuffleOff})
	var err error
	for b, e := range l.Iter(context.Background()) {
		if e != nil {
			err = e
			break
		}
		b.Release()
	}
	if err == nil || !strings.Contains(err.Error(), "bee/001.jpg") {
		t.Fatalf("corrupt sample: %v", err)
	}
}

func TestStatsVerdict(t *testing.T) {
	folder, _ := makeTree(t, 10)
	l, _ := Open(folder, Options{Resolution: 64, Batch: 5, Seed: 1})
	runEpoch(t, l, 0)
	st := l.Stats()
	var names []string
	for _, s := range st.Stages {
		names = append(names, s.Name)
	}
	for _, want := range []string{"read", "decode", "batch"} {
		if !slices.Contains(names, want) {
			t.Fatalf("stages %v lack %q", names, want)
		}
	}
	if st.Verdict.Bottleneck == "" || st.Verdict.Bottleneck == pipeline.BottleneckUnknown {
		t.Fatalf("verdict %+v", st.Verdict)
	}
}

// A fresh loader asked for epoch e serves exactly what epoch e of a
// long-running loader serves — the same samples in the same order with
// the same augmented pixels — on packed shards read as streams (shuffled
// files, interleave, shuffle buffer), on shards by index, and on an
// ImageFolder, on each of two ranks, also across a FixRes change of
// resolution; and the epochs differ.
func TestFreshLoaderEpochEqualsLongRunning(t *testing.T) {
	folder, shards := makeTreeShards(t, 9, 6) // 27 samples
	for _, c := range []struct {
		path   string
		global bool
	}{{shards, false}, {shards, true}, {folder, false}} {
		for rank := range 2 {
			open := func() *Loader {
				l, err := Open(c.path, Options{Schedule: []int{16, 24}, Batch: 4, NumShards: 2, ShardIdx: rank, Seed: 7,
					ShuffleBuffer: 8, GlobalShuffle: c.global})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				return l
			}
			long := open()
			var ran []epoch
			for e := range 4 {
				ran = append(ran, runEpoch(t, long, e))
			}
			for e := range 4 {
				what := fmt.Sprintf("%s global %v rank %d epoch %d", c.path, c.global, rank, e)
				fresh := runEpoch(t, open(), e)
				if !slices.Equal(fresh.keys, ran[e].keys) {
					t.Fatalf("%s: fresh loader serves\n%v\nlong-running one\n%v", what, fresh.keys, ran[e].keys)
				}
				if !slices.EqualFunc(fresh.rows, ran[e].rows, bytes.Equal) {
					t.Fatalf("%s: same samples, different pixels", what)
				}
				if e > 0 && slices.Equal(ran[e].keys, ran[e-1].keys) {
					t.Fatalf("%s: the same order as the epoch before", what)
				}
			}
		}
	}
}

// Shards without .idx indexes take their record counts from the manifest,
// so every rank still knows every shard's count; with neither, the local
// shards are counted.
func TestShardCountsWithoutIndexes(t *testing.T) {
	_, shards := makeTreeShards(t, 7, 3) // 21 samples
	idx, _ := filepath.Glob(filepath.Join(shards, "*.idx"))
	if len(idx) != 3 {
		t.Fatalf("%d indexes", len(idx))
	}
	for _, p := range idx {
		os.Remove(p)
	}
	for rank := range 2 {
		l, err := Open(shards, Options{Transform: None, Batch: 4, NumShards: 2, ShardIdx: rank})
		if err != nil {
			t.Fatal(err)
		}
		// Rank 0 holds shards 0 and 2 (14 records), rank 1 shard 1 (7).
		if l.StepsPerEpoch() != 4 || l.SamplesPerEpoch() != 14 {
			t.Fatalf("rank %d: steps %d, samples %d; want 4 and 14", rank, l.StepsPerEpoch(), l.SamplesPerEpoch())
		}
		if e := runEpoch(t, l, 0); e.nb != 4 || !slices.Equal(e.sizes, []int{4, 4, 4, 2}) {
			t.Fatalf("rank %d: batch sizes %v", rank, e.sizes)
		}
		l.Close()
	}
	// With neither, local shards are counted by their length headers
	// (shard.CountRecords): the counts are known all the same.
	os.Remove(filepath.Join(shards, shard.ManifestName))
	l2, err := Open(filepath.Join(shards, "*.tfrecord"), Options{Transform: None, Batch: 4, NumShards: 2, ShardIdx: 1})
	if err != nil {
		t.Fatalf("two ranks, counted shards: %v", err)
	}
	l2.Close()
	l, err := Open(filepath.Join(shards, "*.tfrecord"), Options{Transform: None, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.StepsPerEpoch() != 6 || len(runEpoch(t, l, 0).keys) != 21 {
		t.Fatalf("one rank, counted shards: steps %d, want 6", l.StepsPerEpoch())
	}
}

// TestTrainAugmentDeterministic: with TrivialAugmentWide and
// RandomErasing in the train recipe, the batches depend on the seed, the
// epoch and the sample only (not the workers; a fresh loader at epoch 1
// gives epoch 1), and differ from the plain recipe's.
func TestTrainAugmentDeterministic(t *testing.T) {
	folder, _ := makeTree(t, 12)
	open := func(workers int, aug bool) *Loader {
		o := Options{Resolution: 24, Batch: 5, Workers: workers, Seed: 3}
		if aug {
			o.Augment = augment.Sequence{&augment.TrivialAugmentWide{}, &augment.ColorJitter{Brightness: augment.JitterRange(0.4, 1)}}
			o.Erasing = &augment.RandomErasing{P: 0.5}
		}
		l, err := Open(folder, o)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := open(1, true)
	a0, a1 := runEpoch(t, l, 0), runEpoch(t, l, 1)
	b1 := runEpoch(t, open(3, true), 1)
	if !slices.Equal(a1.keys, b1.keys) || !slices.EqualFunc(a1.rows, b1.rows, bytes.Equal) {
		t.Fatal("a fresh loader with 3 workers at epoch 1 differs from epoch 1 after epoch 0 with 1 worker")
	}
	plain := runEpoch(t, open(1, false), 0)
	if !slices.Equal(a0.keys, plain.keys) || slices.EqualFunc(a0.rows, plain.rows, bytes.Equal) {
		t.Fatal("augmented epoch: other order, or the same pixels as the plain recipe")
	}
	if _, err := Open(folder, Options{Resolution: 24, Batch: 5, Layout: U8HWC, Erasing: &augment.RandomErasing{P: 1}}); err == nil {
		t.Error("RandomErasing with uint8 output accepted")
	}
}
