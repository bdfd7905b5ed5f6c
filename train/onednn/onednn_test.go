//go:build cgo && !faster_serveonly

package onednn_test

import (
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
