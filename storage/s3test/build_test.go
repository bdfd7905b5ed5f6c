package s3test

import (
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// TestBuild builds (or finds cached) the versitygw binary, so that
// `make test` pays for it once, before the packages that start servers
// run in parallel.
func TestBuild(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	if !FileExists(bin) {
		t.Fatalf("%s missing after the build", bin)
	}
}
