package main

import (
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"
	"github.com/faster-training/faster/internal/buildinfo"
	"github.com/faster-training/faster/train/cuda"
)

// TestVersion: `faster --version` prints the version and what the build
// can do: the JPEG decoder of this build, its training backends (the
// reference backend always) and what train/cuda finds (cuda.Probe). Before: "unknown
// flag: --version".
func TestVersion(t *testing.T) {
	code, out, errs := runCLI(t, "--version")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "faster "+buildinfo.Version+" (") {
		t.Fatalf("%q", out)
	}
	for _, want := range []string{"jpeg " + imgcodec.Backend, "reference", "cuda " + cuda.Probe()} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("%q: want %q", lines[1], want)
		}
	}
}
