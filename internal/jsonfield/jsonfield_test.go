package jsonfield

import (
	"reflect"
	"testing"
)

type inner struct {
	Scale []float64 `json:"crop_scale"`
	Name  string    `json:"name,omitempty"`
}

type Embedded struct {
	Batch int   `json:"batch"`
	In    inner `json:"recipe"`
}

type outer struct {
	Embedded
	Path    string `json:"path"`
	Skip    int    `json:"-"`
	private int
}

// TestPaths lists a struct's JSON paths: Embedded structs inline, nested
// ones as a.b, "-" and unexported fields left out (moved here from
// cmd/faster's flag table, which names fit.Config's fields so).
func TestPaths(t *testing.T) {
	got := Paths(reflect.TypeOf(outer{}), "data.")
	want := []string{"data.batch", "data.recipe", "data.recipe.crop_scale", "data.recipe.name", "data.path"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestCopyAndByName copies fields by path, nested and through an Embedded
// struct, leaving the others; a name that is no field is the zero Value,
// a path that is none a panic.
func TestCopyAndByName(t *testing.T) {
	src := outer{Embedded: Embedded{Batch: 7, In: inner{Scale: []float64{0.5, 1}, Name: "n"}}, Path: "p"}
	dst := outer{Path: "keep"}
	Copy(&dst, &src, []string{"batch", "recipe.crop_scale"})
	if dst.Batch != 7 || !reflect.DeepEqual(dst.In.Scale, []float64{0.5, 1}) || dst.In.Name != "" || dst.Path != "keep" {
		t.Errorf("copied %+v", dst)
	}
	v := reflect.ValueOf(&src).Elem()
	if f := ByName(v, "batch"); !f.IsValid() || f.Int() != 7 {
		t.Errorf("batch: %v", f)
	}
	if f := ByName(v, "nothing"); f.IsValid() {
		t.Errorf("nothing: %v", f)
	}
	defer func() {
		if recover() == nil {
			t.Error("a path that is no field: no panic")
		}
	}()
	Copy(&dst, &src, []string{"recipe.nothing"})
}
