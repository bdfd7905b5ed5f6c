//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/onednn"
	"github.com/faster-training/faster/train/traintest"
)

func newBackend(t *testing.T) *onednn.Backend {
	return newBackendWith(t, train.BackendOptions{Threads: 2})
}

func newBackendWith(t *testing.T, o train.BackendOptions) *onednn.Backend {
	b, err := onednn.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func open(o train.BackendOptions) (train.Backend, error) { return onednn.New(o) }

func TestLayers(t *testing.T) { traintest.RunLayers(t, newBackend(t)) }

func TestLayersAutotune(t *testing.T) {
	traintest.RunLayers(t, newBackendWith(t, train.BackendOptions{Threads: 2, Autotune: true}))
}

func TestTorchStep(t *testing.T) { traintest.RunTorchStep(t, newBackend(t)) }

func TestResNet18(t *testing.T) { traintest.RunResNet18(t, newBackend(t)) }

func TestSyncBatchNorm(t *testing.T) { traintest.RunSyncBatchNorm(t, open) }

func TestPrecision(t *testing.T) { traintest.RunPrecision(t, open) }

func TestAutotune(t *testing.T) { traintest.RunAutotune(t, open) }

// TestFusedReLU: ThinNet with its ReLUs fused into the convolutions (a
// oneDNN post-op forward, relu_use_dst_for_bwd backward) trains exactly as
// with separate ReLU layers, on Winograd and on direct convolutions.
func TestFusedReLU(t *testing.T) {
	sep := traintest.SmallThinNet()
	sep.SeparateReLU = true
	for _, o := range []train.BackendOptions{{Threads: 2}, {Threads: 2, Winograd: true}} {
		traintest.RunFused(t, open, o, o, sep, traintest.SmallThinNet(), 1e-5)
	}
}

// TestWinograd: Winograd convolutions (BackendOptions.Winograd) train ThinNet as the
// direct ones do, within rounding.
func TestWinograd(t *testing.T) {
	cfg := traintest.SmallThinNet()
	traintest.RunFused(t, open, train.BackendOptions{Threads: 2}, train.BackendOptions{Threads: 2, Winograd: true}, cfg, cfg, 1e-4)
}

// With a TuneCache, a configuration tuned by one run is served from the
// file to the next (a new process: the shared choices forgotten; the
// first backend wrote them as it closed): the same
// choices, marked cached, nothing timed. Another machine key would not be
// served (train.TestTuneCache).
func TestAutotuneCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.json")
	run := func() []train.TuneChoice {
		onednn.ForgetSharedChoices()
		b := newBackendWith(t, train.BackendOptions{Threads: 2, Autotune: true, TuneCache: path})
		net, err := train.NewThinNet(b, train.ThinNetConfig{Filters: []int{16, 16}, Blocks: []int{1, 1}}, 3)
		if err != nil {
			t.Fatal(err)
		}
		defer net.Close()
		x, err := b.NewTensor(4, 1, 12, 12)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Release()
		if err := x.Write(make([]float32, 4*12*12)); err != nil {
			t.Fatal(err)
		}
		if _, err := net.Forward(x, true); err != nil {
			t.Fatal(err)
		}
		choices := b.TuneChoices()
		b.Close() // writes the cache
		return choices
	}
	first := run()
	if len(first) == 0 {
		t.Fatal("nothing was tuned")
	}
	for _, c := range first {
		if c.Cached || c.Seconds <= 0 {
			t.Fatalf("first run: %+v, want timed", c)
		}
	}
	second := run()
	if len(second) != len(first) {
		t.Fatalf("second run made %d choices, the first %d", len(second), len(first))
	}
	for i, c := range second {
		if !c.Cached || c.Seconds != 0 || c.Chosen != first[i].Chosen || c.Op != first[i].Op {
			t.Fatalf("second run, choice %d: %+v; want the first run's %q, cached", i, c, first[i].Chosen)
		}
	}
	if !strings.Contains(onednn.MachineKey(), "onednn ") {
		t.Fatalf("machine key %q", onednn.MachineKey())
	}
}
