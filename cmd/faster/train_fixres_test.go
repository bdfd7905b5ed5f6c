package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

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
