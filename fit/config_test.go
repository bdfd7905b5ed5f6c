package fit

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Validate reports every problem at once, each named by its field's JSON
// path (the CLI names the flag of each: cmd/faster's flag table), and fills
// dp's default device count.
func TestValidateReportsEveryProblem(t *testing.T) {
	c := DefaultConfig()
	c.Model.Name, c.Batch, c.Optim.LR, c.Eval.TTA, c.Parallel.Strategy = "vgg", 0, math.NaN(), "five-crop", "pp"
	err := c.Validate()
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Validate: %v, want a *ConfigError", err)
	}
	for _, want := range []string{"data.path: is required", `model.name: "vgg"`, "batch: 0", "optim.lr: NaN", `eval.tta: "five-crop"`, `parallel.strategy: "pp"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate's error does not name %q: %v", want, err)
		}
	}
	if len(ce.Problems) != 6 {
		t.Errorf("%d problems, want 6: %q", len(ce.Problems), ce.Problems)
	}

	c = DefaultConfig()
	c.Data.Path, c.Parallel.Strategy = "x", "dp"
	if err := c.Validate(); err != nil || c.Parallel.Devices != 2 {
		t.Errorf("dp without devices: %v, devices %d; want nil and 2", err, c.Parallel.Devices)
	}
}
