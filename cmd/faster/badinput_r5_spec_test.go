package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The rows of docs/badinput.md's "Other commands" of a loader or a run
// described as JSON (issue 40): `faster serve --spec` and `faster train
// --config`, each refused naming the field as the file gives it.
func init() {
	file := func(t *testing.T, js string) string {
		p := filepath.Join(t.TempDir(), "spec.json")
		if err := os.WriteFile(p, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	otherFixtures["spec-unknown-field"] = func(t *testing.T) ([]string, string) {
		return []string{"serve", "--fd", "3", "--spec", file(t, `{"path": "d", "batchsize": 8}`)}, `unknown field "batchsize"`
	}
	otherFixtures["spec-problems"] = func(t *testing.T) ([]string, string) {
		return []string{"serve", "--fd", "3", "--spec", `{"path": "d", "batch": 0, "augment": [{"op": "RandomRotation", "degrees": 400}]}`},
			"augment[0].degrees"
	}
	otherFixtures["spec-with-flags"] = func(t *testing.T) ([]string, string) {
		return []string{"serve", "--fd", "3", "--spec", `{"path": "d"}`, "--batch", "8"}, "--spec and --batch"
	}
	otherFixtures["config-field"] = func(t *testing.T) ([]string, string) {
		return []string{"train", "--config", file(t, `{"data": {"path": "d", "recipe": {"crop_scale": [0.9, 0.1]}}, "optim": {"lr": -1}}`)},
			"data.recipe.crop_scale"
	}
	otherFixtures["config-run-fields"] = func(t *testing.T) ([]string, string) {
		return []string{"train", "--config", file(t, `{"data": {"path": "d", "batch": 64, "world_size": 2}}`)}, "data: batch, seed"
	}
}
