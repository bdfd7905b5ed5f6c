package train

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestTuneCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache", "tune.json")
	a, err := OpenTuneCache(path, "cpu A")
	if err != nil || a.Problem != nil {
		t.Fatalf("a missing file: %v, %v", err, a.Problem)
	}
	if _, ok := a.Lookup("conv 1"); ok {
		t.Fatal("an empty cache served a choice")
	}
	ch := TuneChoice{Op: "conv 1", Chosen: "winograd/blocked (x)", Candidates: []TuneCandidate{{Name: "winograd/blocked (x)", Seconds: 0.5}}, Seconds: 2}
	a.Record("conv 1", ch)
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	// Another process on another machine records into the same file.
	b, err := OpenTuneCache(path, "cpu B")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Lookup("conv 1"); ok {
		t.Fatal("machine B was served machine A's choice")
	}
	b.Record("conv 1", TuneChoice{Op: "conv 1", Chosen: "direct/nhwc (y)"})
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	// A later run on A finds its choice; B's is kept beside it.
	a2, err := OpenTuneCache(path, "cpu A")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := a2.Lookup("conv 1"); !ok || got.Chosen != ch.Chosen || got.Seconds != 2 || len(got.Candidates) != 1 {
		t.Fatalf("machine A's choice after B wrote: %+v, %v", got, ok)
	}
	b2, _ := OpenTuneCache(path, "cpu B")
	if got, _ := b2.Lookup("conv 1"); got.Chosen != "direct/nhwc (y)" {
		t.Fatalf("machine B's choice lost: %+v", got)
	}
}

// Writers of one file do not drop each other's entries.
func TestTuneCacheConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := OpenTuneCache(path, "cpu")
			if err != nil {
				t.Error(err)
				return
			}
			c.Record(string(rune('a'+i)), TuneChoice{Chosen: "x"})
			if err := c.Flush(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	c, _ := OpenTuneCache(path, "cpu")
	for i := range 8 {
		if _, ok := c.Lookup(string(rune('a' + i))); !ok {
			t.Errorf("entry %c lost", 'a'+i)
		}
	}
}

// A damaged file is not used (Problem names it) and is replaced at the
// next Flush (a path that is not a regular file: TestTuneCacheNotRegular).
func TestTuneCacheBadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tune.json")
	for _, junk := range []string{"{\"version\": 1, \"machines\": [", "{\"version\": 99}", "\x00\x01"} {
		os.WriteFile(path, []byte(junk), 0o644)
		c, err := OpenTuneCache(path, "cpu")
		if err != nil || c.Problem == nil || !strings.Contains(c.Problem.Error(), path) {
			t.Fatalf("%q: err %v, problem %v", junk, err, c.Problem)
		}
		c.Record("k", TuneChoice{Chosen: "x"})
		if err := c.Flush(); err != nil {
			t.Fatalf("%q: flush: %v", junk, err)
		}
		c2, _ := OpenTuneCache(path, "cpu")
		if _, ok := c2.Lookup("k"); !ok || c2.Problem != nil {
			t.Fatalf("%q: not replaced: %v", junk, c2.Problem)
		}
	}
}
