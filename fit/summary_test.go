package fit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// timeFields are the summary's measured times: everything else in a
// fixed-seed summary is decided by the configuration and the data.
var timeFields = map[string]bool{"seconds": true, "cpu_seconds": true, "images_per_sec": true, "wall_seconds": true, "eval_seconds": true,
	"tune_seconds": true, "seconds_to_target": true, "allreduce_seconds_per_step": true, "exposed_wait_seconds_per_step": true, "allreduce_alone_seconds_per_step": true, "ms_per_step": true}

// untimed is v's JSON decoded, without the time fields.
func untimed(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if timeFields[k] {
					delete(x, k)
				} else {
					x[k] = strip(e)
				}
			}
		case []any:
			for i, e := range x {
				x[i] = strip(e)
			}
		}
		return v
	}
	return strip(v)
}

// The summaries of fixed-seed runs are what `faster train --json` printed
// before the run moved out of package main into fit (testdata/summary_*.json:
// that binary's output on this data, time fields removed): the weights'
// digest, every loss and accuracy of the curve and the epochs, the FixRes
// recalibration, to the last bit. The pure-Go reference backend computes
// alike with and without cgo and under -race.
func TestSummaryUnchangedByTheMove(t *testing.T) {
	dir := testenv.WriteIDX(t, 64)
	base := DefaultConfig()
	base.Data.Path = dir
	base.Model.Backend, base.Model.Filters, base.Batch, base.Epochs = "reference", []int{4, 4, 4}, 16, 2
	for _, c := range []struct {
		golden string
		set    func(*Config)
	}{
		// faster train --backend reference --threads 1 --filters 4,4,4 --batch 16 --epochs 2 --seed 11
		//   --eval-every 3 --label-smoothing 0.1 --ema 0.9 --resolution-schedule 20,28 --fixres-bn 2 --lr 0.05
		{"summary_a.json", func(c *Config) {
			c.Model.Threads, c.Seed, c.Eval.Every, c.Optim.LabelSmoothing, c.Optim.EMA = 1, 11, 3, 0.1, 0.9
			c.Data.Schedule, c.Eval.FixResBN, c.Optim.LR = []int{20, 28}, 2, 0.05
		}},
		// --backend reference --threads 2 --filters 4,4,4 --batch 16 --epochs 2 --seed 12 --strategy dp
		//   --devices 2 --schedule onecycle --lr 0.1 --nesterov --tta flip
		{"summary_b.json", func(c *Config) {
			c.Model.Threads, c.Seed, c.Parallel.Strategy, c.Parallel.Devices = 2, 12, "dp", 2
			c.Optim.Schedule, c.Optim.LR, c.Optim.Nesterov, c.Eval.TTA = "onecycle", 0.1, true, "flip"
		}},
	} {
		t.Run(strings.TrimSuffix(c.golden, ".json"), func(t *testing.T) {
			cfg := base
			c.set(&cfg)
			data := openValid(t, &cfg)
			epochs := 0
			sum, err := Run(context.Background(), cfg, data, nil, Hooks{Epoch: func(EpochSummary) { epochs++ }})
			if err != nil {
				t.Fatal(err)
			}
			if epochs != cfg.Epochs {
				t.Errorf("the Epoch hook ran %d times, want %d", epochs, cfg.Epochs)
			}
			got, err := json.Marshal(sum)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", c.golden))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := untimed(t, got), untimed(t, want); !reflect.DeepEqual(g, w) {
				gb, _ := json.MarshalIndent(g, "", " ")
				t.Errorf("summary differs from before the move:\n got %s\nwant %s", gb, want)
			}
		})
	}
}
