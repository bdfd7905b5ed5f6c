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
