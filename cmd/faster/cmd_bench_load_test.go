package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/storage/s3test"
)

func writeFolder(t *testing.T, classes, per int) string { return testenv.WriteFolder(t, classes, per) }

func TestBenchLoadCLI(t *testing.T) {
	root := writeFolder(t, 3, 8)
	shards := filepath.Join(t.TempDir(), "shards")
	if code, _, errs := runCLI(t, "pack", root, shards, "--shards", "4"); code != 0 {
		t.Fatal(errs)
	}
	keys := filepath.Join(t.TempDir(), "keys.txt")
	code, out, errs := runCLI(t, "bench", "load", root, "--batch", "5", "--resolution", "32", "--seed", "3", "--dump-keys", keys, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Images       int64   `json:"images"`
		ImagesPerSec float64 `json:"images_per_sec"`
		CPUSeconds   float64 `json:"cpu_seconds"`
		CPUPer1000   float64 `json:"cpu_seconds_per_1000_images"`
		MBPerSec     float64 `json:"mb_per_sec"`
		Bottleneck   string  `json:"bottleneck"`
		SampleDigest string  `json:"sample_digest"`
		Kind         string  `json:"kind"`
		Stages       []struct {
			Name string `json:"name"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Images != 24 || r.ImagesPerSec <= 0 || r.MBPerSec <= 0 || r.Kind != "imagefolder" || len(r.Stages) < 4 ||
		(r.Bottleneck != "decode" && r.Bottleneck != "io" && r.Bottleneck != "consumer") {
		t.Fatalf("result %+v", r)
	}
	// Decoding 24 images takes CPU time; the price per 1,000 is its share.
	if r.CPUSeconds <= 0 || math.Abs(r.CPUPer1000-r.CPUSeconds/24*1000) > 1e-9*r.CPUPer1000 {
		t.Fatalf("cpu %v s, %v s per 1,000 images (24 images)", r.CPUSeconds, r.CPUPer1000)
	}
	dumped, _ := os.ReadFile(keys)
	lines := strings.Split(strings.TrimSpace(string(dumped)), "\n")
	if len(lines) != 24 || !strings.HasPrefix(lines[0], "c") {
		t.Fatalf("dump-keys wrote %d lines: %q", len(lines), lines[:min(3, len(lines))])
	}
	// Same seed, same digest; another seed, another order.
	_, out2, _ := runCLI(t, "bench", "load", root, "--batch", "5", "--resolution", "32", "--seed", "3", "--json")
	_, out3, _ := runCLI(t, "bench", "load", root, "--batch", "5", "--resolution", "32", "--seed", "4", "--json")
	var r2, r3 struct {
		SampleDigest string `json:"sample_digest"`
	}
	json.Unmarshal([]byte(out2), &r2)
	json.Unmarshal([]byte(out3), &r3)
	if r2.SampleDigest != r.SampleDigest || r3.SampleDigest == r.SampleDigest {
		t.Fatalf("digests: %s %s %s", r.SampleDigest, r2.SampleDigest, r3.SampleDigest)
	}
	// A slow consumer is named as the bottleneck.
	code, out, _ = runCLI(t, "bench", "load", shards, "--batch", "4", "--resolution", "16", "--consumer-rate", "200", "--json")
	var rc struct {
		Bottleneck string `json:"bottleneck"`
		Images     int64  `json:"images"`
	}
	json.Unmarshal([]byte(out), &rc)
	if code != 0 || rc.Bottleneck != "consumer" || rc.Images != 24 {
		t.Fatalf("consumer-rate run: exit %d %s", code, out)
	}
	// Text table with several worker counts, and a plot.
	plot := filepath.Join(t.TempDir(), "load.png")
	code, out, _ = runCLI(t, "bench", "load", shards, "--batch", "6", "--resolution", "16", "--workers", "1,2", "--plot", plot, "--steps", "2")
	if code != 0 || strings.Count(out, "| shards") != 2 {
		t.Fatalf("table: %s", out)
	}
	if b, err := os.ReadFile(plot); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("plot: %v", err)
	}
	if code, _, _ := runCLI(t, "bench", "load", root, "--workers", "x"); code != 2 {
		t.Fatalf("bad --workers: exit %d", code)
	}
}

// --cache-dir on a dataset in S3: the second run reads every shard from the
// cache (no fetch), and both serve the samples of the local shards.
func TestBenchLoadCacheCLI(t *testing.T) {
	root := writeFolder(t, 3, 6)
	shards := filepath.Join(t.TempDir(), "shards")
	if code, _, errs := runCLI(t, "pack", root, shards, "--shards", "3"); code != 0 {
		t.Fatal(errs)
	}
	s3test.SetEnv()
	srv, err := s3test.Start()
	if err != nil {
		testenv.Missing(t, "S3 test server unavailable: %v", err)
	}
	t.Cleanup(srv.Close)
	if err := srv.CreateBucket(context.Background(), s3test.Bucket); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(shards)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(shards, e.Name()))
		if err := srv.Put(context.Background(), s3test.Bucket, "cli/"+e.Name(), b); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		Images       int64  `json:"images"`
		SampleDigest string `json:"sample_digest"`
		Cache        *struct {
			Hits, Fetches int64
		} `json:"cache"`
	}
	run := func(data string, extra ...string) result {
		t.Helper()
		args := append([]string{"bench", "load", data, "--batch", "4", "--resolution", "24", "--seed", "2", "--epochs", "2", "--json"}, extra...)
		code, out, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return r
	}
	local := run(shards)
	cache := t.TempDir()
	first := run(srv.RootURL("cli"), "--cache-dir", cache, "--cache-size", "64M")
	second := run(srv.RootURL("cli"), "--cache-dir", cache, "--cache-size", "64M")
	if first.SampleDigest != local.SampleDigest || second.SampleDigest != local.SampleDigest || local.Images != 36 {
		t.Fatalf("digests: local %s (%d images), first %s, second %s", local.SampleDigest, local.Images, first.SampleDigest, second.SampleDigest)
	}
	if first.Cache == nil || first.Cache.Fetches != 6 || second.Cache == nil || second.Cache.Fetches != 0 || second.Cache.Hits < 6 {
		t.Fatalf("cache: first %+v, second %+v; want 6 fetches (3 shards, 3 indexes), then none and a hit per shard and epoch", first.Cache, second.Cache)
	}
	if code, _, _ := runCLI(t, "bench", "load", shards, "--cache-size", "lots"); code != 2 {
		t.Fatalf("--cache-size lots: exit %d, want 2 (usage)", code)
	}
}

// --profile reports the four phases per sample, in the table and in --json.
func TestBenchLoadProfile(t *testing.T) {
	root := writeFolder(t, 2, 4)
	code, out, errs := runCLI(t, "bench", "load", root, "--transform", "train", "--resolution", "32", "--batch", "4", "--workers", "1", "--profile", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	var r loadResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Profile == nil || len(r.Profile.Phases) != 4 || r.Profile.MicrosPerItem <= 0 || r.Profile.Clock == "" {
		t.Fatalf("profile %+v", r.Profile)
	}
	code, out, errs = runCLI(t, "bench", "load", root, "--transform", "eval", "--resolution", "32", "--batch", "4", "--profile")
	if code != 0 || !strings.Contains(out, "crop/resize") || !strings.Contains(out, "images/s per core") {
		t.Fatalf("exit %d, table:\n%s\n%s", code, out, errs)
	}
}
