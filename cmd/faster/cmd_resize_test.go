package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
)

func resizeTree(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	img := imgcodec.NewImage(300, 200, 3)
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	var b bytes.Buffer
	if err := imgcodec.EncodeJPEG(&b, img, 90); err != nil {
		t.Fatal(err)
	}
	img.Release()
	for name, data := range map[string][]byte{
		"train/cat/1.JPEG": b.Bytes(), "val/dog/2.jpg": b.Bytes(),
		"train/cat/bad.jpg": []byte("nope"), "notes.txt": []byte("n"),
	} {
		p := filepath.Join(src, name)
		os.MkdirAll(filepath.Dir(p), 0o777)
		if err := os.WriteFile(p, data, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

func TestResizeCommandJSON(t *testing.T) {
	src := resizeTree(t)
	dst := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	err := runResize(context.Background(), resizeOptions{src: src, dst: dst, maxSize: 64, quality: 90, nonImages: "copy", json: true}, &stdout, &stderr)
	var fe *failError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a failError for the bad file", err)
	}
	var res struct {
		Resized, Copied, Skipped, Failed int
		OtherCopied                      int `json:"other_copied"`
		Failures                         []struct{ Path, Reason string }
		ImagesPerSec                     float64 `json:"images_per_sec"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if res.Resized != 2 || res.Failed != 1 || res.OtherCopied != 1 || len(res.Failures) != 1 || res.Failures[0].Path != "train/cat/bad.jpg" || res.ImagesPerSec <= 0 {
		t.Errorf("summary %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dst, "val/dog/2.jpg")); err != nil {
		t.Error(err)
	}
	if code := exitCode(context.Background(), err, &stderr); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
}

func TestResizeCommandText(t *testing.T) {
	src := resizeTree(t)
	os.Remove(filepath.Join(src, "train/cat/bad.jpg"))
	dst := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"resize", "--src", src, "--dst", dst, "--max-size", "64", "--non-images", "skip", "--workers", "2"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "2 resized, 0 copied, 0 skipped (up to date), 0 failed") || !strings.Contains(stdout.String(), "images/s") {
		t.Errorf("output: %s", stdout.String())
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"resize", "--src", src, "--dst", dst, "--max-size", "64"}, &stdout, &stderr); code != 0 {
		t.Fatalf("rerun exit %d", code)
	}
	if !strings.Contains(stdout.String(), "0 resized, 0 copied, 2 skipped") {
		t.Errorf("rerun output: %s", stdout.String())
	}
}

func TestResizeCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"resize", "--dst", "x", "--max-size", "5"},
		{"resize", "--src", "a", "--dst", "b"},
		{"resize", "--src", "a", "--dst", "b", "--max-size", "5", "--quality", "0"},
		{"resize", "--src", "a", "--dst", "b", "--max-size", "5", "--non-images", "maybe"},
		{"resize", "--src", "a", "--dst", "b", "--max-size", "5", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"resize", "--src", "/nonexistent/x", "--dst", t.TempDir(), "--max-size", "5"}, &stdout, &stderr); code != 1 {
		t.Errorf("missing source: exit %d, want 1", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := run(ctx, []string{"resize", "--src", resizeTree(t), "--dst", t.TempDir(), "--max-size", "5"}, &stdout, &stderr); code != 130 {
		t.Errorf("cancelled: exit %d, want 130", code)
	}
}
