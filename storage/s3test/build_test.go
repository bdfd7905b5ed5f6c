package s3test

import (
	"os"
	"testing"
)

// TestBuild builds (or finds cached) the versitygw binary, so that
// `make test` pays for it once, before the packages that start servers
// run in parallel.
func TestBuild(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		if os.Getenv("FASTER_REQUIRE_DATA") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if !FileExists(bin) {
		t.Fatalf("%s missing after the build", bin)
	}
}
