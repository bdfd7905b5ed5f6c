package repocheck

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/faster-training/faster/"

// pkgInfo is what `go list -json` says of a package (its non-test files).
type pkgInfo struct {
	ImportPath string
	Imports    []string // direct
	Deps       []string // transitive
	CgoFiles   []string
}

func listPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Deps,CgoFiles", "./...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkgInfo{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkgInfo
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	return pkgs
}

// local returns the module's packages among paths, without the module prefix.
func local(paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, module) {
			out = append(out, strings.TrimPrefix(p, module))
		}
	}
	return out
}

// under reports whether pkg is room or inside it. (A rule's room ending in
// "$" names that package alone: "imgcodec$" is not imgcodec/rawpix.)
func under(pkg, room string) bool { return pkg == room || strings.HasPrefix(pkg, room+"/") }

// The layering of docs/architecture.md, checked on what the packages import
// (transitively where it says "depends"): the lower rooms know nothing of the
// rooms built on them, so each can be read, tested and reused alone.
func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	// rules: a package in room (or below it) must not depend on any of never.
	rules := []struct {
		room   string
		never  []string
		direct bool // only direct imports count
		why    string
	}{
		{"pipeline", []string{""}, false, "the pipeline engine is generic: it depends on no package of the project"},
		{"tfrecord", []string{""}, false, "the record format stands alone, like archive/tar"},
		{"tfexample", []string{""}, false, "the Example codec stands alone"},
		{"progress", []string{""}, false, "progress drawing stands alone"},
		{"storage", []string{"source", "shard", "loader", "serve", "train", "augment", "imgcodec", "pipeline"}, false, "storage knows bytes, not datasets"},
		{"collective", []string{"source", "shard", "loader", "serve", "train", "augment", "imgcodec", "pipeline", "storage"}, false, "collectives know tensors of bytes, not data or models"},
		{"imgcodec", []string{"source", "shard", "loader", "serve", "train", "augment", "pipeline", "storage"}, false, "codecs know images only"},
		{"augment", []string{"source", "shard", "loader", "serve", "train", "pipeline", "storage"}, false, "augmentations work on decoded images"},
		{"source", []string{"shard", "loader", "serve", "train", "augment", "pipeline", "storage", "downscale"}, false, "a source reads one dataset's files"},
		{"shard", []string{"loader", "serve", "train", "augment", "pipeline", "downscale"}, false, "shards are data at rest"},
		{"loader", []string{"serve", "train", "fit", "downscale", "launch", "bench"}, false, "the loader feeds both engines and knows neither"},
		{"loader", []string{"tfrecord", "tfexample"}, true, "container formats are read through shard.Open and source's interfaces"},
		{"serve", []string{"tfrecord", "tfexample"}, true, "container formats are read through shard.Open and source's interfaces"},
		{"serve", []string{"train", "fit", "downscale", "launch", "bench"}, false, "serve hands batches to PyTorch; the Go trainer is another consumer"},
		{"fit", []string{"serve", "downscale", "launch", "bench"}, false, "fit runs the Go trainer on the loader's batches; serve, the other consumer, is its sibling"},
		{"train", []string{"loader", "serve", "shard", "augment", "imgcodec$", "imgcodec/turbojpeg", "pipeline", "storage", "downscale", "bench", "fit"}, false, "the engine trains on batches, whoever made them"},
		{"downscale", []string{"loader", "serve", "train", "shard"}, false, "resizing a dataset needs no loader"},
		{"launch", []string{"loader", "serve", "train", "shard", "source"}, false, "launching ranks knows processes, not data"},
		{"bench", []string{"serve", "launch", "downscale", "cmd"}, false, "bench runs the loader and fit, and faster itself as a child process: it knows no CLI and no other consumer"},
		{"internal", []string{"source", "shard", "loader", "serve", "train", "augment", "imgcodec", "pipeline", "storage", "collective", "downscale", "launch", "bench", "fit"}, false, "internal helpers sit below every room"},
	}
	checked := 0
	for name, p := range pkgs {
		deps := local(p.Deps)
		imps := local(p.Imports)
		for _, r := range rules {
			if !under(name, r.room) {
				continue
			}
			checked++
			against := deps
			if r.direct {
				against = imps
			}
			for _, d := range against {
				for _, n := range r.never {
					if n == "" || under(d, n) || n == d+"$" {
						t.Errorf("%s depends on %s: %s", name, d, r.why)
					}
				}
			}
		}
		// Only cmd/ uses the CLI framework.
		if !under(name, "cmd") && slices.Contains(p.Deps, "github.com/spf13/cobra") {
			t.Errorf("%s depends on cobra: only cmd/ may", name)
		}
		// cgo lives in one small package per C library.
		cgoAllowed := []string{"imgcodec/turbojpeg", "augment/internal/cref", "augment/internal/simd", "train/onednn", "train/cuda", "gpudecode/nvjpeg", "collective/gloo", "internal/dl"}
		if len(p.CgoFiles) > 0 && !slices.ContainsFunc(cgoAllowed, func(a string) bool { return under(name, a) }) {
			t.Errorf("%s has cgo files %v: only %v may", name, p.CgoFiles, cgoAllowed)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d package-rule pairs checked", checked)
	}
}
