//go:build linux

package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/source"

	"github.com/faster-training/faster/internal/testenv"
)

var python = testenv.Python

// pyCase is one configuration the Python tests run, with what the Go
// loader makes of it.
type pyCase struct {
	Name       string   `json:"name"`
	Data       string   `json:"data,omitempty"` // when not the ImageFolder
	Transform  string   `json:"transform"`
	Layout     string   `json:"layout"`
	Resolution int      `json:"resolution"`
	Batch      int      `json:"batch"`
	Seed       uint64   `json:"seed"`
	Epoch      int      `json:"epoch"`
	Before     []int    `json:"before"` // epochs the same Loader ran first
	Rank       int      `json:"rank"`
	World      int      `json:"world"`
	Drop       bool     `json:"drop"`
	Digests    []string `json:"digests"`
	Keys       []string `json:"keys"`
}

// TestPython runs the Python client's tests (python/tests, unittest)
// against a `faster` binary built here, with the batches the Go loader
// makes for the same options as the expectation.
func TestPython(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := os.Stat(python); err != nil {
		testenv.Missing(t, "no %s", python)
	}
	if out, err := exec.Command(python, "-c", "import numpy").CombinedOutput(); err != nil {
		testenv.Missing(t, "%s has no numpy (python3-numpy): %s", python, out)
	}
	tmp := t.TempDir()
	bin := testenv.FasterBinary(t)
	data := makeTree(t, 11) // 33 images: odd, so 2 ranks differ by one
	shards := packTree(t, data, 4)
	cases := []pyCase{
		{Name: "train-f32", Transform: "train", Layout: "f32-chw", Resolution: 32, Batch: 5, Seed: 7, Epoch: 0, World: 1},
		{Name: "train-f32-epoch1", Transform: "train", Layout: "f32-chw", Resolution: 32, Batch: 5, Seed: 7, Epoch: 1, Before: []int{0}, World: 1},
		{Name: "eval-u8", Transform: "eval", Layout: "u8-hwc", Resolution: 20, Batch: 8, Seed: 0, Epoch: 0, World: 1},
		{Name: "rank0", Transform: "train", Layout: "f32-chw", Resolution: 16, Batch: 4, Seed: 5, Epoch: 2, Rank: 0, World: 2},
		{Name: "rank1", Transform: "train", Layout: "f32-chw", Resolution: 16, Batch: 4, Seed: 5, Epoch: 2, Rank: 1, World: 2},
		{Name: "rank1-drop", Transform: "train", Layout: "u8-hwc", Resolution: 16, Batch: 4, Seed: 5, Epoch: 0, Rank: 1, World: 2, Drop: true},
		// Packed shards, streamed (files, interleave, buffer shuffle):
		// epoch 2 of a loader that ran epochs 0 and 1 first, and epoch 1.
		{Name: "shards-epoch2", Data: shards, Transform: "train", Layout: "u8-hwc", Resolution: 16, Batch: 4, Seed: 9, Epoch: 2, Before: []int{0, 1}, Rank: 1, World: 2},
		{Name: "shards-epoch1", Data: shards, Transform: "train", Layout: "u8-hwc", Resolution: 16, Batch: 4, Seed: 9, Epoch: 1, Before: []int{0}, Rank: 1, World: 2},
	}
	for i := range cases {
		c := &cases[i]
		lo := loader.Options{Transform: loader.Transform(c.Transform), Layout: loader.Layout(c.Layout),
			Resolution: c.Resolution, Batch: c.Batch, Seed: c.Seed, NumShards: c.World, ShardIdx: c.Rank, Drop: c.Drop}
		path := data
		if c.Data != "" {
			path = c.Data
		}
		c.Digests, c.Keys = loaderDigests(t, path, lo, c.Before, c.Epoch)
	}
	// Every kind of data, for the resume tests: ImageFolder, TFRecord
	// shards (streamed, or indexed with global shuffle), LMDB (with cgo),
	// WebDataset tars.
	wds := t.TempDir()
	src, err := source.OpenImageFolder(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shard.Pack(context.Background(), src, data, wds, shard.PackOptions{Shards: 3, Format: shard.FormatWDS}); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{"imagefolder": data, "shards": shards, "wds": wds, "lmdb": lmdbOf(t, data)}
	expect := filepath.Join(tmp, "expect.json")
	js, _ := json.Marshal(map[string]any{"data": data, "cases": cases, "kinds": kinds})
	if err := os.WriteFile(expect, js, 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-m", "unittest", "discover", "-s", filepath.Join(root, "python", "tests"), "-v"}
	if k := os.Getenv("FASTER_PY_K"); k != "" {
		args = append(args, "-k", k) // a developer's selection: FASTER_PY_K=stats go test ./serve -run TestPython
	}
	cmd := exec.Command(python, args...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "python"), "FASTER_BIN="+bin,
		"FASTER_TEST_EXPECT="+expect, "FASTER_JPEG_BACKEND="+imgcodec.Backend, "PYTHONDONTWRITEBYTECODE=1", "OMP_NUM_THREADS=1")
	cmd.Dir = tmp
	// The output, and with FASTER_PY_LOG also that file as it comes (a run
	// killed by a timeout still leaves what it did: scripts/h200.sh).
	var buf bytes.Buffer
	var w io.Writer = &buf
	if p := os.Getenv("FASTER_PY_LOG"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w = io.MultiWriter(&buf, f)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	out := buf.Bytes()
	if err != nil {
		t.Fatalf("python tests failed: %v\n%s", err, out)
	}
	s := string(out)
	t.Logf("%s", s[max(0, len(s)-3000):])
	if strings.Contains(s, "skipped") && testenv.Required() {
		t.Fatalf("python tests skipped under FASTER_REQUIRE_DATA=1:\n%s", s)
	}
}
