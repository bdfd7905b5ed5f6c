package fit

import (
	"bytes"
	"testing"

	"github.com/faster-training/faster/train"
)

// TestSummaryWriteText checks the lines `faster train` prints without
// --json (moved here from cmd/faster, whose train tests run them end to
// end): the summary line per strategy and precision, the target and
// FixRes lines, the tuner's choices, and a run already complete.
func TestSummaryWriteText(t *testing.T) {
	secs := 12.5
	sum := &Summary{Model: "thinnet", Backend: "onednn", Strategy: "dp", Devices: 2, Threads: 4, Batch: 64,
		Precision: "bf16", Images: 1000, Seconds: 2, ImagesPerSec: 500, TestAccuracy: 0.875,
		SecondsToTarget: &secs, StepsToTarget: 40, Curve: []CurvePoint{{Step: 20, TestAccuracy: 0.5}, {Step: 40, TestAccuracy: 0.91}},
		Autotune: []train.TuneChoice{{Op: "conv a", Chosen: "winograd", Cached: true,
			Candidates: []train.TuneCandidate{{Name: "direct", Seconds: 0.002}, {Name: "winograd", Seconds: 0.001}, {Name: "gemm", Err: "no"}}}},
		FixResBN: &FixResSummary{Resolution: 32, BNRecalibration: train.BNRecalibration{Batches: 3, Images: 192, Seconds: 0.25},
			TestAccuracyBefore: 0.8, TestLossBefore: 0.5},
		TestLoss: 0.4}
	cfg := DefaultConfig()
	cfg.Eval.TargetAccuracy = 0.9
	var b bytes.Buffer
	sum.WriteText(&b, cfg)
	want := "reached test accuracy 91.00% (target 90.00%) after 40 steps, 12.5 s of training (evaluation excluded)\n" +
		"BatchNorm statistics recomputed at 32×32 from 3 batches (192 images, 0.2 s): test loss 0.5000 → 0.4000, acc 80.00% → 87.50%\n" +
		"autotune: 1 choices, 1 of them from the tune cache (timed by an earlier run on this machine)\n" +
		"  conv a: winograd  [direct 2.00 ms, winograd 1.00 ms, gemm (unavailable)]\n" +
		"trained thinnet on onednn (dp over 2 devices, 4 threads per device, batch 64, bf16 emulated: this CPU has no bf16/fp16 arithmetic): 1000 images in 2.0 s, 500.0 images/s; test accuracy 87.50%\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	for _, c := range []struct {
		sum  Summary
		want string
	}{
		{Summary{Strategy: "single", Precision: "fp32"}, "single device, 0 threads per device, batch 0, fp32)"},
		{Summary{Strategy: "ddp", WorldSize: 4, Precision: "fp16", NativeAMP: true}, "ddp rank 0 of 4, 0 threads per device, batch 0, fp16 native)"},
	} {
		b.Reset()
		c.sum.WriteText(&b, cfg)
		if !bytes.Contains(b.Bytes(), []byte(c.want)) {
			t.Errorf("%s: want %q in it", b.String(), c.want)
		}
	}
	b.Reset()
	cfg.Checkpoint.Path = "ck.pt"
	(&Summary{AlreadyDone: true, Epochs: 3, TestLoss: 0.25, TestAccuracy: 0.5, TestTop5: 0.75, TestImages: 100}).WriteText(&b, cfg)
	if want := "already trained 3 epoch(s) (ck.pt): test loss 0.2500 acc 50.00% top-5 75.00% on 100 images\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	WriteEpoch(&b, EpochSummary{Epoch: 2, TrainLoss: 1, TrainAcc: 0.5, TestLoss: 0.75, TestAccuracy: 0.6, TestTop5: 0.9, Images: 10, Seconds: 2, ImagesPerSec: 5}, 3)
	if want := "epoch 2/3: train loss 1.0000 acc 50.00%, test loss 0.7500 acc 60.00% top-5 90.00%, 10 images in 2.0 s (5.0 images/s)\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
