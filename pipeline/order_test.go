package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestShuffleSemantics(t *testing.T) {
	// Size 1 keeps the order.
	if got := mustCollect(t, Shuffle(FromSlice(ints(30)), 1, 5)); !equal(got, ints(30)) {
		t.Fatalf("size 1: %v", got)
	}
	// With a buffer of size b, output k is one of inputs 0 … k+b-1.
	for _, b := range []int{2, 7, 64} {
		got := mustCollect(t, Shuffle(FromSlice(ints(200)), b, 9))
		if !sameSet(got, ints(200)) {
			t.Fatalf("size %d: not a permutation", b)
		}
		for k, x := range got {
			if x > k+b-1 {
				t.Fatalf("size %d: output %d is input %d, beyond the buffer", b, k, x)
			}
		}
	}
}

func TestShuffleSeeds(t *testing.T) {
	mk := func(seed uint64) *ShuffleDataset[int] { return Shuffle(FromSlice(ints(100)), 32, seed) }
	a, b := mk(1), mk(1)
	a0, a1 := collectEpoch(t, a, 0), collectEpoch(t, a, 1)
	b0, b1 := collectEpoch(t, b, 0), collectEpoch(t, b, 1)
	if !equal(a0, b0) || !equal(a1, b1) {
		t.Fatal("same seed, different orders")
	}
	if equal(a0, a1) {
		t.Fatal("epochs 0 and 1 have the same order")
	}
	if equal(a0, mustCollect(t, mk(2))) {
		t.Fatal("different seeds, same order")
	}
	if equal(a0, ints(100)) {
		t.Fatal("not shuffled")
	}
}

func TestIndexedGlobalShuffle(t *testing.T) {
	d := Indices(100).Shuffle(3)
	e0, e1 := collectEpoch(t, d, 0), collectEpoch(t, d, 1)
	if !sameSet(e0, ints(100)) || !sameSet(e1, ints(100)) {
		t.Fatal("not a permutation")
	}
	if equal(e0, e1) || equal(e0, ints(100)) {
		t.Fatal("not reshuffled")
	}
	// A fresh dataset with the same seed repeats the epochs' orders.
	d2 := Indices(100).Shuffle(3)
	if !equal(collectEpoch(t, d2, 1), e1) || !equal(collectEpoch(t, d2, 0), e0) {
		t.Fatal("same seed, different order")
	}
	// Different seed.
	if equal(mustCollect(t, Indices(100).Shuffle(4)), e0) {
		t.Fatal("different seed, same order")
	}
	// Unshuffled epochs are the same.
	u := Indices(10)
	first, second := collectEpoch(t, u, 0), collectEpoch(t, u, 1)
	if !equal(first, ints(10)) || !equal(second, ints(10)) {
		t.Fatal("unshuffled order")
	}
}

type squares int

func (s squares) Len() int { return int(s) }
func (s squares) Get(i int) (int, error) {
	if i >= int(s) {
		return 0, errBoom
	}
	return i * i, nil
}

func TestIndexedShardDisjointComplete(t *testing.T) {
	for _, n := range []int{0, 1, 5, 17, 64} {
		for w := 1; w <= 8; w++ {
			for epoch := range 2 {
				var all []int
				sizes := map[int]bool{}
				for i := range w {
					d := FromIndexed[int](squares(n)).Shuffle(11).Shard(w, i)
					got := collectEpoch(t, d, int64(epoch))
					if len(got) != d.Len() {
						t.Fatalf("n %d w %d rank %d: Len %d, got %d", n, w, i, d.Len(), len(got))
					}
					sizes[len(got)] = true
					all = append(all, got...)
				}
				want := make([]int, n)
				for i := range want {
					want[i] = i * i
				}
				if !sameSet(all, want) {
					t.Fatalf("n %d w %d: ranks' union is not the dataset", n, w)
				}
				if len(sizes) > 2 {
					t.Fatalf("n %d w %d: rank sizes %v", n, w, sizes)
				}
			}
		}
	}
}

