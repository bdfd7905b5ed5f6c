package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/faster-training/faster/source"
	"github.com/faster-training/faster/storage/s3test"

	"github.com/faster-training/faster/internal/testenv"
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
	const fm = testenv.FashionMNISTDir
	if _, err := os.Stat(fm); err != nil {
		testenv.Missing(t, "Fashion-MNIST missing")
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

// `faster train --data s3://…` trains on packed shards in a bucket to the
// weights of the same run on the local copy (the manifest and the image
// width read from the bucket).
func TestTrainOnS3Shards(t *testing.T) {
	packed := filepath.Join(t.TempDir(), "packed")
	idx := writeTrainIDX(t, 32)
	for _, split := range []string{"train", "test"} {
		if code, _, errs := runCLI(t, "pack", idx, packed, "--split", split, "--shards", "2"); code != 0 {
			t.Fatalf("pack --split %s: %s", split, errs)
		}
	}
	s3test.SetEnv()
	srv, err := s3test.Start()
	if err != nil {
		testenv.Missing(t, "S3 test server unavailable: %v", err)
	}
	t.Cleanup(srv.Close)
	ctx := context.Background()
	if err := srv.CreateBucket(ctx, s3test.Bucket); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(packed)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(packed, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Put(ctx, s3test.Bucket, "p/"+e.Name(), b); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	run := func(data, ckpt string) {
		t.Helper()
		code, _, errs := runCLI(t, "train", "--data", data, "--batch", "8", "--epochs", "1", "--backend", "reference",
			"--filters", "4,8", "--threads", "1", "--checkpoint", ckpt)
		if code != 0 {
			t.Fatalf("--data %s: exit %d: %s", data, code, errs)
		}
	}
	local, remote := filepath.Join(tmp, "local.ckpt"), filepath.Join(tmp, "s3.ckpt")
	run(packed, local)
	run(srv.RootURL("p"), remote)
	sameWeightsIn(t, 3, local, remote, "tensor %d differs between the shards in S3 and their local copy")
}
