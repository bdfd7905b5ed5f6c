package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faster-training/faster/collective"
	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/train"
)

// TestMain lets the test binary stand in for faster when `faster train
// --nproc N` or `faster bench train` (run in-process by a test) start
// children from os.Executable, and when a test runs it as the CLI
// (cliEnv: a launcher in a network namespace).
func TestMain(m *testing.M) {
	if os.Getenv(launchEnv) != "" || os.Getenv(benchChildEnv) != "" || os.Getenv(cliEnv) != "" {
		os.Exit(cli(os.Args[1:])) // as main does
	}
	// Autotuning choices go to a file of this run, not the user's cache.
	if _, ok := os.LookupEnv("FASTER_TUNE_CACHE"); !ok {
		dir, err := os.MkdirTemp("", "faster-tune-")
		if err != nil {
			panic(err)
		}
		os.Setenv("FASTER_TUNE_CACHE", filepath.Join(dir, "tune.json"))
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// needGloo skips where the gloo library is not built in (CGO_ENABLED=0).
func needGloo(t *testing.T) {
	t.Helper()
	for _, l := range collective.Libraries() {
		if l == "gloo" {
			return
		}
	}
	t.Skip("gloo needs a cgo build")
}

// sameWeights fails the test unless the checkpoints want and got (of the
// ThinNet with widths 4,8) hold the same tensors bit for bit; format names
// the differing tensor's index first, then args.
func sameWeights(t *testing.T, want, got, format string, args ...any) {
	t.Helper()
	sameWeightsIn(t, 1, want, got, format, args...)
}

// sameWeightsIn is sameWeights for a ThinNet of inChannels input channels
// (3: one trained on packed shards).
func sameWeightsIn(t *testing.T, inChannels int, want, got, format string, args ...any) {
	t.Helper()
	w, g := channelsWeights(t, want, inChannels, 4, 8), channelsWeights(t, got, inChannels, 4, 8)
	for i := range w {
		if !slices.Equal(g[i], w[i]) {
			t.Fatalf(format, append([]any{i}, args...)...)
		}
	}
}

// checkpointWeights loads a checkpoint of a ThinNet (1 channel, 10
// classes, stage widths filters) and returns its parameters and buffers.
func checkpointWeights(t *testing.T, path string, filters ...int) [][]float32 {
	t.Helper()
	return channelsWeights(t, path, 1, filters...)
}

// channelsWeights is checkpointWeights for inChannels input channels.
func channelsWeights(t *testing.T, path string, inChannels int, filters ...int) [][]float32 {
	t.Helper()
	b := train.NewReference(train.BackendOptions{Threads: 1})
	cfg := train.ThinNetConfig{InChannels: inChannels, Classes: 10, Filters: filters}
	for range filters {
		cfg.Blocks = append(cfg.Blocks, 2)
	}
	net, err := train.NewThinNet(b, cfg, 99)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.1), 32, 1)
	defer tr.Close()
	if err := tr.LoadCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	var w [][]float32
	for _, p := range append(net.Params(), net.Buffers()...) {
		w = append(w, p.Value)
	}
	return w
}

