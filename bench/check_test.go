package bench

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/loader"
)

// TestTrainConfigCheck checks `faster bench train`'s configuration as its
// flags give it (moved here from cmd/faster, whose usage tests run it end
// to end): each problem a UsageError worded by the flag, the data looked
// at last, and time to accuracy's settings once the threads are known.
func TestTrainConfigCheck(t *testing.T) {
	data := t.TempDir()
	ok := TrainConfig{Data: data, Epochs: 1, Batch: 8, Devices: 2, Repeats: 3, LR: 0.1, Strategies: Strategies, Variants: Variants,
		EvalEvery: 20, Rounds: 1, NoPeer: true}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*TrainConfig)
		want string
	}{
		{func(c *TrainConfig) { c.Batch = 0 }, "--epochs, --batch and --devices must be positive; --limit, --test-limit, --threads not negative"},
		{func(c *TrainConfig) { c.Threads = -1 }, "--epochs, --batch and --devices must be positive; --limit, --test-limit, --threads not negative"},
		{func(c *TrainConfig) { c.Repeats = 1001 }, "--repeats 1001: want 1 to 1000"},
		{func(c *TrainConfig) { c.LR = math.Inf(1) }, "--lr +Inf: must be a positive finite number"},
		{func(c *TrainConfig) { c.Strategies = []string{"dp", "tp"} }, `--strategies: "tp" is not single, dp or ddp`},
		{func(c *TrainConfig) { c.Variants = []string{"fast"} }, `--variants: "fast" is not one of plain, autotune, amp, autotune+amp`},
	} {
		cfg := ok
		c.edit(&cfg)
		var ue *UsageError
		if err := cfg.Check(); !errors.As(err, &ue) || ue.Msg != c.want {
			t.Errorf("got %v, want a UsageError %q", err, c.want)
		}
	}
	cfg := ok
	cfg.Data = filepath.Join(data, "none")
	var ue *UsageError
	if err := cfg.Check(); !errors.Is(err, os.ErrNotExist) || errors.As(err, &ue) {
		t.Errorf("missing data: %v, want the stat's error, not a usage error", err)
	}
	if err := ok.CheckTTA(4); err != nil {
		t.Errorf("no target accuracy: %v", err)
	}
	ok.TargetAccuracy = 0.9
	if err := ok.CheckTTA(4); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*TrainConfig)
		want string
	}{
		{func(c *TrainConfig) { c.TargetAccuracy = 1.5 }, "--target-accuracy 1.5: want a fraction in (0, 1], e.g. 0.9"},
		{func(c *TrainConfig) { c.Rounds = 0 }, "--eval-every and --rounds must be positive"},
		{func(c *TrainConfig) { c.OursDDP = 3 }, "--ours-ddp 3: want a number of processes that divides --threads 4"},
		{func(c *TrainConfig) { c.RecipeAblation = true }, "--recipe-ablation takes the parts out of --recipe fast"},
		{func(c *TrainConfig) { c.NoPeer, c.Peer = false, filepath.Join(data, "peer.py") }, "--peer " + filepath.Join(data, "peer.py") + ": "},
	} {
		cfg := ok
		c.edit(&cfg)
		if err := cfg.CheckTTA(4); !errors.As(err, &ue) || !strings.HasPrefix(ue.Msg, c.want) {
			t.Errorf("got %v, want a UsageError %q", err, c.want)
		}
	}
}

// TestLoadConfigCheck checks `faster bench load`'s run settings, and the
// saved states it resumes from: merged, or a problem naming every file.
func TestLoadConfigCheck(t *testing.T) {
	var ue *UsageError
	for _, c := range []struct {
		cfg  LoadConfig
		want string
	}{
		{LoadConfig{Epochs: 1}, ""},
		{LoadConfig{Epochs: 0}, "--epochs 0: must be at least 1"},
		{LoadConfig{Epochs: 1, Steps: -1}, "--steps -1: must not be negative"},
		{LoadConfig{Epochs: 1, ConsumerRate: math.NaN()}, "--consumer-rate NaN: want a finite rate >= 0"},
		{LoadConfig{Epochs: 1, ConsumerRate: math.Inf(1)}, "--consumer-rate +Inf: want a finite rate >= 0"},
	} {
		err := c.cfg.Check()
		if c.want == "" && err != nil || c.want != "" && (!errors.As(err, &ue) || ue.Msg != c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	if s, err := ReadResume(nil); s != nil || err != nil {
		t.Errorf("no states: %v %v", s, err)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	st := loader.State{Version: loader.StateVersion, Samples: 10, Fingerprint: "x",
		Segments: []loader.Segment{{World: 2, Consumed: []int{2, -1}, Steps: 1, Batch: 2}}}
	if err := loader.SaveState(a, st); err != nil {
		t.Fatal(err)
	}
	st.Segments[0].Consumed = []int{-1, 2}
	if err := loader.SaveState(b, st); err != nil {
		t.Fatal(err)
	}
	s, err := ReadResume([]string{a, b})
	if err != nil || s == nil || s.Samples != 10 {
		t.Fatalf("two ranks' states: %+v %v", s, err)
	}
	st.Fingerprint = "y"
	if err := loader.SaveState(b, st); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResume([]string{a, b}); !errors.Is(err, loader.ErrResume) || !strings.HasPrefix(err.Error(), "--resume-from "+a+", "+b+": ") {
		t.Errorf("states of other data: %v", err)
	}
	if _, err := ReadResume([]string{a, filepath.Join(dir, "none")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing state: %v", err)
	}
}
