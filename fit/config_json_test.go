package fit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A run's JSON (fit.Config, as `faster train --config` reads it): the
// defaults round-trip; fields left out keep the base's values; the data
// part is the loader's spec, its problems named data.<field>; unknown
// fields and wrong types are named.
func TestReadConfig(t *testing.T) {
	d := DefaultConfig()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadConfig(bytes.NewReader(b), Config{})
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Fatalf("round trip: %v\n%+v\nwant %+v\n%s", err, got, d, b)
	}
	got, err = ReadConfig(strings.NewReader(`{"data": {"path": "d", "cache_dir": "/c", "recipe": {"augment_recipe": "torchvision-aa", "erasing_prob": 0.2}}, "optim": {"lr": 0.5}}`), d)
	if err != nil || got.Data.Path != "d" || got.Data.CacheDir != "/c" || got.Optim.LR != 0.5 || got.Optim.Momentum != 0.9 || got.Batch != 512 ||
		got.Data.Recipe.AutoAugment != "imagenet" || got.Data.Recipe.ErasingProb != 0.2 {
		t.Fatalf("partial: %v, %+v", err, got)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	got.Data.Recipe.CropScale, got.Data.OnError = []float64{0.9, 0.1}, "never"
	err = got.Validate()
	if err == nil || !strings.Contains(err.Error(), "data.recipe.crop_scale: [0.9 0.1]") || !strings.Contains(err.Error(), `data.on_error: "never"`) {
		t.Errorf("data problems: %v", err)
	}
	for in, want := range map[string]string{
		`{"optim": {"learning_rate": 1}}`: `unknown field "learning_rate"`,
		`{"batch": "big"}`:                "batch: want int",
		`{"data": {"resolution": -1.5}}`:  "data.resolution: want int",
		`{} {}`:                           "more than one JSON value",
	} {
		if _, err := ReadConfig(strings.NewReader(in), d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// FuzzReadConfig: no JSON panics ReadConfig or Validate.
func FuzzReadConfig(f *testing.F) {
	f.Add([]byte(`{"data": {"path": "d", "recipe": {"augment_recipe": "torchvision-v2", "crop_scale": [0.2, 1]}}, "optim": {"lr": 0.1}}`))
	f.Add([]byte(`{"data": {"batch": 3, "resolution_schedule": [8, 16]}, "model": {"filters": [1, 2]}, "parallel": {"strategy": "dp"}}`))
	f.Add([]byte(`{"epochs": 1e9, "seed": 18446744073709551615}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ReadConfig(bytes.NewReader(b), DefaultConfig())
		if err != nil {
			return
		}
		_ = c.Validate()
	})
}
