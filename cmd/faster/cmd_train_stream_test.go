package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/faster-training/faster/source"
)

// writeIDXSubset writes the first n images of one split of an IDX dataset
// as a new IDX directory (named fashion-… so class names follow).
func writeIDXSubset(t *testing.T, src, dst, prefix string, n int) {
	t.Helper()
	imgs, err := source.ReadIDXFile(filepath.Join(src, prefix+"-images-idx3-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	labs, err := source.ReadIDXFile(filepath.Join(src, prefix+"-labels-idx1-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	hw := imgs.Dims[1] * imgs.Dims[2]
	hdr := func(dims ...int) []byte {
		b := []byte{0, 0, 8, byte(len(dims))}
		for _, d := range dims {
			b = binary.BigEndian.AppendUint32(b, uint32(d))
		}
		return b
	}
	os.WriteFile(filepath.Join(dst, prefix+"-images-idx3-ubyte"), append(hdr(n, imgs.Dims[1], imgs.Dims[2]), imgs.Data[:n*hw]...), 0o644)
	os.WriteFile(filepath.Join(dst, prefix+"-labels-idx1-ubyte"), append(hdr(n), labs.Data[:n]...), 0o644)
}

// `faster train` on packed shards goes through the input pipeline's train
// and eval recipes and learns: real Fashion-MNIST images, packed, one epoch.
func TestTrainOnPackedShards(t *testing.T) {
	const fm = "/usr/share/datasets/fashion-mnist"
	if _, err := os.Stat(fm); err != nil {
		if os.Getenv("FASTER_REQUIRE_DATA") != "" {
			t.Fatal("Fashion-MNIST missing: run scripts/setup.sh")
		}
		t.Skip("Fashion-MNIST missing")
	}
	n, batch, learn := 2048, 32, true
	if raceEnabled || !fast(t) {
		// The race detector and the pure-Go reference backend slow
		// training ten- to a hundredfold: check the wiring only.
		n, batch, learn = 16, 8, false
	}
	sub := filepath.Join(t.TempDir(), "fashion-subset")
	os.MkdirAll(sub, 0o755)
	writeIDXSubset(t, fm, sub, "train", n)
	testN := map[bool]int{true: 500, false: 8}[learn]
	writeIDXSubset(t, fm, sub, "t10k", testN)
	packed := filepath.Join(t.TempDir(), "packed")
	for _, split := range []string{"train", "test"} {
		if code, _, errs := runCLI(t, "pack", sub, packed, "--split", split, "--shards", "4"); code != 0 {
			t.Fatal(errs)
		}
	}
	code, out, errs := runCLI(t, "train", "--data", packed, "--batch", strconv.Itoa(batch), "--lr", "0.01", "--epochs", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum struct {
		TrainImages  int     `json:"train_images"`
		TestImages   int     `json:"test_images"`
		Images       int     `json:"images"`
		TestAccuracy float64 `json:"test_accuracy"`
		ImagesPerSec float64 `json:"images_per_sec"`
		Epochs       int     `json:"epochs"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if sum.TrainImages != n || sum.TestImages != testN || sum.Images != n/batch*batch || sum.ImagesPerSec <= 0 || sum.Epochs != 1 {
		t.Fatalf("summary %+v", sum)
	}
	// Chance is 10%; the train recipe's random crops make one short epoch
	// harder than on raw pixels, but it must learn.
	if learn && sum.TestAccuracy < 0.4 {
		t.Fatalf("test accuracy %.3f after one epoch on %d packed images (want >= 0.40)", sum.TestAccuracy, n)
	}
	t.Logf("%d images: test accuracy %.3f, %.0f images/s", n, sum.TestAccuracy, sum.ImagesPerSec)
}