// writeShards writes files shard-000 … with records "f<file>r<rec>", counts[i]
// records in file i, and returns their paths.
func writeShards(t *testing.T, counts []int) []string {
	dir := t.TempDir()
	var paths []string
	for i, c := range counts {
		var b strings.Builder
		for r := range c {
			fmt.Fprintf(&b, "f%dr%d\n", i, r)
		}
		p := filepath.Join(dir, fmt.Sprintf("shard-%03d.txt", i))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// lines is a file reader: the records of a text file, one per line.
func lines(path string) Dataset[string] {
	return FromFunc(func(_ context.Context, i int) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		ls := strings.Fields(string(b))
		if i >= len(ls) {
			return "", errEOF
		}
		return ls[i], nil
	})
}

// Shards of n ranks are disjoint and cover everything for every n from 1
// to 8 and file counts above and below n; with at least n files the ranks
// read different files.
func TestFileShardAuto(t *testing.T) {
	for _, nfiles := range []int{1, 3, 5, 8, 13} {
		counts := make([]int, nfiles)
		total := 0
		for i := range counts {
			counts[i] = 3 + i%4
			total += counts[i]
		}
		paths := writeShards(t, counts)
		var want []string
		for i, c := range counts {
			for r := range c {
				want = append(want, fmt.Sprintf("f%dr%d", i, r))
			}
		}
		for n := 1; n <= 8; n++ {
			var all []string
			var fileCounts, recCounts []int
			for i := range n {
				files, err := Glob(filepath.Join(filepath.Dir(paths[0]), "shard-*.txt"))
				if err != nil {
					t.Fatal(err)
				}
				files.Shard(n, i).Shuffle(7)
				_, _, byRecord := files.RecordShard()
				if byRecord != (nfiles < n) {
					t.Fatalf("%d files, %d ranks: record shard %v", nfiles, n, byRecord)
				}
				d := Interleave(files, lines, 2, 2, 2)
				got := mustCollect(t, d)
				all = append(all, got...)
				fileCounts = append(fileCounts, files.Len())
				recCounts = append(recCounts, len(got))
				if !byRecord {
					// This rank's records come from its files only.
					mine := map[string]bool{}
					for _, f := range mustCollect(t, files) {
						mine[strings.TrimSuffix(filepath.Base(f), ".txt")] = true
					}
					for _, rec := range got {
						fi, _ := strconv.Atoi(rec[1:strings.IndexByte(rec, 'r')])
						if !mine[fmt.Sprintf("shard-%03d", fi)] {
							t.Fatalf("rank %d read %s outside its files", i, rec)
						}
					}
				}
			}
			slices.Sort(all)
			w := slices.Clone(want)
			slices.Sort(w)
			if !slices.Equal(all, w) {
				t.Fatalf("%d files, %d ranks: union of %d records, want %d (disjoint and complete)", nfiles, n, len(all), len(w))
			}
			spread := func(s []int) int { return slices.Max(s) - slices.Min(s) }
			if nfiles >= n && spread(fileCounts) > 1 {
				t.Fatalf("%d files, %d ranks: files per rank %v", nfiles, n, fileCounts)
			}
			if nfiles < n && spread(recCounts) > 1 {
				t.Fatalf("%d files, %d ranks: records per rank %v", nfiles, n, recCounts)
			}
		}
	}
}

func TestFileListShuffle(t *testing.T) {
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprint("f", i)
	}
	f := Files(names...).Shuffle(1)
	e0, e1 := collectEpoch(t, f, 0), collectEpoch(t, f, 1)
	if slices.Equal(e0, e1) || slices.Equal(e0, names) {
		t.Fatal("files not reshuffled per epoch")
	}
	g := Files(names...).Shuffle(1)
	if !slices.Equal(mustCollect(t, g), e0) {
		t.Fatal("same seed, different order")
	}
	// Shard first, then shuffle: a rank keeps the same files every epoch.
	h := Files(names...).Shuffle(1).Shard(3, 2)
	a, b := collectEpoch(t, h, 0), collectEpoch(t, h, 1)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) || len(a) != 6 {
		t.Fatalf("rank's files change between epochs: %v %v", a, b)
	}
	if _, err := Glob(filepath.Join(t.TempDir(), "*.none")); err == nil {
		t.Fatal("Glob with no match: no error")
	}
}

func TestRecordShardThroughMap(t *testing.T) {
	// 1 file, 3 ranks: the record shard is found through a Map.
	paths := writeShards(t, []int{10})
	var all []string
	for i := range 3 {
		files := Map(Files(paths...).Shard(3, i), func(_ context.Context, p string) (string, error) { return p, nil })
		all = append(all, mustCollect(t, Interleave(files, lines, 1, 1, 0))...)
	}
	if len(all) != 10 {
		t.Fatalf("got %d records over 3 ranks, want 10: %v", len(all), all)
	}
}
