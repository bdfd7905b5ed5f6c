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
	"time"

	"github.com/faster-training/faster/pipeline"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"
)

// makeTree writes an ImageFolder of small JPEGs (3 classes) and packs it
// into shards; it returns both paths.
func makeTree(t testing.TB, perClass int) (folder, shards string) {
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
	if _, err := shard.Pack(context.Background(), src, folder, shards, shard.PackOptions{Shards: 5}); err != nil {
		t.Fatal(err)
	}
	return folder, shards
}

type epoch struct {
	keys   []string
	labels []int
	rows   [][]byte
	nb     int
}

func runEpoch(t testing.TB, l *Loader, e int) epoch {
	var out epoch
	for b, err := range l.IterEpoch(context.Background(), e) {
		if err != nil {
			t.Fatal(err)
		}
		out.nb++
		for i := range b.Valid {
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
			l, err := Open(path, Options{Transform: tr, Resolution: 16, Batch: 4, NoShuffle: true, Layout: U8HWC, Seed: 9})
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

func TestRanksDisjointCompleteEqualBatches(t *testing.T) {
	folder, shards := makeTree(t, 7) // 21 samples, 5 shards
	for v, path := range []string{folder, shards, shards} {
		global := v == 2
		for world := 1; world <= 6; world++ {
			var all []string
			nb := -1
			for rank := range world {
				l, err := Open(path, Options{Transform: None, Batch: 2, NumShards: world, ShardIdx: rank, Seed: 5, GlobalShuffle: global})
				if err != nil {
					t.Fatal(err)
				}
				e := runEpoch(t, l, 0)
				if nb >= 0 && e.nb != nb {
					t.Fatalf("%s world %d: rank %d has %d batches, rank 0 %d", path, world, rank, e.nb, nb)
				}
				nb = e.nb
				all = append(all, e.keys...)
			}
			slices.Sort(all)
			if len(all) != 21 || len(slices.Compact(all)) != 21 {
				t.Fatalf("%s world %d: ranks served %d samples (want 21 distinct)", path, world, len(all))
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
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var last error
		n := 0
		for b, err := range l.Iter(ctx) {
			if err != nil {
				last = err
				break
			}
			b.Release()
			if n++; n == 2 {
				cancel()
			}
		}
		if !errors.Is(last, context.Canceled) {
			t.Fatalf("%s: cancelled epoch ended with %v", path, last)
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > base {
		t.Fatalf("%d goroutines left (baseline %d)", g, base)
	}
	// A corrupt image fails the epoch, naming the sample.
	os.WriteFile(filepath.Join(folder, "bee", "001.jpg"), []byte("\xff\xd8\xffgarbage"), 0o644)
	l, _ := Open(folder, Options{Resolution: 16, Batch: 3, NoShuffle: true})
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
