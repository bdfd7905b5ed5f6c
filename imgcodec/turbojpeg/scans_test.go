package turbojpeg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec/internal/rawimg"
	"github.com/faster-training/faster/imgcodec/jpegtest"
)

// libjpeg-turbo's progress monitor counts what the Go walk of the markers
// counts, as it reads: a scan bomb that reached it would be stopped at the
// first scan past MaxScanPasses passes over the image's blocks (scan 65 of
// a gray one), before that scan is decoded; at the limit it decodes
// (before: only scans past 1,000 were refused).
func TestScanBombBackstop(t *testing.T) {
	if _, ok := unwalked(nil); !ok {
		t.Skip("no libjpeg-turbo in a CGO_ENABLED=0 build: the pure-Go decoder has the walk only")
	}
	err, _ := unwalked(jpegtest.Progressive(64, 48, 1, 997))
	var ce *rawimg.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "too many scans: scan 65 goes over") {
		t.Fatalf("999 scans of a gray image: %v; want corrupt at scan 65", err)
	}
	if err, _ := unwalked(jpegtest.Progressive(64, 48, 1, 62)); err != nil {
		t.Fatalf("64 passes: %v", err)
	}
	if err, _ := unwalked(jpegtest.Progressive(64, 48, 3, 187)); err == nil || !strings.Contains(err.Error(), "scan 191 goes over") {
		t.Fatalf("64 passes and a third of three components: %v", err)
	}
}

// FuzzScanWalk checks the Go walk of a JPEG's markers against libjpeg-turbo
// reading the same bytes: the walk never panics, a file it lets through is
// never stopped by libjpeg's count of the same scans (it finds every scan
// libjpeg decodes), and a file it refuses does not decode (it counts no
// scan libjpeg would not reach). Seeds: the golden files and scan bombs at
// and past the limit.
func FuzzScanWalk(f *testing.F) {
	entries, _ := os.ReadDir("../testdata")
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".jpg" {
			b, err := os.ReadFile(filepath.Join("../testdata", e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	for _, c := range [][3]int{{1, 62}, {1, 63}, {3, 186}, {3, 187}, {3, 995}} {
		f.Add(jpegtest.Progressive(24, 16, c[0], c[1]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		walk := rawimg.CheckJPEGScans(data, MaxScans, false)
		if walk != nil && !errors.Is(walk, rawimg.ErrCorrupt) {
			t.Fatalf("walk: %v is not ErrCorrupt", walk)
		}
		if all := rawimg.CheckJPEGScans(data, MaxScans, true); walk != nil && all == nil {
			t.Fatalf("walking every scan lets through what the first ones refuse: %v", walk)
		}
		err, ok := unwalked(data)
		if !ok {
			return
		}
		// The walk is the cheap first check and the progress monitor the
		// backstop: on malformed marker streams (this fuzzer found one
		// whose later scans the walk does not reach, testdata/fuzz) the
		// backstop stops what the walk let through. That stop must be
		// damage, as the walk's is.
		if walk == nil && err != nil && strings.Contains(err.Error(), "too many scans") && !errors.Is(err, rawimg.ErrCorrupt) {
			t.Fatalf("libjpeg's count stops what the walk let through, and not as damage: %v", err)
		}
		if walk != nil && err == nil {
			t.Fatalf("the walk refuses what libjpeg decodes: %v", walk)
		}
	})
}
