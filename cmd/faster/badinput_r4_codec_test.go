package main

import (
	"os"
	"testing"

	"github.com/faster-training/faster/imgcodec/jpegtest"
)

// The codec rows of docs/badinput.md added by issue 41.
func init() {
	// 999 scans, each a few bytes and a pass over every block of the
	// image: refused from its markers (jpegscan), by pack too.
	badFixtures["jpeg-scan-bomb"] = badImage("bomb.JPEG", func(t *testing.T, p string) {
		if err := os.WriteFile(p, jpegtest.Progressive(512, 384, 3, 995), 0o644); err != nil {
			t.Fatal(err)
		}
	})
}
