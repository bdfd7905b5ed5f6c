//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
)

// tuneOneConv runs one forward and backward pass of a 3×3 convolution of
// 16 channels (one Winograd serves) on a backend with autotuning and the
// tune cache at path, and returns the backend's choices after it closed
// (which writes the cache).
func tuneOneConv(t *testing.T, path string) []train.TuneChoice {
	t.Helper()
	ForgetSharedChoices() // as a new process
	b, err := New(train.BackendOptions{Threads: 1, Autotune: true, TuneCache: path})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.NewConv(train.ConvSpec{In: 16, Out: 16, Kernel: 3, Pad: 1})
	if err != nil {
		t.Fatal(err)
	}
	x, err := b.NewTensor(2, 16, 8, 8)
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float32, 2*16*8*8)
	for i := range xs {
		xs[i] = float32(i%7) - 3
	}
	if err := x.Write(xs); err != nil {
		t.Fatal(err)
	}
	w, dw := make([]float32, 16*16*9), make([]float32, 16*16*9)
	for i := range w {
		w[i] = float32(i%5)/10 - 0.2
	}
	y, err := c.Forward(x, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Backward(y, w, dw, nil, true); err != nil {
		t.Fatal(err)
	}
	choices := b.TuneChoices()
	c.Close()
	x.Release()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return choices
}

// TestTuneCacheOtherISA: choices are kept by what oneDNN dispatches on,
// its effective ISA included: a run under DNNL_MAX_CPU_ISA (a child
// process: oneDNN reads it once) is not served the choices of a run
// without it, which may name kernels that do not exist under the cap
// (before: a Winograd choice failed the capped run with "primitive
// descriptor: unimplemented").
func TestTuneCacheOtherISA(t *testing.T) {
	if path := os.Getenv("FASTER_TUNE_ISA_CHILD"); path != "" {
		choices := tuneOneConv(t, path)
		fmt.Printf("key=%s\n", MachineKey())
		for _, c := range choices {
			fmt.Printf("cached=%v chosen=%s\n", c.Cached, c.Chosen)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "tune.json")
	child := func(env ...string) (key string, cached []bool) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestTuneCacheOtherISA$", "-test.count", "1")
		cmd.Env = append(append(os.Environ(), "FASTER_TUNE_ISA_CHILD="+path), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child %v: %v\n%s", env, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if k, ok := strings.CutPrefix(line, "key="); ok {
				key = k
			}
			if v, ok := strings.CutPrefix(line, "cached="); ok {
				cached = append(cached, strings.HasPrefix(v, "true"))
			}
		}
		if key == "" || len(cached) == 0 {
			t.Fatalf("child %v printed no result:\n%s", env, out)
		}
		return key, cached
	}
	key, cached := child()
	if cached[0] {
		t.Fatalf("the first run was served from an empty cache")
	}
	// Make the kept choice Winograd where it ran: it exists on AVX-512
	// only, so the capped run below could not build it.
	forgeChoices(t, path, key, func(ch *train.TuneChoice) {
		for _, c := range ch.Candidates {
			if strings.HasPrefix(c.Name, "winograd/blocked ") && c.Err == "" {
				ch.Chosen = c.Name
			}
		}
	})
	if _, cached := child(); !cached[0] {
		t.Fatalf("the second run on the same ISA was not served from the cache")
	}
	capped, cached := child("DNNL_MAX_CPU_ISA=SSE41")
	if capped == key {
		t.Fatalf("the machine key %q does not change with DNNL_MAX_CPU_ISA=SSE41", key)
	}
	if cached[0] {
		t.Fatalf("the run under DNNL_MAX_CPU_ISA=SSE41 was served a choice made without it")
	}
}

