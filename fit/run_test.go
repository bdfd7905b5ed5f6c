package fit

import (
	"strings"
	"testing"

	"github.com/faster-training/faster/train"
)

// The ranks on one machine share its budget; --max-memory is per rank.
func TestCheckStepMemoryShares(t *testing.T) {
	b := train.NewReference(train.BackendOptions{})
	defer b.Close()
	net, err := NewModel(b, "thinnet", nil, 3, 64, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	m, err := train.EstimateMemory(net, 16, 3, 64, 64)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: ModelConfig{Name: "thinnet", MaxMemory: m.Total()}, Batch: 32}
	if err := cfg.checkStepMemory(net, 3, 64, 2, 2); err != nil {
		t.Errorf("16 images a rank within a budget of exactly their step: %v", err)
	}
	cfg.Batch = 34 // 17 a rank
	if err := cfg.checkStepMemory(net, 3, 64, 2, 2); err == nil || !strings.Contains(err.Error(), "batch 17 per rank") {
		t.Errorf("17 images a rank above the budget of 16: %v", err)
	}
	if _, err := train.EstimateMemory(net, 1, 3, 8, 8); err == nil {
		t.Error("8×8 input through nine 3×3 convolutions: no error")
	}
}
