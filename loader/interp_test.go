package loader

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestInterpolationOptions: each interpolation gives its own pixels in both
// recipes, FullDecode changes what a DCT-scaled decode would have given
// (but not Nearest's, which always decodes at full size; eval decodes at
// full size unless FastEvalDecode, which "" here sets), and an unknown
// name is refused by Open. Equality with torchvision is
// python/tests/test_interpolation.py's.
func TestInterpolationOptions(t *testing.T) {
	folder, _ := makeTree(t, 3)
	if _, err := Open(folder, Options{Interpolation: "lanczos"}); err == nil || !strings.Contains(err.Error(), "lanczos") {
		t.Fatalf("Open(Interpolation: lanczos): %v", err)
	}
	for _, tr := range []Transform{Train, Eval} {
		rows := map[string][][]byte{}
		for _, mode := range []string{"", "bilinear", "bicubic", "nearest"} {
			for _, full := range []bool{false, true} {
				// 12x12 from pictures of about 40x30: a DCT scale of 1/2 applies.
				l, err := Open(folder, Options{Transform: tr, Resolution: 12, Resize: 13, Batch: 4, Seed: 2, Layout: U8HWC,
					Interpolation: mode, FullDecode: full, FastEvalDecode: !full && tr == Eval, Shuffle: ShuffleOff})
				if err != nil {
					t.Fatal(err)
				}
				e := runEpoch(t, l, 0)
				l.Close()
				name := mode
				if full {
					name += "/full"
				}
				rows[name] = e.rows
			}
		}
		same := func(a, b string) bool { return slices.EqualFunc(rows[a], rows[b], bytes.Equal) }
		if !same("", "bilinear") || !same("/full", "bilinear/full") {
			t.Errorf("%s: the default is not bilinear", tr)
		}
		for _, pair := range [][2]string{{"bilinear", "bicubic"}, {"bilinear", "nearest"}, {"bicubic", "nearest"},
			{"bilinear", "bilinear/full"}, {"bicubic", "bicubic/full"}} {
			if same(pair[0], pair[1]) {
				t.Errorf("%s: %s and %s give the same pixels", tr, pair[0], pair[1])
			}
		}
		if !same("nearest", "nearest/full") {
			t.Errorf("%s: nearest depends on FullDecode", tr)
		}
	}
}
