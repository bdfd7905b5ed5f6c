package train_test

import (
	"testing"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/traintest"
)

func TestReferenceLayers(t *testing.T) {
	traintest.RunLayers(t, train.NewReference(train.BackendOptions{}))
}

func TestReferenceTorchStep(t *testing.T) {
	traintest.RunTorchStep(t, train.NewReference(train.BackendOptions{}))
}

func TestReferenceSyncBatchNorm(t *testing.T) {
	traintest.RunSyncBatchNorm(t, func(o train.BackendOptions) (train.Backend, error) { return train.NewReference(o), nil })
}

func TestReferencePrecision(t *testing.T) {
	traintest.RunPrecision(t, func(o train.BackendOptions) (train.Backend, error) { return train.NewReference(o), nil })
}

func TestReferenceAutotune(t *testing.T) {
	traintest.RunAutotune(t, func(o train.BackendOptions) (train.Backend, error) { return train.NewReference(o), nil })
}

func TestReferenceFusedReLU(t *testing.T) {
	sep := traintest.SmallThinNet()
	sep.SeparateReLU = true
	open := func(o train.BackendOptions) (train.Backend, error) { return train.NewReference(o), nil }
	traintest.RunFused(t, open, train.BackendOptions{}, train.BackendOptions{}, sep, traintest.SmallThinNet(), 0)
}
