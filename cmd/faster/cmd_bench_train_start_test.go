package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/faster-training/faster/bench"
	"github.com/faster-training/faster/fit"
	"github.com/faster-training/faster/train"
)

// readNpyInt32 parses the order file bench.WriteSameStart writes, as NumPy's format 1.0 says.
func readNpyInt32(t *testing.T, path string) [][]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 10 || string(b[:8]) != "\x93NUMPY\x01\x00" {
		t.Fatalf("%s: not an .npy 1.0: % x", path, b[:min(len(b), 10)])
	}
	hl := int(binary.LittleEndian.Uint16(b[8:]))
	if (10+hl)%64 != 0 || b[10+hl-1] != '\n' {
		t.Errorf("%s: header of %d bytes: the data must start 64-byte aligned after a newline", path, hl)
	}
	m := regexp.MustCompile(`^\{'descr': '<i4', 'fortran_order': False, 'shape': \((\d+), (\d+)\), \} *\n$`).FindStringSubmatch(string(b[10 : 10+hl]))
	if m == nil {
		t.Fatalf("%s: header %q", path, b[10:10+hl])
	}
	rows, _ := strconv.Atoi(m[1])
	cols, _ := strconv.Atoi(m[2])
	data := b[10+hl:]
	if len(data) != 4*rows*cols {
		t.Fatalf("%s: %d data bytes for shape (%d, %d)", path, len(data), rows, cols)
	}
	out := make([][]int, rows)
	for r := range out {
		for c := range cols {
			out[r] = append(out[r], int(int32(binary.LittleEndian.Uint32(data[4*(r*cols+c):]))))
		}
	}
	return out
}

// --same-start's files are ours' start: faster train resumed from the
// checkpoint at epoch 0 ends with the same weights as a fresh run of the
// seed (and not as one of another seed), and the order file holds, for
// each epoch, the permutation the trainer takes the images in.
func TestSameStartFiles(t *testing.T) {
	dir := writeTrainIDX(t, 24)
	c := bench.TrainConfig{Data: dir, Limit: 20, Batch: 4, Epochs: 3, Seed: 7, Filters: []int{4, 8}}
	out := t.TempDir()
	flags, err := bench.WriteSameStart(out, c)
	if err != nil {
		t.Fatal(err)
	}
	ckpt, order := filepath.Join(out, "start.ckpt"), filepath.Join(out, "order.npy")
	if !slices.Equal(flags, []string{"--init-from", ckpt, "--order-from", order}) {
		t.Errorf("peer flags %q", flags)
	}
	if e, s, err := train.CheckpointPosition(ckpt); err != nil || e != 0 || s != 0 {
		t.Fatalf("start checkpoint at epoch %d step %d (%v), want 0, 0", e, s, err)
	}

	digest := func(seed string, extra ...string) string {
		t.Helper()
		args := append([]string{"train", "--data", dir, "--limit", "20", "--test-limit", "8", "--batch", "4", "--epochs", "1",
			"--filters", "4,8", "--lr", "0.05", "--threads", "1", "--backend", "reference", "--json", "--seed", seed}, extra...)
		code, stdout, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errs)
		}
		var s fit.Summary
		if err := json.Unmarshal([]byte(stdout), &s); err != nil || s.WeightsSHA256 == "" {
			t.Fatalf("%v: %s", err, stdout)
		}
		return s.WeightsSHA256
	}
	resumed := filepath.Join(t.TempDir(), "ck")
	b, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(resumed, b, 0o644)
	fresh, fromStart := digest("7"), digest("7", "--checkpoint", resumed)
	if fresh != fromStart {
		t.Errorf("resumed from the start checkpoint: weights %s, a fresh run of seed 7: %s", fromStart, fresh)
	}
	if other := digest("8"); other == fresh {
		t.Errorf("seeds 7 and 8 end with the same weights %s: the comparison above shows nothing", other)
	}

	rows := readNpyInt32(t, order)
	tr := train.NewTrainer(train.NewReference(train.BackendOptions{Threads: 1}), &train.Sequential{}, &train.SGD{}, nil, 4, 7)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want one per epoch (3)", len(rows))
	}
	for e, r := range rows {
		if want := tr.Order(20, e); !slices.Equal(r, want) {
			t.Errorf("epoch %d: order %v, the trainer's %v", e, r, want)
		}
		if s := slices.Sorted(slices.Values(r)); s[0] != 0 || s[19] != 19 || len(slices.Compact(s)) != 20 {
			t.Errorf("epoch %d: %v is not a permutation of 0..19", e, r)
		}
	}
	if slices.Equal(rows[0], rows[1]) {
		t.Errorf("epochs 0 and 1 in the same order %v", rows[0])
	}
}

