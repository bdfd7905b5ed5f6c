package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/shard"
	"github.com/faster-training/faster/train"

	"github.com/faster-training/faster/internal/testenv"
)

// journeySize is the journey's dataset: classes, train images per class,
// val images per class. JOURNEY_CLASSES etc. make it bigger (make bench's
// larger journey: FASTER_JOURNEY=large).
func journeySize() (classes, perTrain, perVal int) {
	if os.Getenv("FASTER_JOURNEY") == "large" {
		return 200, 12, 2
	}
	return 100, 3, 1
}

// TestJourney walks a new user's whole path through every room, on an
// ImageNet-shaped dataset of real photographs (bench/imagenet_like.py,
// with the odd files of a real crawl) that nobody tuned on, asserting at
// each step what the user would check:
//
//	faster resize → faster pack (5 shards: 3 and 2 per rank) → faster verify
//	→ faster train --model resnet18 --strategy ddp --nproc 2 on the shards
//	  (100 classes from the data), uninterrupted, --json weights_sha256
//	→ the same run SIGKILLed mid-epoch, resumed from its mid-epoch
//	  checkpoint: the final weights equal the uninterrupted run's bit for bit
//	→ the same shards through faster.Loader in a 2-process torch DDP loop
//	  (gloo): set_epoch changes the order, a fresh loader at epoch 1 equals
//	  epoch 1 of the long-running one, every rank runs the same steps
//	  through BatchNorm, every sample is served once per epoch plus the
//	  reported repeats.
//
// It runs in make test's non-race step (make accuracy): ResNet-18 under the
// race detector or on the pure-Go backend would take minutes.
func TestJourney(t *testing.T) {
	if raceEnabled || !fast(t) {
		t.Skip("ResNet-18 under -race or without oneDNN: run in make accuracy (cgo, no race)")
	}
	needGloo(t)
	for _, p := range []string{testenv.PhotoDir + "/LadyBird.jpg", testenv.Python} {
		if _, err := os.Stat(p); err != nil {
			testenv.Missing(t, "%s missing", p)
		}
	}
	classes, perTrain, perVal := journeySize()
	start := time.Now()
	phase := func(name string) { t.Logf("%-28s done at %5.1f s", name, time.Since(start).Seconds()) }
	defer phase("journey")
	base := t.TempDir()
	raw, small, packed := filepath.Join(base, "raw"), filepath.Join(base, "small"), filepath.Join(base, "packed")

	// 1. The dataset: train with the odd files, val without.
	gen := func(dir string, per, seed int, odd bool) []string {
		args := []string{"../../bench/imagenet_like.py", dir, "--classes", strconv.Itoa(classes), "--per-class", strconv.Itoa(per), "--seed", strconv.Itoa(seed)}
		if odd {
			args = append(args, "--odd")
		}
		out, err := exec.Command(testenv.Python, args...).Output()
		if err != nil {
			t.Fatalf("imagenet_like.py: %v", err)
		}
		return strings.Fields(string(out))
	}
	oddLines := gen(filepath.Join(raw, "train"), perTrain, 1, true)
	gen(filepath.Join(raw, "val"), perVal, 2, false)
	if len(oddLines) != 15 { // 5 lines of "odd KIND PATH"
		t.Fatalf("odd files: %q", oddLines)
	}

	phase("generate")

	// 2. faster resize: every split mirrored, shorter edges capped at 40;
	// the truncated JPEG is the one failure, the others (CMYK, grey, PNG
	// bytes, EXIF) are resized.
	var rs struct {
		Images, Resized, Copied, Failed int
		Failures                        []struct{ Path, Reason string }
	}
	// Exit 1 says a file failed (the truncated one); the summary lists it.
	code, out, errs := runCLI(t, "resize", "--src", raw, "--dst", small, "--max-size", "40", "--json")
	if err := json.Unmarshal([]byte(out), &rs); code != 1 || err != nil {
		t.Fatalf("resize: exit %d (%v), want 1 for the truncated file: %s%s", code, err, out, errs)
	}
	nTrain, nVal := classes*perTrain+5, classes*perVal
	if rs.Images != nTrain+nVal || rs.Resized+rs.Copied+rs.Failed != rs.Images {
		t.Fatalf("resize: %+v, want %d images", rs, nTrain+nVal)
	}
	if rs.Failed != 1 || !strings.Contains(rs.Failures[0].Path, "odd_truncated") {
		t.Errorf("resize failures %+v: want the truncated JPEG alone", rs.Failures)
	}
	for _, p := range []string{"train/n00000000/odd_cmyk.JPEG", "train/n00000001/odd_grey.JPEG", "train/n00000002/odd_png.JPEG", "train/n00000050/n00000050_0.JPEG", "val/n00000099/n00000099_0.JPEG"} {
		b, err := os.ReadFile(filepath.Join(small, p))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := imgcodec.DecodeConfig(b)
		if err != nil || min(cfg.Width, cfg.Height) != 40 {
			t.Errorf("%s: %dx%d (%v): want the shorter edge at 40", p, cfg.Width, cfg.Height, err)
		}
	}

	phase("resize")

	// 3. faster pack: 5 train shards (3 on rank 0, 2 on rank 1: uneven),
	// 2 test shards; the classes come from the folders.
	var ps struct{ Records, Shards, Skipped int }
	runJSON(t, &ps, "pack", filepath.Join(small, "train"), packed, "--split", "train", "--shards", "5", "--json")
	if ps.Records != nTrain-1 || ps.Shards != 5 || ps.Skipped != 0 {
		t.Fatalf("pack train: %+v, want %d records in 5 shards", ps, nTrain-1)
	}
	runJSON(t, &ps, "pack", filepath.Join(small, "val"), packed, "--split", "test", "--shards", "2", "--json")
	if ps.Records != nVal {
		t.Fatalf("pack test: %+v, want %d records", ps, nVal)
	}
	m, err := shard.LoadManifest(packed)
	if err != nil {
		t.Fatal(err)
	}
	if sp := m.Splits["train"]; sp == nil || len(sp.Classes) != classes || len(m.Splits["test"].Classes) != classes {
		t.Fatalf("manifest: splits %v: want train and test with %d classes", m.Splits, classes)
	}

	phase("pack")

	// 4. faster verify: every CRC, index and count.
	if code, out, errs := runCLI(t, "verify", packed); code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
	}

	phase("verify")

	// 5. DDP training on the shards, uninterrupted.
	trainArgs := func(ckpt string) []string {
		return []string{"train", "--data", packed, "--model", "resnet18", "--strategy", "ddp", "--nproc", "2",
			"--resolution", "32", "--batch", "16", "--epochs", "2", "--lr", "0.02", "--seed", "3",
			"--checkpoint", ckpt, "--checkpoint-every", "2", "--json"}
	}
	var full trainJourneySummary
	runJSON(t, &full, trainArgs(filepath.Join(base, "full.ckpt"))...)
	// Steps per rank: the smaller rank's records (the 2-shard rank), whole
	// batches of 8 per rank; both ranks run them.
	if full.Classes != classes || full.WorldSize != 2 || full.WeightsSHA256 == "" || full.Epochs != 2 {
		t.Fatalf("train summary %+v", full)
	}

	phase("train uninterrupted")

	// 6. The same run killed mid-epoch (SIGKILL: no clean-up, no final
	// save), then resumed from its last mid-epoch checkpoint.
	ckpt := filepath.Join(base, "killed.ckpt")
	killMidEpoch(t, ckpt, trainArgs(ckpt))
	var resumed trainJourneySummary
	code, out, errs = runCLI(t, trainArgs(ckpt)...)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &resumed); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(errs, "resuming from") || strings.Contains(errs, "step 0\n") {
		t.Errorf("the resumed run did not start mid-epoch: %s", errs)
	}
	if resumed.WeightsSHA256 != full.WeightsSHA256 {
		t.Errorf("resumed weights %s, uninterrupted %s", resumed.WeightsSHA256, full.WeightsSHA256)
	}

	phase("kill and resume")

	// 7. The PyTorch leg: the same shards through faster.Loader in torch
	// DDP (gloo), two processes.
	journeyTorch(t, packed, classes, nTrain-1)
}