// DP over 2 devices and DDP over 2 processes on loopback (Gloo) train the
// same weights as one device on the same global batches with --sync-bn
// (BatchNorm sees the whole batch everywhere); without it they differ. The runs use the reference
// backend, whose arithmetic is the same whatever the batch split (float64
// statistics), and a narrow ThinNet so that it is quick: with oneDNN,
// float32 rounding differences move a few activations across a ReLU's
// kink and four steps of this toy problem amplify them (single-device
// oneDNN and reference runs differ as much); train's own tests check
// oneDNN's data parallelism on a toy network to 2e-4.
func TestTrainStrategiesSameWeights(t *testing.T) {
	needGloo(t)
	dir := writeTrainIDX(t, 256)
	tmp := t.TempDir()
	common := []string{"train", "--data", dir, "--limit", "128", "--test-limit", "64", "--batch", "32", "--epochs", "1",
		"--lr", "0.05", "--weight-decay", "1e-4", "--threads", "1", "--json", "--backend", "reference", "--filters", "4,8"}
	sums := map[string]fit.Summary{}
	weights := map[string][][]float32{}
	for _, s := range [][]string{
		{"single"},
		{"dp", "--devices", "2", "--sync-bn"},
		{"ddp", "--nproc", "2", "--bucket-kb", "1", "--sync-bn"},
		{"dp", "--devices", "2"},
	} {
		name := strings.Join(s, " ")
		ckpt := filepath.Join(tmp, strings.NewReplacer(" ", "_", "=", "_").Replace(name)+".ckpt")
		args := append(append(append([]string{}, common...), "--checkpoint", ckpt, "--strategy"), s...)
		code, out, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", s, code, errs)
		}
		var sum fit.Summary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("%v: %v\n%s", s, err, out)
		}
		if sum.Strategy != s[0] || sum.Images != 128 {
			t.Errorf("%v: summary says strategy %q, %d images", s, sum.Strategy, sum.Images)
		}
		sums[name] = sum
		weights[name] = checkpointWeights(t, ckpt, 4, 8)
	}
	if sums["dp --devices 2 --sync-bn"].Devices != 2 || sums["ddp --nproc 2 --bucket-kb 1 --sync-bn"].WorldSize != 2 ||
		!sums["ddp --nproc 2 --bucket-kb 1 --sync-bn"].SyncBN || sums["dp --devices 2"].SyncBN {
		t.Errorf("summaries: %+v", sums)
	}
	want := weights["single"]
	diff := func(got [][]float32) float64 {
		worst := 0.0
		for i := range want {
			var d, n float64
			for j := range want[i] {
				e := float64(got[i][j] - want[i][j])
				d, n = d+e*e, n+float64(want[i][j])*float64(want[i][j])
			}
			worst = math.Max(worst, math.Sqrt(d/max(n, 1e-12)))
		}
		return worst
	}
	for _, s := range []string{"dp --devices 2 --sync-bn", "ddp --nproc 2 --bucket-kb 1 --sync-bn"} {
		d := diff(weights[s])
		t.Logf("%s vs single: largest per-tensor relative difference %.2g", s, d)
		if d > 1e-5 {
			t.Errorf("%s: weights differ from single-device training by %.3g (relative, per tensor)", s, d)
		}
	}
	// Without SyncBN each device normalises with its own half-batch
	// statistics: the comparison must see that.
	if d := diff(weights["dp --devices 2"]); d < 1e-3 {
		t.Errorf("dp without SyncBN is within %.2g of single-device training: the check above could not fail", d)
	}
	// The loss the ranks report is the global batch's.
	if a, b := sums["single"].PerEpoch[0].TrainLoss, sums["ddp --nproc 2 --bucket-kb 1 --sync-bn"].PerEpoch[0].TrainLoss; math.Abs(a-b) > 1e-5*a {
		t.Errorf("train loss single %.6f, ddp %.6f", a, b)
	}
}

