package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec/jpegtest"
)

// The codec and WebDataset-name rows of docs/badinput.md added by issue
// 41.
func init() {
	// 999 scans, each a few bytes and a pass over every block of the
	// image: refused from its markers (jpegscan), by pack too.
	badFixtures["jpeg-scan-bomb"] = badImage("bomb.JPEG", func(t *testing.T, p string) {
		if err := os.WriteFile(p, jpegtest.Progressive(512, 384, 3, 995), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	// Files named café.jpg, 日本.jpg, "my photo.jpg", .jpg and a
	// 150-byte name, packed into WebDataset shards (before: pack failed,
	// "USTAR cannot encode Name").
	badFixtures["wds-non-ascii-names"] = func(t *testing.T) badFixture {
		root := writeFolder(t, 2, 5)
		for i, name := range []string{"café.jpg", "日本.jpg", "my photo.jpg", strings.Repeat("x", 146) + ".jpg", ".jpg"} {
			old := filepath.Join(root, "c0", "0"+string(rune('0'+i))+".jpg")
			if err := os.Rename(old, filepath.Join(root, "c0", name)); err != nil {
				t.Fatal(err)
			}
		}
		dir := filepath.Join(t.TempDir(), "shards")
		if code, _, errs := runCLI(t, "pack", root, dir, "--shards", "2", "--format", "wds"); code != 0 {
			t.Fatalf("pack --format wds: exit %d: %s", code, errs)
		}
		return badFixture{data: dir}
	}
}