type trainJourneySummary struct {
	Classes       int    `json:"classes"`
	WorldSize     int    `json:"world_size"`
	Epochs        int    `json:"epochs"`
	WeightsSHA256 string `json:"weights_sha256"`
}

// runJSON runs a faster command in-process and decodes its --json output.
func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	code, out, errs := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("faster %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("faster %s: %v: %s", args[0], err, out)
	}
}

// killMidEpoch starts `faster ARGS` as its own process group (the launcher
// and its two ranks), waits until it has written a mid-epoch checkpoint of
// epoch 2, and SIGKILLs the whole group.
func killMidEpoch(t *testing.T, ckpt string, args []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), benchChildEnv+"=1") // the test binary runs faster (TestMain)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(5 * time.Minute) // a hang guard, not a verdict
	for {
		select {
		case err := <-done:
			t.Fatalf("the run ended before it could be killed (%v): %s", err, stderr.String())
		case <-deadline:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Fatalf("no mid-epoch checkpoint of epoch 2 within 5 minutes: %s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if epoch, step, err := train.CheckpointPosition(ckpt); err == nil && epoch == 1 && step > 0 {
			break
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// journeyTorch runs cmd/faster/testdata/journey_ddp.py as two torch DDP
// ranks over faster.Loader and checks what a user of set_epoch and DDP
// relies on.
func journeyTorch(t *testing.T, packed string, classes, records int) {
	t.Helper()
	if out, err := exec.Command(testenv.Python, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		testenv.Missing(t, "torch missing: %s", out)
	}
	bin := filepath.Join(t.TempDir(), "faster")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	root, _ := filepath.Abs("../..")
	const batch = 8
	var outs [2]bytes.Buffer
	var errs [2]bytes.Buffer
	var cmds [2]*exec.Cmd
	for r := range 2 {
		c := exec.Command(testenv.Python, "testdata/journey_ddp.py", packed, "32", strconv.Itoa(batch), strconv.Itoa(classes))
		c.Env = append(os.Environ(), "RANK="+strconv.Itoa(r), "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port,
			"PYTHONPATH="+filepath.Join(root, "python"), "FASTER_BIN="+bin, "OMP_NUM_THREADS=1")
		c.Stdout, c.Stderr = &outs[r], &errs[r]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = c
	}
	timer := time.AfterFunc(5*time.Minute, func() { // a hang guard: DDP must not hang
		for _, c := range cmds {
			c.Process.Kill()
		}
	})
	var failed []string
	for r, c := range cmds {
		if err := c.Wait(); err != nil {
			failed = append(failed, fmt.Sprintf("rank %d: %v", r, err))
		}
	}
	if failed != nil {
		t.Fatalf("%s\nrank 0's stderr:\n%s\nrank 1's stderr:\n%s", strings.Join(failed, "; "), errs[0].String(), errs[1].String())
	}
	timer.Stop()
	var res struct {
		Ranks []struct {
			Len    int `json:"len"`
			Epochs []struct {
				Steps   int      `json:"steps"`
				Keys    []string `json:"keys"`
				Repeats int      `json:"repeats"`
			} `json:"epochs"`
			Fresh1 []string `json:"fresh1"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal(outs[0].Bytes(), &res); err != nil || len(res.Ranks) != 2 {
		t.Fatalf("rank 0's report: %v: %s", err, outs[0].String())
	}
	r0, r1 := res.Ranks[0], res.Ranks[1]
	for e := range 2 {
		a, b := r0.Epochs[e], r1.Epochs[e]
		if a.Steps != b.Steps || a.Steps != r0.Len || r1.Len != r0.Len {
			t.Errorf("epoch %d: steps %d and %d, len() %d and %d: every rank must run the same steps", e, a.Steps, b.Steps, r0.Len, r1.Len)
		}
		all := append(slices.Clone(a.Keys), b.Keys...)
		slices.Sort(all)
		if len(all) != records || len(slices.Compact(slices.Clone(all))) != records {
			t.Errorf("epoch %d: %d keys served (%d distinct) apart from repeats, want each of the %d records once", e, len(all), len(slices.Compact(all)), records)
		}
		// Padding: the shorter rank repeats samples so both serve the
		// same rows; the repeats are reported, never silent.
		if ra, rb := len(a.Keys)+a.Repeats, len(b.Keys)+b.Repeats; ra != rb {
			t.Errorf("epoch %d: rank 0 served %d rows, rank 1 %d", e, ra, rb)
		}
		t.Logf("epoch %d: %d steps per rank, %d + %d repeats", e, a.Steps, a.Repeats, b.Repeats)
	}
	if slices.Equal(r0.Epochs[0].Keys, r0.Epochs[1].Keys) {
		t.Error("set_epoch(1) served epoch 0's order")
	}
	for r, rk := range res.Ranks {
		if !slices.Equal(rk.Fresh1, rk.Epochs[1].Keys) {
			t.Errorf("rank %d: a fresh loader at epoch 1 served another order than the long-running one's epoch 1", r)
		}
	}
}
