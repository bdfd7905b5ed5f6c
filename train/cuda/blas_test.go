package cuda

import (
	"strings"
	"testing"
)

func TestBLASWorkspaceBytes(t *testing.T) {
	for _, c := range []struct {
		arch, config string
		want         int
	}{
		{"sm_90", "", 32 << 20}, // Hopper: the H100 and H200
		{"sm_100", "", 32 << 20},
		{"sm_80", "", 4 << 20},
		{"sm_89", "", 4 << 20},
		{"", "", 4 << 20},
		{"sm_90", ":4096:8", 32 << 20}, // PyTorch's deterministic setting
		{"sm_80", ":4096:2:16:8", 4096<<10*2 + 16<<10*8},
		{"sm_90", ":16:8", 128 << 10},
	} {
		got, err := blasWorkspaceBytes(c.arch, c.config)
		if err != nil || got != c.want {
			t.Errorf("blasWorkspaceBytes(%q, %q) = %d, %v; want %d", c.arch, c.config, got, err, c.want)
		}
	}
	for _, bad := range []string{"4096:8", ":4096", ":4096:8:16", ":x:8", ":4096:0", ":-1:8", "::", ":4096:8:"} {
		if n, err := blasWorkspaceBytes("sm_90", bad); err == nil || !strings.Contains(err.Error(), blasWorkspaceEnv) {
			t.Errorf("config %q: %d, %v; want an error naming %s", bad, n, err, blasWorkspaceEnv)
		}
	}
}

func TestCUBLASStatusNames(t *testing.T) {
	// Every status cublas_api.h names is in consts_dnn.h (so the probe
	// checks its value) and named in errors by that name.
	n := 0
	for name, v := range dnnConsts {
		if !strings.HasPrefix(name, "CUBLAS_STATUS_") {
			continue
		}
		n++
		if got := cublasStatusName(v); got != name {
			t.Errorf("cublasStatusName(%d) = %q, want %q", v, got, name)
		}
	}
	if n != 10 {
		t.Errorf("%d cuBLAS statuses in consts_dnn.h, want cublas_api.h's 10", n)
	}
	if got := cublasStatusName(99); got != "cublasStatus" {
		t.Errorf("an unknown status is %q", got)
	}
}
