//go:build linux

package serve

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// TestPythonLayouts runs python/tests/test_layouts.py (issue 39 items 1
// and 6) against a `faster` binary built here: faster.Loader on CIFAR-10's
// python batches, torchvision's ImageNet layout (root/train, root/val,
// the raw tars beside them) and Debian's Fashion-MNIST IDX files, each
// compared with torchvision's own dataset class (classes, labels, order).
func TestPythonLayouts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	py := testenv.PythonWith(t, "numpy", "torchvision", "PIL")
	tmp := t.TempDir()
	bin := testenv.FasterBinary(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", filepath.Join(root, "python", "tests"), "-p", "test_layouts.py", "-v")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "python"), "FASTER_BIN="+bin,
		"PYTHONDONTWRITEBYTECODE=1", "OMP_NUM_THREADS=1")
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	s := string(out)
	if err != nil {
		t.Fatalf("python tests failed: %v\n%s", err, s)
	}
	t.Logf("%s", s[max(0, len(s)-3000):])
	if strings.Contains(s, "skipped") && testenv.Required() {
		t.Fatalf("python tests skipped under FASTER_REQUIRE_DATA=1:\n%s", s)
	}
}
