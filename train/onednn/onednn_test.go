//go:build cgo

package onednn_test

import (
	"testing"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/onednn"
	"github.com/faster-training/faster/train/traintest"
)

func newBackend(t *testing.T) *onednn.Backend {
	b, err := onednn.New(train.BackendOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestLayers(t *testing.T) { traintest.RunLayers(t, newBackend(t)) }

func TestTorchStep(t *testing.T) { traintest.RunTorchStep(t, newBackend(t)) }

func TestResNet18(t *testing.T) { traintest.RunResNet18(t, newBackend(t)) }
