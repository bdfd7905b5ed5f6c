package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// needCPU skips a test of the CPU build in a build without cgo.
func needCPU(t *testing.T) {
	t.Helper()
	if !HasCPUBuild {
		t.Skip("no cgo: no CPU build of kernels.cu")
	}
}

// small are facts that make every plan stride: 2 SMs of 256 threads.
var small = Facts{SMs: 2, MaxThreadsPerBlock: 256, MaxThreadsPerSM: 256}

// bnFacts plan the BatchNorm sequences (a block per plane, a thread per
// channel) with blocks of 32 to 256 threads and grids that stride or not.
var bnFacts = []Facts{
	{SMs: 1, MaxThreadsPerBlock: 32, MaxThreadsPerSM: 32},
	{SMs: 3, MaxThreadsPerBlock: 64, MaxThreadsPerSM: 128},
	small,
	H200,
}

func plan(t *testing.T, f Facts, s Shape, items, size int64) Launch {
	t.Helper()
	l, err := f.Plan(s, items, size)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// ulps is the distance of two float32s in units in the last place (NaNs
// are 0 apart from each other, far from any number).
func ulps(a, b float32) int64 {
	if a != a || b != b {
		if a != a && b != b {
			return 0
		}
		return math.MaxInt32
	}
	return abs64(ordered(a) - ordered(b))
}

func ordered(f float32) int64 {
	u := int64(math.Float32bits(f))
	if u&0x80000000 != 0 {
		return -(u & 0x7fffffff)
	}
	return u
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// diff is the largest absolute and ulp differences of two slices.
type diff struct {
	abs  float64
	ulps int64
	at   int
}

func compare(a, b []float32) diff {
	var d diff
	for i := range a {
		if u := ulps(a[i], b[i]); u > d.ulps {
			d.ulps, d.at = u, i
		}
		if x := math.Abs(float64(a[i]) - float64(b[i])); x > d.abs {
			d.abs = x
		}
	}
	return d
}

func randn(r *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64() * scale)
	}
	return s
}

// torch runs script with Debian's Python and torch 1.13: in holds the
// input arrays, written to <name>.bin (float32, int32, uint16 or uint8,
// little-endian) and read by the script's load(name, dtype); the script
// writes its results with save(name, tensor) and torch returns them as
// raw bytes by name.
func torch(t *testing.T, script string, in map[string]any, outs ...string) map[string][]byte {
	t.Helper()
	py := testenv.PythonWith(t, "torch", "numpy")
	dir := t.TempDir()
	for name, v := range in {
		f, err := os.Create(filepath.Join(dir, name+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		if err := binary.Write(f, binary.LittleEndian, v); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	prelude := `import sys, os, numpy as np, torch
D = sys.argv[1]
def load(name, dtype):
    return torch.from_numpy(np.fromfile(os.path.join(D, name + ".bin"), dtype=dtype).copy())
def save(name, x):
    x.detach().contiguous().numpy().tofile(os.path.join(D, name + ".out"))
`
	cmd := exec.Command(py, "-c", prelude+script, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("torch: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	res := map[string][]byte{}
	for _, o := range outs {
		b, err := os.ReadFile(filepath.Join(dir, o+".out"))
		if err != nil {
			t.Fatal(err)
		}
		res[o] = b
	}
	return res
}

func f32s(b []byte) []float32 {
	s := make([]float32, len(b)/4)
	for i := range s {
		s[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return s
}

func u16s(b []byte) []uint16 {
	s := make([]uint16, len(b)/2)
	for i := range s {
		s[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return s
}

func f64s(b []byte) []float64 {
	s := make([]float64, len(b)/8)
	for i := range s {
		s[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return s
}
