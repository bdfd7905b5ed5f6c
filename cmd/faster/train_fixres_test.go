package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/loader"
)

// imageDigests hashes every image of epoch e of s (at most max batches),
// sorted: the multiset of the images a stream yields.
func imageDigests(t *testing.T, s *loaderStream, e, max int) []string {
	t.Helper()
	c, h, w := s.Shape()
	n := c * h * w
	var out []string
	k := 0
	for b, err := range s.Epoch(context.Background(), e, 0) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Y {
			hs := sha256.New()
			var buf []byte
			for _, v := range b.X[i*n : (i+1)*n] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			}
			hs.Write(buf)
			out = append(out, string(hs.Sum(nil)))
		}
		if k++; k == max {
			break
		}
	}
	slices.Sort(out)
	return out
}

// The recalibration batches are the training images under the eval
// recipe at the test resolution (not the train recipe's crops), whole
// batches, shuffled.
func TestFixResCalibrationImages(t *testing.T) {
	root := writeFolder(t, 3, 8)
	base := loader.Options{Batch: 4, Seed: 1, NumShards: 1}
	cs, err := openCalibration(root, 24, base)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.l.Close()
	eo := base
	eo.Transform, eo.Resolution = loader.Eval, 24
	el, err := loader.Open(root, eo)
	if err != nil {
		t.Fatal(err)
	}
	defer el.Close()
	ev := &loaderStream{l: el, res: 24, full: 24}
	if c, h, w := cs.Shape(); c != 3 || h != 24 || w != 24 {
		t.Fatalf("calibration images %d×%d×%d, want 3×24×24", c, h, w)
	}
	got, want := imageDigests(t, cs, 0, 0), imageDigests(t, ev, 0, 0)
	if !slices.Equal(got, want) {
		t.Fatalf("the calibration epoch's %d images are not the eval recipe's %d training images", len(got), len(want))
	}
	if len(imageDigests(t, cs, 0, 2)) != 8 {
		t.Error("two calibration batches are not 8 images")
	}
}

// --fixres-bn recalibrates after training and reports the test figures
// before and after, on an ImageFolder trained at a lower resolution and
// on IDX data; a negative count is a usage error.
func TestTrainFixResCLI(t *testing.T) {
	train, test := writeFolder(t, 3, 8), writeFolder(t, 3, 4)
	code, out, errs := runCLI(t, "train", "--data", train, "--test-data", test, "--model", "resnet18", "--filters", "2,2,2,2",
		"--resolution", "32", "--resolution-schedule", "16", "--batch", "4", "--lr", "0.05", "--threads", "1", "--fixres-bn", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var s struct {
		TestAccuracy float64 `json:"test_accuracy"`
		Resolutions  []int   `json:"resolution_schedule"`
		FixRes       *struct {
			Resolution, Layers, Batches, Images int
			TestAccuracyBefore                  *float64 `json:"test_accuracy_before"`
			TestLossBefore                      *float64 `json:"test_loss_before"`
		} `json:"fixres_bn"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if f := s.FixRes; f == nil || f.Resolution != 32 || f.Layers != 20 || f.Batches != 2 || f.Images != 8 || f.TestAccuracyBefore == nil || f.TestLossBefore == nil {
		t.Errorf("fixres_bn %+v: want 2 batches of 4 at 32×32 through ResNet-18's 20 BatchNorms, and the test figures before: %s", s.FixRes, out)
	}
	if !slices.Equal(s.Resolutions, []int{16}) {
		t.Errorf("resolution_schedule %v, want [16]", s.Resolutions)
	}

	idx := writeTrainIDX(t, 64)
	code, out, errs = runCLI(t, "train", "--data", idx, "--limit", "32", "--test-limit", "16", "--batch", "8", "--filters", "2,4",
		"--resolution-schedule", "20", "--threads", "1", "--fixres-bn", "1")
	if code != 0 {
		t.Fatalf("IDX: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "BatchNorm statistics recomputed at 28×28 from 1 batches (8 images") {
		t.Errorf("IDX output: %s", out)
	}
	if code, _, errs := runCLI(t, "train", "--data", idx, "--fixres-bn", "-1"); code != 2 || !strings.Contains(errs, "--fixres-bn") {
		t.Errorf("--fixres-bn -1: exit %d, %s; want a usage error (2)", code, errs)
	}
}
