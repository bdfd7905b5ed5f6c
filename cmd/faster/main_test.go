package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	pngenc "image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/faster-training/faster/tfrecord"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// writeIDX writes a tiny IDX dataset (train and test) under a directory
// whose name says fashion, so the Fashion-MNIST class names apply.
func writeIDX(t *testing.T, n int) string {
	dir := filepath.Join(t.TempDir(), "fashion-tiny")
	os.MkdirAll(dir, 0o755)
	for _, prefix := range []string{"train", "t10k"} {
		img := []byte{0, 0, 8, 3, 0, 0, 0, byte(n), 0, 0, 0, 4, 0, 0, 0, 4}
		lab := []byte{0, 0, 8, 1, 0, 0, 0, byte(n)}
		for i := range n {
			for j := range 16 {
				img = append(img, byte(i*16+j))
			}
			lab = append(lab, byte(i%10))
		}
		os.WriteFile(filepath.Join(dir, prefix+"-images-idx3-ubyte"), img, 0o644)
		os.WriteFile(filepath.Join(dir, prefix+"-labels-idx1-ubyte"), lab, 0o644)
	}
	return dir
}

func TestPackVerifyInspectCLI(t *testing.T) {
	src := writeIDX(t, 30)
	dst := filepath.Join(t.TempDir(), "shards")
	code, out, errs := runCLI(t, "pack", src, dst, "--shards", "3", "--json")
	if code != 0 {
		t.Fatalf("pack exit %d: %s", code, errs)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("pack --json: %v\n%s", err, out)
	}
	for _, k := range []string{"records", "shards", "bytes", "skipped", "seconds"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("pack --json lacks %q", k)
		}
	}
	if sum["records"].(float64) != 30 || sum["shards"].(float64) != 3 || sum["source_kind"] != "idx" {
		t.Fatalf("pack summary %v", sum)
	}
	if code, _, errs := runCLI(t, "pack", src, dst, "--split", "test", "--shards", "2"); code != 0 {
		t.Fatalf("pack test split: %s", errs)
	}
	code, out, _ = runCLI(t, "verify", dst)
	if code != 0 || !strings.HasPrefix(out, "OK: 5 shards, 60 records") {
		t.Fatalf("verify exit %d: %s", code, out)
	}
	code, out, _ = runCLI(t, "inspect", "--json", filepath.Join(dst, "train-00001-of-00003.tfrecord"))
	var ins struct {
		Records int64 `json:"records"`
		Files   []struct {
			First []struct {
				Label    int64  `json:"label"`
				Class    string `json:"class"`
				Filename string `json:"filename"`
			} `json:"first"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &ins); code != 0 || err != nil {
		t.Fatalf("inspect: %d %v\n%s", code, err, out)
	}
	if f := ins.Files[0].First[0]; ins.Records != 10 || f.Filename != "train/00010.png" || f.Label != 0 || f.Class != "T-shirt/top" {
		t.Fatalf("inspect: %+v", ins)
	}
	code, out, _ = runCLI(t, "inspect", dst)
	if code != 0 || !strings.Contains(out, "image/class/label") {
		t.Fatalf("inspect text: %s", out)
	}

	// Flip one byte: verify exits 1 and names the shard and an offset at or
	// before the flipped byte.
	shardPath := filepath.Join(dst, "train-00001-of-00003.tfrecord")
	data, _ := os.ReadFile(shardPath)
	pos := len(data) / 2
	data[pos] ^= 1
	os.WriteFile(shardPath, data, 0o644)
	code, out, errs = runCLI(t, "verify", dst)
	m := regexp.MustCompile(`BAD (\S+): offset (\d+): `).FindStringSubmatch(out)
	if code != 1 || m == nil || m[1] != shardPath {
		t.Fatalf("verify after flip: exit %d\n%s%s", code, out, errs)
	}
	if off, _ := strconv.Atoi(m[2]); off > pos {
		t.Fatalf("reported offset %d after the flipped byte %d", off, pos)
	}
	code, out, _ = runCLI(t, "verify", "--json", shardPath)
	var rep struct {
		OK       bool `json:"ok"`
		Problems []struct {
			Path   string `json:"path"`
			Offset int64  `json:"offset"`
		} `json:"problems"`
	}
	json.Unmarshal([]byte(out), &rep)
	if code != 1 || rep.OK || len(rep.Problems) == 0 || rep.Problems[0].Path != shardPath {
		t.Fatalf("verify --json after flip: %d %s", code, out)
	}
}

func TestPackImageFolderSkipsAndStrict(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "a"), 0o755)
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	os.WriteFile(filepath.Join(root, "a", "bad.jpg"), []byte("nope"), 0o644)
	var png bytes.Buffer
	pngenc.Encode(&png, image.NewGray(image.Rect(0, 0, 3, 2)))
	os.WriteFile(filepath.Join(root, "b", "ok.png"), png.Bytes(), 0o644)
	code, out, errs := runCLI(t, "pack", root, t.TempDir(), "--json")
	var sum struct {
		Records int64 `json:"records"`
		Skipped int   `json:"skipped"`
		Files   []struct {
			Path string `json:"path"`
		} `json:"skipped_files"`
	}
	if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, errs)
	}
	if sum.Records != 1 || sum.Skipped != 1 || sum.Files[0].Path != "a/bad.jpg" {
		t.Fatalf("summary %+v", sum)
	}
	code, _, errs = runCLI(t, "pack", "--strict", root, t.TempDir())
	if code != 1 || !strings.Contains(errs, "bad.jpg") {
		t.Fatalf("--strict: exit %d, %s", code, errs)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"pack", "onlyone"},
		{"pack", "a", "b", "--nope"},
		{"pack", "a", "b", "--from", "leveldb"},
		{"verify"},
		{"bogus"},
	} {
		code, _, errs := runCLI(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
	code, _, errs := runCLI(t, "verify", "/does/not/exist")
	if code != 1 || !strings.Contains(errs, "/does/not/exist") {
		t.Errorf("missing path: exit %d %s", code, errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := exitCode(ctx, context.Canceled, &bytes.Buffer{}); code != 130 {
		t.Errorf("interrupted: exit %d", code)
	}
}

// A TFRecord file from another writer (framed by hand, not tf.Examples)
// is inspected without error.
func TestInspectForeignFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "foreign.tfrecord")
	var b []byte
	for i := range 3 {
		b = tfrecord.AppendRecord(b, []byte(fmt.Sprintf("raw-%d", i)))
	}
	os.WriteFile(p, b, 0o644)
	code, out, _ := runCLI(t, "inspect", p)
	if code != 0 || !strings.Contains(out, "3 records") || !strings.Contains(out, "3 not tf.train.Example") {
		t.Fatalf("exit %d: %s", code, out)
	}
}
