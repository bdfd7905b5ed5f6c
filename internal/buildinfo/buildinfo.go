// Package buildinfo describes a faster binary: its version, the commit
// and toolchain it was built from, and what this build can do (the JPEG
// decoder and how it is linked, the training backends, the collectives,
// CUDA), as `faster --version` prints it. The features are given by the
// command, which imports the packages that have them; this package reads
// only the Go runtime's build information.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the release's version, the Python package's too
// (python/pyproject.toml's; TestVersionIsThePythonPackages).
const Version = "0.1.0"

// Features are what a build can do, as the packages that have them say.
type Features struct {
	JPEG        string   `json:"jpeg"`        // "libjpeg-turbo" or "pure-go"
	JPEGLink    string   `json:"jpeg_link"`   // "static", "shared", "" (pure Go)
	Backends    []string `json:"backends"`    // registered training backends
	Collectives []string `json:"collectives"` // "gloo" where it is built in
	CUDA        string   `json:"cuda"`        // why not, or the runtime found
}

// Info is a binary's description.
type Info struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`   // vcs.revision, when built in a checkout
	Modified bool   `json:"modified,omitempty"` // the checkout had changes
	Go       string `json:"go"`
	Platform string `json:"platform"`
	Cgo      bool   `json:"cgo"`
	Tags     string `json:"tags,omitempty"` // -tags given to go build
	Features
}

// Read is this binary's Info with the features f.
func Read(f Features) Info {
	i := Info{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Features: f}
	if bi, ok := debug.ReadBuildInfo(); ok {
		i.fill(bi.Settings)
	}
	return i
}

func (i *Info) fill(settings []debug.BuildSetting) {
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			i.Commit = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		case "CGO_ENABLED":
			i.Cgo = s.Value == "1"
		case "-tags":
			i.Tags = s.Value
		}
	}
}

// String is the text of `faster --version`: the version line, then what
// the build can do.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "faster %s", i.Version)
	var from []string
	if i.Commit != "" {
		c := i.Commit[:min(len(i.Commit), 12)]
		if i.Modified {
			c += " (modified)"
		}
		from = append(from, "commit "+c)
	}
	from = append(from, i.Go, i.Platform)
	fmt.Fprintf(&b, " (%s)\n", strings.Join(from, ", "))
	yes := map[bool]string{true: "yes", false: "no"}
	jpeg := i.JPEG
	if i.JPEGLink != "" {
		jpeg += " (" + i.JPEGLink + ")"
	}
	fmt.Fprintf(&b, "build: cgo %s; jpeg %s; backends %s; collectives %s; cuda %s",
		yes[i.Cgo], jpeg, orNone(i.Backends), orNone(i.Collectives), i.CUDA)
	if i.Tags != "" {
		fmt.Fprintf(&b, "; tags %s", i.Tags)
	}
	return b.String()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