// With --same-start (the default) the peer runs ours' training: from
// ours' starting weights, in ours' order, with the whole fast recipe
// (one-cycle, label smoothing, Nesterov, progressive resizing, EMA, flip
// TTA), the two engines' test losses agree at every evaluation of the
// first steps to what fp32 rounding moves (ours on the exact pure-Go
// backend); each engine drawing its own start, they do not.
func TestBenchTimeToAccuracySameStart(t *testing.T) {
	needTorch(t)
	dir := writeTrainIDX(t, 64)
	base := []string{"--data", dir, "--limit", "64", "--test-limit", "32", "--batch", "16", "--threads", "1",
		"--filters", "4,8", "--epochs", "2", "--recipe", "fast", "--lr", "0.05", "--target-accuracy", "1", "--eval-every", "1",
		"--backend", "reference", "--peer", "../../bench/peer_thinnet_torch.py"}
	gap := func(sum ttaSummary, points int) float64 {
		t.Helper()
		if len(sum.Runs) != 2 || sum.Runs[0].Engine != "faster" || sum.Runs[1].Engine != "pytorch" {
			t.Fatalf("runs %+v, want ours then the peer", sum.Runs)
		}
		a, b := sum.Runs[0].Curve, sum.Runs[1].Curve
		if len(a) < points || len(b) < points {
			t.Fatalf("curves of %d and %d points, want %d", len(a), len(b), points)
		}
		worst := 0.0
		for i := range points {
			if a[i].Step != b[i].Step {
				t.Fatalf("point %d at steps %d and %d", i, a[i].Step, b[i].Step)
			}
			la, lb := float64(a[i].TestLoss), float64(b[i].TestLoss)
			worst = max(worst, math.Abs(la-lb)/max(1, math.Abs(lb)))
		}
		return worst
	}
	same := runTTA(t, base...)
	t.Logf("same start: relative gap of the test losses over 3 steps %.2g", gap(same, 3))
	if !same.SameStart {
		t.Errorf("same_start %v, want the default on", same.SameStart)
	}
	// Epoch 1 is at the first side of the progressive schedule, so these
	// steps cover resizing; the EMA and TTA are in every evaluation.
	if g := gap(same, 3); g > 1e-4 {
		t.Errorf("same start: the engines' test losses differ by %.2g (relative) in the first 3 steps, want rounding (≤ 1e-4): %+v / %+v",
			g, same.Runs[0].Curve[:3], same.Runs[1].Curve[:3])
	}
	own := runTTA(t, append(base, "--same-start=false")...)
	t.Logf("own starts: relative gap at the first step %.2g", gap(own, 1))
	if own.SameStart {
		t.Errorf("--same-start=false: same_start true")
	}
	if g := gap(own, 1); g < 1e-3 {
		t.Errorf("each engine's own start: test losses within %.2g at the first step; want different starts to show", g)
	}
}

// --recipe-ablation runs ours and the peer without each part of the fast
// recipe, one pair per part; from the same start each pair agrees to
// rounding in the first steps (the peer took the flag that turns the part
// off with the same meaning), and each part off changes the training or
// its evaluation from the whole recipe's.
func TestBenchRecipeAblationBothEngines(t *testing.T) {
	needTorch(t)
	dir := writeTrainIDX(t, 64)
	// Images whose mirror looks like another class (a bright column band
	// per class), so that flip TTA changes the evaluation.
	for _, split := range []string{"train", "t10k"} {
		path := filepath.Join(dir, split+"-images-idx3-ubyte")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		labels, err := os.ReadFile(filepath.Join(dir, split+"-labels-idx1-ubyte"))
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range labels[8:] {
			for y := range 28 {
				for x := 7 * int(k); x < 7*int(k)+7; x++ {
					b[16+i*784+y*28+x] = 255
				}
			}
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum := runTTA(t, "--data", dir, "--limit", "32", "--test-limit", "16", "--batch", "16", "--threads", "1",
		"--filters", "4,8", "--epochs", "2", "--recipe", "fast", "--lr", "0.05", "--target-accuracy", "1", "--eval-every", "1",
		"--backend", "reference", "--peer", "../../bench/peer_thinnet_torch.py", "--recipe-ablation")
	const points = 2 // the first epoch's steps, at the progressive schedule's first side
	loss := func(r ttaRun) []float64 {
		t.Helper()
		if len(r.Curve) < points {
			t.Fatalf("%s %s: curve of %d points", r.Engine, r.Variant, len(r.Curve))
		}
		var v []float64
		for _, p := range r.Curve[:points] {
			v = append(v, float64(p.TestLoss))
		}
		return v
	}
	gap := func(a, b []float64) float64 {
		g := 0.0
		for i := range a {
			g = max(g, math.Abs(a[i]-b[i])/max(1, math.Abs(b[i])))
		}
		return g
	}
	byVariant := map[string][2][]float64{}
	var order []string
	for _, r := range sum.Runs {
		order = append(order, r.Engine+" "+r.Variant)
		v := byVariant[r.Variant]
		if r.Engine == "faster" {
			v[0] = loss(r)
		} else {
			v[1] = loss(r)
		}
		byVariant[r.Variant] = v
	}
	want := []string{"faster recipe", "pytorch recipe"}
	for _, a := range bench.Ablations {
		want = append(want, "faster "+a.Name, "pytorch "+a.Name)
	}
	if !slices.Equal(order, want) {
		t.Fatalf("runs %q, want %q", order, want)
	}
	whole := byVariant["recipe"][0]
	for _, a := range bench.Ablations {
		v := byVariant[a.Name]
		g, d := gap(v[0], v[1]), gap(v[0], whole)
		t.Logf("%s: engines apart by %.2g, from the whole recipe by %.2g", a.Name, g, d)
		if g > 1e-4 {
			t.Errorf("%s: ours and the peer's test losses differ by %.2g over the first %d steps: %v / %v", a.Name, g, points, v[0], v[1])
		}
		if d < 1e-5 || d < 100*g {
			t.Errorf("%s: test losses within %.2g of the whole recipe's: the part was not turned off (%v / %v)", a.Name, d, v[0], whole)
		}
	}
}
