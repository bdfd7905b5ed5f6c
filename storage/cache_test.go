package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/faster-training/faster/internal/atomicfile"
)

// cacheRounds reads every fixture through a cache on dir, rounds times in a
// random order, and checks each byte.
func cacheRounds(ctx context.Context, root, dir string, max int64, rounds int, seed uint64) error {
	s, err := Open(ctx, root, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	c, err := OpenCache(dir, max)
	if err != nil {
		return err
	}
	fs := fixtures()
	r := rand.New(rand.NewPCG(seed, 1))
	for range rounds {
		for _, i := range r.Perm(len(fs)) {
			f := fs[i]
			cf, err := c.Open(ctx, s, f.name, Want{Size: int64(len(f.data))})
			if errors.Is(err, ErrNotCached) {
				continue // every other entry in use by this process: read remotely
			}
			if err != nil {
				return err
			}
			got, err := io.ReadAll(cf)
			cf.Close()
			if err != nil {
				return err
			}
			if !bytes.Equal(got, f.data) {
				return fmt.Errorf("%s through the cache: %d bytes, differ from the object's %d", f.name, len(got), len(f.data))
			}
		}
	}
	return nil
}

// TestCacheSharedByProcesses: processes (children of this test, and
// goroutines with caches of their own in this one) share one cache
// directory under a cap small enough that they evict each other's entries
// while reading them: every read is right, and what is left is complete
// entries under the cap, no temporary file.
func TestCacheSharedByProcesses(t *testing.T) {
	if dir := os.Getenv("FASTER_CACHE_CHILD"); dir != "" {
		max, _ := strconv.ParseInt(os.Getenv("FASTER_CACHE_MAX"), 10, 64)
		seed, _ := strconv.ParseUint(os.Getenv("FASTER_CACHE_SEED"), 10, 64)
		if err := cacheRounds(context.Background(), os.Getenv("FASTER_CACHE_ROOT"), dir, max, 4, seed); err != nil {
			t.Fatal(err)
		}
		return
	}
	srv := sharedS3(t)
	root := srv.RootURL("ds")
	dir := t.TempDir()
	var total int64
	for _, f := range fixtures() {
		total += int64(len(f.data))
	}
	max := total - 50<<10 // not all fit: entries are evicted under the readers
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCacheSharedByProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "FASTER_CACHE_CHILD="+dir, "FASTER_CACHE_ROOT="+root,
			"FASTER_CACHE_MAX="+strconv.FormatInt(max, 10), "FASTER_CACHE_SEED="+strconv.Itoa(i))
		wg.Go(func() {
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child %d: %v\n%s", i, err, out)
			}
		})
	}
	for i := range 3 {
		wg.Go(func() {
			if err := cacheRounds(testCtx(t), root, dir, max, 4, uint64(10+i)); err != nil {
				errs <- fmt.Errorf("goroutine %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ents, _ := os.ReadDir(dir)
	var held int64
	for _, e := range ents {
		n := e.Name()
		if atomicfile.IsTemp(n) {
			t.Errorf("temporary file left: %s", n)
		}
		if strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".meta") || strings.HasSuffix(n, ".lock") {
			continue
		}
		fi, _ := e.Info()
		held += fi.Size()
	}
	if held > max {
		t.Errorf("cache holds %d bytes, cap %d", held, max)
	}
	// Whatever is left checks out: a fresh cache serves it without fetching.
	s, err := Open(testCtx(t), root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, _ := OpenCache(dir, max)
	for _, f := range fixtures() {
		cf := c.lookup(c.key(s, f.name), Want{Size: int64(len(f.data))})
		if cf == nil {
			continue
		}
		got, _ := io.ReadAll(cf)
		cf.Close()
		if !bytes.Equal(got, f.data) {
			t.Errorf("%s: the entry left differs from the object", f.name)
		}
	}
}

// An object larger than the cap is not kept; one that does not match the
// manifest's size or digest is an error naming it, and nothing is kept.
func TestCacheCapAndWant(t *testing.T) {
	srv := sharedS3(t)
	ctx := testCtx(t)
	s, err := Open(ctx, srv.RootURL("ds"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := t.TempDir()
	c, err := OpenCache(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(ctx, s, "a.bin", Want{Size: -1}); !errors.Is(err, ErrNotCached) {
		t.Fatalf("3 MB object under a 1 MB cap: %v, want ErrNotCached", err)
	}
	if _, err := c.Open(ctx, s, "dir/b.bin", Want{Size: 5}); err == nil || !strings.Contains(err.Error(), "manifest says 5") || !strings.Contains(err.Error(), "b.bin") {
		t.Fatalf("size mismatch: %v", err)
	}
	if _, err := c.Open(ctx, s, "dir/b.bin", Want{Size: -1, SHA256: strings.Repeat("0", 64)}); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("digest mismatch: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".lock") {
				names = append(names, e.Name())
			}
		}
		if len(names) > 0 {
			t.Fatalf("kept after failures: %v", names)
		}
	}
	f, err := c.Open(ctx, s, "dir/b.bin", Want{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if c.Stats().Fetches.Load() != 2 || c.Stats().Hits.Load() != 1 { // a.bin was fetched, then did not fit
		t.Fatalf("fetches %d hits %d", c.Stats().Fetches.Load(), c.Stats().Hits.Load())
	}
	if _, err := os.Stat(filepath.Join(dir, c.key(s, "dir/b.bin"))); err != nil {
		t.Fatal(err)
	}
}

// Eviction is whole entries, least recently opened first, and keeps the
// cache under its cap; an entry open in this process is not evicted.
func TestCacheLRU(t *testing.T) {
	srv := sharedS3(t)
	ctx := testCtx(t)
	objs := []fixture{{"x", randomBytes(7, 1000)}, {"y", randomBytes(8, 1000)}, {"z", randomBytes(9, 1000)}}
	if err := uploadFixtures(ctx, srv.RootURL("lru"), objs); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, srv.RootURL("lru"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := t.TempDir()
	c, err := OpenCache(dir, 2500) // room for two
	if err != nil {
		t.Fatal(err)
	}
	open := func(name string) *CachedFile {
		t.Helper()
		f, err := c.Open(ctx, s, name, Want{Size: 1000})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return f
	}
	held := func() string {
		var in []string
		for _, o := range objs {
			if _, err := os.Stat(filepath.Join(dir, c.key(s, o.name))); err == nil {
				in = append(in, o.name)
			}
		}
		return strings.Join(in, ",")
	}
	open("x").Close()
	open("y").Close()
	open("x").Close() // x is now more recent than y
	open("z").Close() // evicts y
	if got := held(); got != "x,z" || c.Stats().Evictions.Load() != 1 {
		t.Fatalf("after x y x z: cache holds %s (%d evictions), want x,z", got, c.Stats().Evictions.Load())
	}
	fz := open("z")
	fx := open("x")
	if _, err := c.Open(ctx, s, "y", Want{Size: 1000}); !errors.Is(err, ErrNotCached) {
		t.Fatalf("y with x and z open: %v, want ErrNotCached", err)
	}
	fz.Close()
	open("y").Close() // z closed: z is evicted, x (open) stays
	fx.Close()
	if got := held(); got != "x,y" {
		t.Fatalf("cache holds %s, want x,y", got)
	}
}
