package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFolder(t *testing.T, classes, per int) string {
	root := t.TempDir()
	for c := range classes {
		d := filepath.Join(root, fmt.Sprintf("c%d", c))
		os.MkdirAll(d, 0o755)
		for i := range per {
			img := image.NewRGBA(image.Rect(0, 0, 48+i, 40))
			for y := range 40 {
				for x := range 48 + i {
					img.Set(x, y, color.RGBA{uint8(x * 5), uint8(y * c * 9), uint8(i * 20), 255})
				}
			}
			var b bytes.Buffer
			jpeg.Encode(&b, img, nil)
			os.WriteFile(filepath.Join(d, fmt.Sprintf("%02d.jpg", i)), b.Bytes(), 0o644)
		}
	}
	return root
}

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
