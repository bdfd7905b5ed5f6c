package buildinfo

import (
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestString: the version line names the version, the commit (12 hex
// digits, "(modified)" for a checkout with changes), the toolchain and
// platform; the build line what the build can do.
func TestString(t *testing.T) {
	i := Info{Version: Version, Go: "go1.26.8", Platform: "linux/amd64", Features: Features{
		JPEG: "libjpeg-turbo", JPEGLink: "static", Backends: []string{"reference"}, CUDA: "no (not in this build)"}}
	i.fill([]debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"},
		{Key: "CGO_ENABLED", Value: "1"}, {Key: "-tags", Value: "faster_serveonly,faster_static"}})
	want := "faster " + Version + " (commit 0123456789ab (modified), go1.26.8, linux/amd64)\n" +
		"build: cgo yes; jpeg libjpeg-turbo (static); backends reference; collectives none; cuda no (not in this build); tags faster_serveonly,faster_static"
	if got := i.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	i = Info{Version: Version, Go: "go1.26.8", Platform: "linux/arm64", Features: Features{JPEG: "pure-go", Backends: []string{"onednn", "reference"}, Collectives: []string{"gloo"}, CUDA: "no"}}
	if got := i.String(); !strings.HasPrefix(got, "faster "+Version+" (go1.26.8, linux/arm64)\nbuild: cgo no; jpeg pure-go; backends onednn, reference; collectives gloo; cuda no") {
		t.Errorf("got %q", got)
	}
}

// TestVersionIsThePythonPackages: the binary and the wheel that carries
// it have one version.
func TestVersionIsThePythonPackages(t *testing.T) {
	b, err := os.ReadFile("../../python/pyproject.toml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^version = "([^"]+)"`).FindSubmatch(b)
	if m == nil || string(m[1]) != Version {
		t.Fatalf("python/pyproject.toml's version %q, buildinfo.Version %q", m, Version)
	}
}