// forgeChoices edits every choice kept for machine in the cache at path.
func forgeChoices(t *testing.T, path, machine string, edit func(*train.TuneChoice)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Version  int                                     `json:"version"`
		Machines map[string]map[string]*train.TuneChoice `json:"machines"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Machines[machine]) == 0 {
		t.Fatalf("%s holds no choices for %q", path, machine)
	}
	for _, ch := range f.Machines[machine] {
		edit(ch)
	}
	if b, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A kept choice is checked against what it describes before it is served:
// one that does not build here (a layout Winograd has no kernel for), or
// builds on other kernels than it names, is dropped and tuned again, with
// a note naming the cache file; the new choice replaces it in the file.
func TestTuneCacheChoiceNotHolding(t *testing.T) {
	for _, tc := range []struct {
		name, forged, note string
	}{
		{"does not build", "winograd/nhwc (forged)", "does not build here"},
		{"other kernels", "direct/blocked (jit:forged)", "runs other kernels here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tune.json")
			first := tuneOneConv(t, path)
			if len(first) != 1 || first[0].Cached {
				t.Fatalf("first run: %+v", first)
			}
			prefix, _, _ := strings.Cut(tc.forged, " ")
			forgeChoices(t, path, MachineKey(), func(ch *train.TuneChoice) {
				for i := range ch.Candidates {
					if strings.HasPrefix(ch.Candidates[i].Name, prefix+" ") || ch.Candidates[i].Name == prefix {
						ch.Candidates[i] = train.TuneCandidate{Name: tc.forged, Seconds: 1e-9}
					}
				}
				ch.Chosen = tc.forged
			})
			var notes bytes.Buffer
			warnings = &notes
			defer func() { warnings = os.Stderr }()
			second := tuneOneConv(t, path)
			if len(second) != 1 || second[0].Cached || second[0].Chosen == tc.forged {
				t.Fatalf("the forged choice was served: %+v", second)
			}
			if n := notes.String(); !strings.Contains(n, path) || !strings.Contains(n, tc.note) {
				t.Fatalf("note %q, want one naming %s and saying %q", n, path, tc.note)
			}
			c, err := train.OpenTuneCache(path, MachineKey())
			if err != nil || c.Problem != nil {
				t.Fatal(err, c.Problem)
			}
			third := tuneOneConv(t, path)
			if !third[0].Cached || third[0].Chosen != second[0].Chosen {
				t.Fatalf("the new choice did not replace the forged one in the file: %+v", third)
			}
		})
	}
}

// The trainer writes a step's new tuning choices after that step
// (train.TuneFlusher), not only when the backend closes: a run killed
// later (kill -9, out of memory) keeps them for the next; a step with no
// new choice writes nothing.
func TestTuneCacheWrittenAfterStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	ForgetSharedChoices()
	b, err := New(train.BackendOptions{Threads: 1, Autotune: true, TuneCache: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	net, err := train.NewThinNet(b, train.ThinNetConfig{Filters: []int{16, 16}, Blocks: []int{1, 1}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	tr := train.NewTrainer(b, net, &train.SGD{Momentum: 0.9}, train.Constant(0.01), 4, 1)
	defer tr.Close()
	data := &train.Images{C: 1, H: 12, W: 12, Mean: 0.3, Std: 0.3, Pixels: make([]byte, 8*12*12), Labels: make([]int, 8)}
	for i := range data.Pixels {
		data.Pixels[i] = byte(i * 7)
	}
	var after []os.FileInfo
	_, err = tr.TrainEpoch(context.Background(), data, func(r train.StepResult) error {
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("after step %d the tune cache is not written: %w", r.Step, err)
		}
		after = append(after, st)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 2 || !os.SameFile(after[0], after[1]) {
		t.Fatalf("the second step, with nothing new to tune, rewrote the cache")
	}
	c, err := train.OpenTuneCache(path, MachineKey())
	if err != nil || c.Problem != nil {
		t.Fatal(err, c.Problem)
	}
	if len(b.TuneChoices()) == 0 {
		t.Fatal("nothing was tuned")
	}
}