// A rank that dies mid-training makes the other exit with an error naming
// the failed peer within seconds, not hang until the collective timeout:
// the dead rank's connections close, and Gloo's pending call fails on that.
func TestTrainDDPRankDies(t *testing.T) {
	needGloo(t)
	dir := writeTrainIDX(t, 1024)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "r0.ckpt")
	const timeout = 60 * time.Second
	start := func(rank int, stderr *bytes.Buffer) *exec.Cmd {
		c := exec.Command(os.Args[0], "train", "--data", dir, "--limit", "256", "--test-limit", "32", "--batch", "32",
			"--epochs", "1000", "--lr", "0.01", "--threads", "1", "--strategy", "ddp", "--backend", "reference",
			"--filters", "4,8", "--checkpoint", ckpt, "--collective-timeout", timeout.String())
		c.Env = append(os.Environ(), launchEnv+"=1", "RANK="+strconv.Itoa(rank), "WORLD_SIZE=2",
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
		c.Stderr = stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	var err0, err1 bytes.Buffer
	r0 := start(0, &err0)
	r1 := start(1, &err1)
	done := make(chan error, 1)
	go func() { done <- r0.Wait() }()
	// Kill rank 1 once both ranks train: rank 0 has saved the checkpoint of
	// its first epoch, whose steps all-reduced with rank 1 (not after a
	// fixed pause, which a loaded machine may not fill).
	for {
		if _, err := os.Stat(ckpt); err == nil {
			break
		}
		select {
		case err := <-done:
			r1.Process.Kill()
			r1.Wait()
			t.Fatalf("rank 0 ended before the kill: %v\n%s", err, err0.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	killed := time.Now()
	r1.Process.Kill()
	r1.Wait()
	select {
	case err := <-done:
		took := time.Since(killed)
		t.Logf("rank 0 exited %v after the kill: %v", took.Round(time.Millisecond), err)
		msg := err0.String()
		t.Logf("rank 0 stderr: %s", strings.TrimSpace(msg))
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("rank 0: %v, want exit status 1", err)
		}
		if !strings.Contains(msg, "peer") || !strings.Contains(msg, "lost rank 1") {
			t.Errorf("rank 0's error does not name the failed peer: %s", msg)
		}
		// Milliseconds on an idle machine; the bound only has to tell a
		// failure seen on the closed connection from one that waited for
		// the collective timeout, so it leaves room for any load.
		if took > timeout/3 {
			t.Errorf("rank 0 failed %v after the kill: that is the timeout's doing (%v), not the closed connection's", took, timeout)
		}
	case <-time.After(timeout + 30*time.Second): // a hang guard
		r0.Process.Kill()
		t.Fatalf("rank 0 still running %v after rank 1 died\n%s", timeout+30*time.Second, err0.String())
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// The launcher reports a rank that fails (here: every rank rejects the
// data) with the rank's error, and exits 1.
func TestTrainLauncherFailure(t *testing.T) {
	needGloo(t)
	dir := writeTrainIDX(t, 64)
	code, _, errs := runCLI(t, "train", "--data", dir, "--test-data", "/nonexistent", "--strategy", "ddp", "--nproc", "2",
		"--batch", "32", "--threads", "1", "--resolution", "8", "--limit", "1")
	if code != 2 && code != 1 {
		t.Fatalf("exit %d, want a failure\n%s", code, errs)
	}
	if !strings.Contains(errs, "rank 1") {
		t.Errorf("the failure does not name the ranks: %s", errs)
	}
}

func TestTrainParallelUsage(t *testing.T) {
	dir := writeTrainIDX(t, 8)
	for _, args := range [][]string{
		{"--strategy", "tp"},
		{"--strategy", "ddp", "--devices", "2"},
		{"--nproc", "2"},
		{"--strategy", "dp", "--devices", "-1"},
		{"--amp", "--amp-dtype", "fp8"},
	} {
		full := append([]string{"train", "--data", dir, "--batch", "4"}, args...)
		if code, _, errs := runCLI(t, full...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
	for _, args := range [][]string{{"--variants", "tune"}, {"--strategies", "tp"}, {"--epochs", "0"}, {"--repeats", "0"}} {
		full := append([]string{"bench", "train", "--data", dir}, args...)
		if code, _, errs := runCLI(t, full...); code != 2 {
			t.Errorf("bench train %v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
}

// AMP (bf16) training of ThinNet on the real Fashion-MNIST reaches the
// fp32 accuracy within 1 point (same seed, data and steps). Two epochs of
// all 60,000 images, the second at a tenth of the rate, so that both runs
// settle: after a few thousand images, accuracies of runs that differ only
// in rounding still spread over several points. A narrow ThinNet (stage
// widths 8/16/32) keeps it to a minute a run; `make test` runs it without
// -race (make accuracy).
func TestTrainAMPAccuracy(t *testing.T) {
	const data = testenv.FashionMNISTDir
	if _, err := os.Stat(filepath.Join(data, "train-images-idx3-ubyte.gz")); err != nil {
		testenv.Missing(t, "Fashion-MNIST not installed (scripts/setup.sh)")
	}
	if testing.Short() || raceEnabled || !fast(t) {
		t.Skip("needs the oneDNN backend, and not -short or -race")
	}
	acc := map[string]float64{}
	for _, amp := range []string{"fp32", "bf16"} {
		args := []string{"train", "--data", data, "--filters", "8,16,32", "--batch", "64", "--lr", "0.02",
			"--epochs", "2", "--step-epochs", "1", "--gamma", "0.1", "--json"}
		if amp != "fp32" {
			args = append(args, "--amp", "--amp-dtype", amp)
		}
		code, out, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", amp, code, errs)
		}
		var sum fit.Summary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatal(err)
		}
		if sum.Precision != amp {
			t.Fatalf("summary precision %q, want %q", sum.Precision, amp)
		}
		acc[amp] = sum.TestAccuracy
	}
	t.Logf("test accuracy fp32 %.2f%%, bf16 %.2f%%", 100*acc["fp32"], 100*acc["bf16"])
	if acc["fp32"] < 0.8 {
		t.Fatalf("fp32 accuracy %.3f: the comparison needs a model that learnt", acc["fp32"])
	}
	if d := math.Abs(acc["bf16"] - acc["fp32"]); d > 0.01 {
		t.Errorf("bf16 accuracy %.2f%% is %.2f points from fp32's %.2f%%", 100*acc["bf16"], 100*d, 100*acc["fp32"])
	}
}

// bench train runs every cell of the table as a fresh `faster train` and
// reports them (a tiny ThinNet on the reference backend here: the figures
// come from `make bench`-sized runs, not from tests).
func TestBenchTrainTable(t *testing.T) {
	needGloo(t)
	dir := writeTrainIDX(t, 64)
	plot := filepath.Join(t.TempDir(), "train.png")
	args := []string{"bench", "train", "--data", dir, "--limit", "32", "--test-limit", "16", "--batch", "16", "--threads", "2",
		"--backend", "reference", "--filters", "2,4", "--repeats", "1", "--warmup=false"}
	code, out, errs := runCLI(t, append(args, "--json", "--plot", plot)...)
	if code != 0 {
		t.Fatalf("bench train: exit %d\n%s", code, errs)
	}
	var sum struct {
		Cells []struct {
			Strategy     string   `json:"strategy"`
			Variant      string   `json:"variant"`
			Seconds      float64  `json:"seconds"`
			ImagesPerSec float64  `json:"images_per_sec"`
			TestAccuracy *float64 `json:"test_accuracy"`
			Precision    string   `json:"precision"`
		} `json:"cells"`
		Ablation []json.RawMessage `json:"ablation"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(sum.Cells) != 12 || len(sum.Ablation) != 2 {
		t.Fatalf("%d cells and %d ablation runs, want 12 and 2", len(sum.Cells), len(sum.Ablation))
	}
	i := 0
	for _, s := range []string{"single", "dp", "ddp"} {
		for _, v := range []string{"plain", "autotune", "amp", "autotune+amp"} {
			c := sum.Cells[i]
			i++
			if c.Strategy != s || c.Variant != v || c.Seconds <= 0 || c.ImagesPerSec <= 0 || c.TestAccuracy == nil {
				t.Errorf("cell %d: %+v, want %s %s with figures", i, c, s, v)
			}
			if want := map[bool]string{true: "bf16", false: "fp32"}[strings.Contains(v, "amp")]; c.Precision != want {
				t.Errorf("%s %s ran in %s", s, v, c.Precision)
			}
		}
	}
	if st, err := os.Stat(plot); err != nil || st.Size() == 0 {
		t.Errorf("no plot: %v", err)
	}
	code, out, errs = runCLI(t, append(args, "--strategies", "single,ddp", "--variants", "plain,amp", "--ablation=false")...)
	if code != 0 {
		t.Fatalf("bench train (table): exit %d\n%s", code, errs)
	}
	for _, want := range []string{"Model Running", "Baseline (single device, plain)", "| single", "| DDP (2)", "+AMP"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Repeats with a warm-up: each cell's runs, the median between its
	// extremes, the speed-up's spread around its median.
	code, out, errs = runCLI(t, append(args, "--strategies", "single", "--variants", "plain,amp", "--ablation=false",
		"--repeats", "3", "--warmup", "--batch", "4", "--json")...)
	if code != 0 {
		t.Fatalf("bench train --repeats 3: exit %d\n%s", code, errs)
	}
	var rep struct {
		Repeats int         `json:"repeats"`
		Images  int         `json:"images_per_epoch"`
		Cells   []trainCell `json:"cells"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// (The warm-up ran 16 images, 4 batches of 4; the table's are the
	// timed runs' 32.)
	if rep.Repeats != 3 || len(rep.Cells) != 2 || rep.Images != 32 {
		t.Fatalf("repeats %d, %d cells, %d images per epoch", rep.Repeats, len(rep.Cells), rep.Images)
	}
	for _, c := range rep.Cells {
		if len(c.Runs) != 3 || c.Low > c.Seconds || c.Seconds > c.High || !slices.Contains(c.Runs, c.Seconds) {
			t.Errorf("%s %s: %v s of runs %v [%v, %v]", c.Strategy, c.Variant, c.Seconds, c.Runs, c.Low, c.High)
		}
	}
	if amp := rep.Cells[1]; amp.Speedup <= 0 || amp.SpeedupLow > amp.Speedup || amp.Speedup > amp.SpeedupHigh || rep.Cells[0].Speedup != 0 {
		t.Errorf("speed-ups: baseline %+v, amp %+v", rep.Cells[0], amp)
	}
	if strings.Count(errs, "bench train: single amp: ") != 4 {
		t.Errorf("want 1 warm-up and 3 timed runs of single amp:\n%s", errs)
	}
}

// torchrun (Debian's torch 1.13) starts two ranks of `faster train
// --strategy ddp`, with its agent's store (static rendezvous: the agent
// owns MASTER_PORT, no rank may bind it) and with --standalone (c10d
// rendezvous: rank 0 serves the store at MASTER_PORT); both train the
// weights our own launcher's two ranks train, bit for bit.
func TestTrainUnderTorchrun(t *testing.T) {
	needGloo(t)
	if raceEnabled {
		// Six race-built ranks take half a minute: make accuracy runs it.
		t.Skip("slow under -race; make accuracy runs it")
	}
	const torchrun = testenv.Torchrun
	if _, err := os.Stat(torchrun); err != nil {
		testenv.MissingInterop(t, "torchrun missing (python3-torch)")
	}
	const fm = testenv.FashionMNISTDir
	if _, err := os.Stat(filepath.Join(fm, "train-images-idx3-ubyte.gz")); err != nil {
		testenv.Missing(t, "Fashion-MNIST missing")
	}
	tmp := t.TempDir()
	// A tiny subset of the real images: the ranks (race-built under -race)
	// then do not each decompress the whole dataset.
	sub := filepath.Join(tmp, "fashion-subset")
	os.MkdirAll(sub, 0o755)
	writeIDXSubset(t, fm, sub, "train", 128)
	writeIDXSubset(t, fm, sub, "t10k", 64)
	train := func(ckpt string) []string {
		return []string{"train", "--strategy", "ddp", "--data", sub, "--batch", "32",
			"--epochs", "1", "--backend", "reference", "--filters", "4,8", "--threads", "1", "--checkpoint", ckpt}
	}
	ours := filepath.Join(tmp, "ours.ckpt")
	if code, _, errs := runCLI(t, append(train(ours), "--nproc", "2")...); code != 0 {
		t.Fatalf("faster train --nproc 2: exit %d\n%s", code, errs)
	}
	want := checkpointWeights(t, ours, 4, 8)
	for _, mode := range [][]string{{}, {"--standalone"}} {
		ckpt := filepath.Join(tmp, "torchrun"+strings.Join(mode, "")+".ckpt")
		// --redirects 1 --tee 1 work around torch 1.13 on Python 3.11 (its
		// default stdout handling fails there).
		args := append(append([]string{"--nnodes", "1", "--nproc_per_node", "2"}, mode...),
			"--no_python", "--redirects", "1", "--tee", "1", os.Args[0])
		c := exec.Command(torchrun, append(args, train(ckpt)...)...)
		// The test binary stands in for faster (TestMain).
		c.Env = append(os.Environ(), launchEnv+"=1", "OMP_NUM_THREADS=1")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("torchrun %v: %v\n%s", mode, err, out)
		}
		if !strings.Contains(string(out), "ddp rank 0 of 2") {
			t.Errorf("torchrun %v: rank 0 did not report a group of 2:\n%s", mode, out)
		}
		got := checkpointWeights(t, ckpt, 4, 8)
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("torchrun %v: tensor %d differs from our launcher's run", mode, i)
			}
		}
	}
}

// Our launcher across "machines": two launchers, node 0 and node 1 of
// --nnodes 2 with one rank each, meeting at node 0's store over loopback,
// train the weights of one launcher's two ranks, bit for bit.
func TestTrainMultiNodeLauncher(t *testing.T) {
	needGloo(t)
	dir := writeTrainIDX(t, 256)
	tmp := t.TempDir()
	train := func(ckpt string, extra ...string) []string {
		return append([]string{"train", "--strategy", "ddp", "--data", dir, "--limit", "128", "--test-limit", "64", "--batch", "32",
			"--epochs", "1", "--backend", "reference", "--filters", "4,8", "--threads", "1", "--checkpoint", ckpt}, extra...)
	}
	one := filepath.Join(tmp, "one.ckpt")
	if code, _, errs := runCLI(t, train(one, "--nproc", "2")...); code != 0 {
		t.Fatalf("--nproc 2: exit %d\n%s", code, errs)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(tmp, "two.ckpt")
	type result struct {
		code int
		errs string
	}
	results := make(chan result, 2)
	for node := range 2 {
		go func() {
			code, _, errs := runCLI(t, train(two, "--nproc", "1", "--nnodes", "2", "--node-rank", strconv.Itoa(node),
				"--master-addr", "127.0.0.1", "--master-port", strconv.Itoa(port))...)
			results <- result{code, errs}
		}()
	}
	for range 2 {
		if r := <-results; r.code != 0 {
			t.Fatalf("a node exited %d\n%s", r.code, r.errs)
		}
	}
	sameWeights(t, one, two, "tensor %d differs between one launcher of two ranks and two launchers of one")
	for _, args := range [][]string{
		{"--nproc", "1", "--nnodes", "2"},                                           // no --master-addr
		{"--nproc", "1", "--nnodes", "2", "--node-rank", "2", "--master-addr", "h"}, // out of range
		{"--nnodes", "2", "--master-addr", "h"},                                     // no --nproc
		{"--nproc", "1", "--master-port", "70000"},
	} {
		if code, _, errs := runCLI(t, append([]string{"train", "--strategy", "ddp", "--data", dir}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
}

// --json's ddp section: rank 0's steps, the buckets of a step (all of the
// gradients), the all-reduce and exposed wait per step, and with
// --time-allreduce the all-reduces alone.
func TestTrainDDPCommJSON(t *testing.T) {
	needGloo(t)
	dir := writeTrainIDX(t, 64)
	code, out, errs := runCLI(t, "train", "--strategy", "ddp", "--nproc", "2", "--data", dir, "--limit", "64", "--test-limit", "32",
		"--batch", "16", "--epochs", "1", "--backend", "reference", "--filters", "4,8", "--threads", "1", "--bucket-kb", "1",
		"--time-allreduce", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var sum struct {
		DDP *struct {
			Steps       int      `json:"steps"`
			BucketBytes []int    `json:"bucket_bytes"`
			AllReduce   float64  `json:"allreduce_seconds_per_step"`
			Exposed     float64  `json:"exposed_wait_seconds_per_step"`
			Alone       *float64 `json:"allreduce_alone_seconds_per_step"`
			Rounds      int      `json:"allreduce_alone_rounds"`
		} `json:"ddp"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	d := sum.DDP
	if d == nil {
		t.Fatalf("no ddp section: %s", out)
	}
	total := 0
	for _, b := range d.BucketBytes {
		total += b
	}
	want := 0
	for _, w := range checkpointShapes(t) {
		want += 4 * w
	}
	if d.Steps != 4 || len(d.BucketBytes) < 2 || total != want || d.AllReduce <= 0 || d.Exposed <= 0 || d.Alone == nil || *d.Alone <= 0 || d.Rounds != 3 {
		t.Fatalf("ddp %+v (alone %v); want 4 steps, buckets of %d bytes in all, 3 rounds alone", *d, d.Alone, want)
	}
	if code, _, _ := runCLI(t, "train", "--data", dir, "--time-allreduce", "3"); code != 2 {
		t.Fatalf("--time-allreduce without ddp: exit %d, want 2 (usage)", code)
	}
}

// checkpointShapes are the parameter sizes of the ThinNet of widths 4,8
// on one channel and 10 classes (the gradients ddp all-reduces).
func checkpointShapes(t *testing.T) []int {
	t.Helper()
	b := train.NewReference(train.BackendOptions{Threads: 1})
	defer b.Close()
	net, err := train.NewThinNet(b, train.ThinNetConfig{InChannels: 1, Classes: 10, Filters: []int{4, 8}, Blocks: []int{2, 2}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	var n []int
	for _, p := range net.Params() {
		n = append(n, len(p.Value))
	}
	return n
}

// --cuda-graph: with a strategy other than single a usage error naming
// the field; on a backend that does not capture steps (reference) the
// run is refused naming the backend, before training.
func TestTrainCUDAGraphFlag(t *testing.T) {
	dir := writeTrainIDX(t, 8)
	base := []string{"train", "--data", dir, "--batch", "4", "--epochs", "1", "--backend", "reference", "--filters", "4,4", "--cuda-graph"}
	if code, _, errs := runCLI(t, append(base, "--strategy", "dp")...); code != 2 || !strings.Contains(errs, "--cuda-graph") {
		t.Errorf("--strategy dp --cuda-graph: exit %d, want 2 naming --cuda-graph (%s)", code, errs)
	}
	if code, _, errs := runCLI(t, base...); code == 0 || !strings.Contains(errs, `"reference"`) || !strings.Contains(errs, "StepCapturer") {
		t.Errorf("--backend reference --cuda-graph: exit %d, want a refusal naming the backend (%s)", code, errs)
	}
}
