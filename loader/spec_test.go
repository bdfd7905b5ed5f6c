package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/augment"
)

// Every problem of a spec at once, each named by its field path.
func TestSpecValidateEveryProblem(t *testing.T) {
	s, err := ReadSpec(strings.NewReader(`{"batch": 0, "world_size": 2, "rank": 2, "layout": "rgb",
		"on_error": "stop", "max_bad": 5, "transform": "train",
		"recipe": {"crop_scale": [0.5, 0.2], "flip_prob": 2, "color_jitter": [1, 2], "magnitude_bins": 4096}}`), Defaults())
	if err != nil {
		t.Fatal(err)
	}
	err = s.Validate()
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("Validate: %v, want a *SpecError", err)
	}
	var fields []string
	for _, p := range se.Problems {
		fields = append(fields, p.Field)
	}
	want := []string{"batch", "layout", "rank", "max_bad", "recipe.crop_scale", "recipe.flip_prob", "recipe.magnitude_bins", "recipe.color_jitter"}
	if !slices.Equal(fields, want) {
		t.Fatalf("fields %q, want %q\n%v", fields, want, err)
	}
	if _, err := s.Options(); !errors.As(err, &se) {
		t.Fatalf("Options of an invalid spec: %v", err)
	}
	// The augment ops' problems come named by their index.
	s = Defaults()
	s.Augment = augment.Recipe{{Op: augment.OpResize}, {Op: "RandomPerspective"}}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "augment[1].op") {
		t.Fatalf("unknown op: %v", err)
	}
}

// JSON in, the same JSON out; fields left out keep the base's values;
// unknown fields and wrong types are refused naming the field.
func TestReadSpec(t *testing.T) {
	d := Defaults()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadSpec(bytes.NewReader(b), Spec{})
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Fatalf("round trip: %+v, %v\nwant %+v (%s)", got, err, d, b)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("Defaults: %v", err)
	}
	got, err = ReadSpec(strings.NewReader(`{"batch": 8, "shuffle": false, "max_bad": "0.5%"}`), d)
	if err != nil || got.Batch != 8 || got.Resolution != 224 || got.Shuffle == nil || *got.Shuffle || got.MaxBad != "0.5%" {
		t.Fatalf("partial: %+v, %v", got, err)
	}
	for in, want := range map[string]string{
		`{"batchsize": 8}`:            `unknown field "batchsize"`,
		`{"batch": "8"}`:              "batch: want int",
		`{"recipe": {"resize": 1.5}}`: "recipe.resize: want int",
		`{"batch": 8} {"batch": 9}`:   "more than one JSON value",
		``:                            "no JSON value",
		`{"batch": 8`:                 "offset",
		`{"recipe": {"augment_recipe": "torchvision-x"}}`: `recipe.augment_recipe: "torchvision-x"`,
	} {
		if _, err := ReadSpec(strings.NewReader(in), d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	// A named recipe sets its values except those the JSON gives.
	got, err = ReadSpec(strings.NewReader(`{"recipe": {"augment_recipe": "torchvision-v2", "erasing_prob": 0.25}}`), d)
	if err != nil || got.Recipe.AutoAugment != "ta-wide" || got.Recipe.ErasingProb != 0.25 || got.Recipe.AugmentInterpolation != "bilinear" {
		t.Fatalf("named recipe: %+v, %v", got.Recipe, err)
	}
	o, err := got.Options()
	if err != nil || o.Resize != 232 || o.Erasing == nil || o.Erasing.P != 0.25 {
		t.Fatalf("named recipe's options: resize %d erasing %+v, %v", o.Resize, o.Erasing, err)
	}
}

// FuzzReadSpec: no JSON panics ReadSpec, Validate or Options, and a spec
// that validates gives options the loader accepts.
func FuzzReadSpec(f *testing.F) {
	f.Add([]byte(`{"batch": 8, "recipe": {"crop_scale": [0.2, 1], "color_jitter": [0.4, 0.4, 0.4, 0.1]}}`))
	f.Add([]byte(`{"augment": [{"op": "Resize", "size": 256}, {"op": "CenterCrop", "size": 224}]}`))
	f.Add([]byte(`{"recipe": {"augment_recipe": "torchvision-ra", "ra_m": 40, "blur_kernel": [3, 5], "blur_sigma": [0.1]}}`))
	f.Add([]byte(`{"max_bad": "1e400%", "on_error": "skip", "shuffle": null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ReadSpec(bytes.NewReader(b), Defaults())
		if err != nil {
			return
		}
		if s.Validate() != nil {
			return
		}
		o, err := s.Options()
		if err != nil {
			t.Fatalf("valid spec, Options: %v", err)
		}
		o.MaxBatchMemory = 1 << 62
		if err := o.ensureDefaults(); err != nil && !strings.Contains(err.Error(), "in flight") {
			t.Fatalf("valid spec %s: the loader refuses its options: %v", b, err)
		}
	})
}
