//go:build unix

package train

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A tune cache that is a FIFO, a device or a directory is opened without
// blocking and not used (Problem names it), never an error: the run tunes
// afresh. Its choices are not written over it: Flush says so, once, naming
// the file, and leaves it as it was.
func TestTuneCacheNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.json")
	if err := os.Symlink(filepath.Join(dir, "missing", "x"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", "/dev/null", sub, dangling} {
		before, _ := os.Lstat(path)
		c, err := OpenTuneCache(path, "cpu")
		if err != nil {
			t.Fatalf("%s: %v (a cache is never worth stopping a run for)", path, err)
		}
		if c.Problem == nil || !strings.Contains(c.Problem.Error(), path) {
			t.Fatalf("%s: problem %v, want one naming the file", path, c.Problem)
		}
		c.Record("k", TuneChoice{Chosen: "x"})
		if _, ok := c.Lookup("k"); !ok {
			t.Fatalf("%s: this run's choice is not served to the run", path)
		}
		err = c.Flush()
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("%s: flush: %v, want an error naming the file", path, err)
		}
		if err := c.Flush(); err != nil {
			t.Fatalf("%s: the second flush warned again: %v", path, err)
		}
		after, err := os.Lstat(path)
		if err != nil || after.Mode() != before.Mode() {
			t.Fatalf("%s: replaced (%v, was %v): %v", path, after.Mode(), before.Mode(), err)
		}
	}
}

// Choices are kept in memory as they are recorded and written once, at
// Flush: a run that tunes many convolutions rewrites the file once, not
// once per convolution; a Flush with nothing new writes nothing.
func TestTuneCacheWritesOnFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	c, err := OpenTuneCache(path, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		c.Record(k, TuneChoice{Chosen: k})
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("written at Record %q, before Flush", k)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	st1, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(path)
	if !os.SameFile(st1, st2) {
		t.Fatal("a Flush with nothing new rewrote the file")
	}
	c2, _ := OpenTuneCache(path, "cpu")
	for _, k := range []string{"a", "b", "c"} {
		if ch, ok := c2.Lookup(k); !ok || ch.Chosen != k {
			t.Fatalf("%q not kept: %+v", k, ch)
		}
	}
}

// A cache reached through a symlink is written to the link's target; the
// link stays a link.
func TestTuneCacheThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "real.json"), filepath.Join(dir, "link.json")
	c0, _ := OpenTuneCache(target, "cpu")
	c0.Record("a", TuneChoice{Chosen: "a"})
	if err := c0.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	c, err := OpenTuneCache(link, "cpu")
	if err != nil || c.Problem != nil {
		t.Fatalf("%v, %v", err, c.Problem)
	}
	c.Record("b", TuneChoice{Chosen: "b"})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", st.Mode(), err)
	}
	c2, _ := OpenTuneCache(target, "cpu")
	if _, ok := c2.Lookup("b"); !ok {
		t.Fatal("the choice was not written to the link's target")
	}
}

// Drop forgets a choice found not to hold (its implementation does not
// build here); the next Flush writes the file without it.
func TestTuneCacheDrop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	c, _ := OpenTuneCache(path, "cpu")
	c.Record("a", TuneChoice{Chosen: "a"})
	c.Record("b", TuneChoice{Chosen: "b"})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	c2, _ := OpenTuneCache(path, "cpu")
	c2.Drop("a")
	if _, ok := c2.Lookup("a"); ok {
		t.Fatal("a dropped choice is still served")
	}
	if err := c2.Flush(); err != nil {
		t.Fatal(err)
	}
	c3, _ := OpenTuneCache(path, "cpu")
	if _, ok := c3.Lookup("a"); ok {
		t.Fatal("a dropped choice was written back")
	}
	if _, ok := c3.Lookup("b"); !ok {
		t.Fatal("the other choice was lost")
	}
}

// FuzzTuneCache: any bytes as a tune cache parse or fail without a panic;
// what parses survives a write and a read unchanged.
func FuzzTuneCache(f *testing.F) {
	f.Add([]byte(`{"version":1,"machines":{"cpu":{"k":{"op":"conv","chosen":"a","candidates":[{"name":"a","seconds":0.5}],"seconds":1}}}}`))
	f.Add([]byte(`{"version":1,"machines":{"cpu":null}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"machines":[`))
	f.Add([]byte("\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := parseTuneCache(b)
		if err != nil {
			return
		}
		if tf.Version != TuneCacheVersion {
			t.Fatalf("version %d accepted", tf.Version)
		}
		once, err := json.Marshal(tf)
		if err != nil {
			t.Fatal(err)
		}
		tf2, err := parseTuneCache(once)
		if err != nil {
			t.Fatalf("what was written does not read back: %v\n%s", err, once)
		}
		twice, _ := json.Marshal(tf2)
		if !bytes.Equal(once, twice) {
			t.Fatalf("changed by a write and a read:\n%s\n%s", once, twice)
		}
	})
}
