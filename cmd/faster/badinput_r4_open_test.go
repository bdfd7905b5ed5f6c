package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/shard"
)

// The rows of docs/badinput.md about what a set of shards' names promise
// (a split, one format, all N of -of-N, a task pack merged) and the
// facts kept about them (the counts file), issue 41 items 2, 3 and 7.
func init() {
	badFixtures["wds-split-unknown"] = func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 2)
		dir := filepath.Join(t.TempDir(), "wds")
		for _, split := range []string{"train", "val"} {
			if code, _, errs := runCLI(t, "pack", root, dir, "--shards", "2", "--format", "wds", "--split", split); code != 0 {
				t.Fatalf("pack: %s", errs)
			}
		}
		os.Remove(filepath.Join(dir, shard.ManifestName))
		return badFixture{data: dir, needle: `split "test"`, loadArgs: []string{"--split", "test"}}
	}
	badFixtures["two-formats"] = func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 2)
		tmp := t.TempDir()
		dir := filepath.Join(tmp, "mixed")
		os.Mkdir(dir, 0o755)
		for _, format := range []string{"tfrecord", "wds"} {
			out := filepath.Join(tmp, format)
			if code, _, errs := runCLI(t, "pack", root, out, "--shards", "2", "--format", format); code != 0 {
				t.Fatalf("pack: %s", errs)
			}
			i := map[string]int{"tfrecord": 0, "wds": 1}[format]
			name := shard.FormatName(format, "train", i, 2)
			for _, n := range []string{name, shard.IndexName(name)} {
				b, _ := os.ReadFile(filepath.Join(out, n))
				os.WriteFile(filepath.Join(dir, n), b, 0o644)
			}
		}
		return badFixture{data: dir, needle: "two formats"}
	}
	badFixtures["shards-missing"] = func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 5)
		dir := filepath.Join(t.TempDir(), "shards")
		if code, _, errs := runCLI(t, "pack", root, dir, "--shards", "10"); code != 0 {
			t.Fatalf("pack: %s", errs)
		}
		os.Remove(filepath.Join(dir, shard.ManifestName))
		for i := 4; i < 10; i++ {
			os.Remove(filepath.Join(dir, shard.Name("train", i, 10)))
			os.Remove(filepath.Join(dir, shard.IndexName(shard.Name("train", i, 10))))
		}
		return badFixture{data: dir, needle: "train-00004-of-00010"}
	}
	badFixtures["task-unmerged"] = func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 4)
		dir := filepath.Join(t.TempDir(), "shards")
		if code, _, errs := runCLI(t, "pack", root, dir, "--shards", "4", "--task", "0/2"); code != 0 {
			t.Fatalf("pack: %s", errs)
		}
		return badFixture{data: dir, needle: "not merged: run faster pack --merge"}
	}
	badFixtures["counts-forged"] = func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 5)
		dir := filepath.Join(t.TempDir(), "shards")
		if code, _, errs := runCLI(t, "pack", root, dir, "--shards", "2"); code != 0 {
			t.Fatalf("pack: %s", errs)
		}
		os.Remove(filepath.Join(dir, shard.ManifestName))
		for i := range 2 {
			os.Remove(filepath.Join(dir, shard.IndexName(shard.Name("train", i, 2))))
		}
		if code, _, errs := runCLI(t, "bench", "load", dir, "--transform", "none", "--batch", "2"); code != 0 { // writes the counts file
			t.Fatalf("bench load: %s", errs)
		}
		forgeCount(t, filepath.Join(dir, shard.CountsName), shard.Name("train", 1, 2), -2)
		return badFixture{data: dir, needle: shard.CountsName, loadArgs: []string{"--no-shuffle", "--transform", "eval"}}
	}
	badFixtures["shards-empty"] = func(t *testing.T) badFixture {
		dir := filepath.Join(t.TempDir(), "shards")
		os.Mkdir(dir, 0o755)
		for i := range 2 {
			os.WriteFile(filepath.Join(dir, shard.Name("train", i, 2)), nil, 0o644)
		}
		return badFixture{data: dir, needle: "no records"}
	}
	badFixtures["targz-all-bad"] = func(t *testing.T) badFixture {
		p := filepath.Join(t.TempDir(), "s.tar.gz")
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		tw := tar.NewWriter(zw)
		for i := range 3 {
			for _, m := range []struct{ ext, data string }{{"jpg", "not an image"}, {"cls", "0"}} {
				tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("s%02d.%s", i, m.ext), Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg})
				tw.Write([]byte(m.data))
			}
		}
		tw.Close()
		zw.Close()
		os.WriteFile(p, b.Bytes(), 0o644)
		return badFixture{data: p, needle: "s.tar.gz"}
	}
}

// forgeCount adds delta to shard name's record count in the counts file
// at p, keeping every other field (the size, modification time and stamp
// that make the entry hold).
func forgeCount(t *testing.T, p, name string, delta int64) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	e := m["shards"].(map[string]any)[name].(map[string]any)
	n, _ := e["records"].(json.Number).Int64()
	e["records"] = n + delta
	b, _ = json.Marshal(m)
	os.WriteFile(p, b, 0o644)
}

// --dump-keys writes one line per sample whatever the keys hold: a key
// with a newline, a carriage return or another control character, or one
// that starts with a double quote, is written Go-quoted (strconv.Quote),
// so that the lines are the samples (issue 41 item 10: before, a file
// named "a\nb.jpg" was two lines); plain keys are written as they are.
func TestDumpKeysEscaped(t *testing.T) {
	root := writeFolder(t, 2, 2)
	src, _ := filepath.Glob(filepath.Join(root, "*", "*"))
	odd := []string{"a\nb.jpg", "\"q.jpg", "c\rd.jpg", "tab\tx.jpg"}
	for i, name := range odd {
		b, _ := os.ReadFile(src[i%len(src)])
		if err := os.WriteFile(filepath.Join(filepath.Dir(src[0]), name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keys := filepath.Join(t.TempDir(), "keys.txt")
	if code, _, errs := runCLI(t, "bench", "load", root, "--transform", "none", "--batch", "3", "--no-shuffle", "--dump-keys", keys); code != 0 {
		t.Fatal(errs)
	}
	b, _ := os.ReadFile(keys)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != len(src)+len(odd) {
		t.Fatalf("%d lines for %d samples: %q", len(lines), len(src)+len(odd), lines)
	}
	got := map[string]bool{}
	for _, l := range lines {
		if strings.HasPrefix(l, `"`) {
			k, err := strconv.Unquote(l)
			if err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			l = k
		}
		got[l] = true
	}
	for _, name := range odd {
		if k := filepath.Base(filepath.Dir(src[0])) + "/" + name; !got[k] {
			t.Fatalf("key %q not among the lines %q", k, lines)
		}
	}
	for _, p := range src {
		if k := filepath.Base(filepath.Dir(p)) + "/" + filepath.Base(p); !got[k] {
			t.Fatalf("plain key %q not written as it is: %q", k, lines)
		}
	}
}
