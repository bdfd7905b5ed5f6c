//go:build linux

package serve

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/imgcodec"

	"github.com/faster-training/faster/internal/testenv"
)

// TestPythonTransforms runs python/tests/test_any_order.py (issue 40,
// "Equal to torchvision, in any order") against a `faster` binary built
// here: a torchvision transform handed to faster.Loader, mapped onto the
// loader's op list in the user's order (faster.transforms), served by
// `faster serve --spec` and compared with torchvision 0.14's own output on
// real photographs. FASTER_ANY_ORDER_N and FASTER_ANY_ORDER_SEED choose
// how many random orders and from which seed (24 from 40 by default).
func TestPythonTransforms(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	py := testenv.PythonWith(t, "numpy", "torch", "torchvision", "PIL")
	testenv.Photos(t, 4)
	tmp := t.TempDir()
	bin := testenv.FasterBinary(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-m", "unittest", "discover", "-s", filepath.Join(root, "python", "tests"), "-p", "test_any_order.py", "-v"}
	if k := os.Getenv("FASTER_PY_K"); k != "" {
		args = append(args, "-k", k)
	}
	cmd := exec.Command(py, args...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "python"), "FASTER_BIN="+bin,
		"FASTER_JPEG_BACKEND="+imgcodec.Backend, "PYTHONDONTWRITEBYTECODE=1", "OMP_NUM_THREADS=1")
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python tests failed: %v\n%s", err, out)
	}
	s := string(out)
	t.Logf("%s", s[max(0, len(s)-4000):])
	if strings.Contains(s, "skipped") && testenv.Required() {
		t.Fatalf("python tests skipped under FASTER_REQUIRE_DATA=1:\n%s", s)
	}
}
