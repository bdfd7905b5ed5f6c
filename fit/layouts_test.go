package fit

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/source/sourcetest"
)

// `faster train --data DIR` trains on CIFAR's python batches and on
// torchvision's ImageNet layout (root/train, root/val) where they lie,
// evaluating on their test and val splits, CIFAR at its own 32×32.
func TestOpenDataTorchvisionLayouts(t *testing.T) {
	cifar := t.TempDir()
	sourcetest.WriteCIFAR10(t, cifar, 4) // batches of 4, 315, … images; test_batch 1559
	cfg := DefaultConfig()
	cfg.Data.Path, cfg.Batch = cifar, 4
	d := openValid(t, &cfg)
	c, side, trainLen, testLen, _ := d.sizes()
	if c != 3 || side != 32 || trainLen != 5*4+311*(0+1+2+3+4) || testLen != 4+311*5 {
		t.Errorf("CIFAR-10: %d channels, side %d, %d train and %d test images; want 3, 32, %d, %d", c, side, trainLen, testLen, 5*4+311*10, 4+311*5)
	}
	if len(d.names) != 10 || d.names[0] != "airplane" || !slices.Equal(d.names, d.testNames) {
		t.Errorf("CIFAR-10 classes %q, test %q", d.names, d.testNames)
	}

	root := t.TempDir()
	for split, classes := range map[string][]string{"train": {"n01", "n02"}, "val": {"n01", "n02"}} {
		for _, c := range classes {
			folder := testenv.WriteFolder(t, 1, 3)
			if err := os.MkdirAll(filepath.Join(root, split), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(folder, "c0"), filepath.Join(root, split, c)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg = DefaultConfig()
	cfg.Data.Path, cfg.Batch = root, 2
	d = openValid(t, &cfg)
	if _, _, trainLen, testLen, _ := d.sizes(); trainLen != 6 || testLen != 6 || !slices.Equal(d.names, []string{"n01", "n02"}) {
		t.Errorf("ImageNet layout: %d train, %d test images, classes %q; want 6, 6, [n01 n02]", trainLen, testLen, d.names)
	}
}
