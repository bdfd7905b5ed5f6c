//go:build cgo

package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/traintest"
)

// The GPU machine's convolutions and products (dnn: gpu.c's descriptors,
// algorithm choice, workspaces and calls) run here against stand-ins of
// libcudnn.so.9 and libcublas.so.13 built by gcc (testdata/standin_dnn.c:
// the real calls' semantics over host memory, every argument checked
// against the descriptors, twin.c's arithmetic). A twin whose conv and
// gemm go through dnn must then train exactly as the twin: the same bits,
// which holds only if gpu.c passes every descriptor, pointer, leading
// dimension, algorithm and workspace where the libraries take them.
func TestDNNStandIns(t *testing.T) {
	if os.Getenv("FASTER_CUDA_DNN_CHILD") == "1" {
		dnnChild(t)
		return
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	standin, err := os.ReadFile("testdata/standin_dnn.c")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(?:int |const char \*)(\w+)\(`).FindAllStringSubmatch(string(standin), -1) {
		defined[m[1]] = true
	}
	twinC, err := filepath.Abs("twin.c")
	if err != nil {
		t.Fatal(err)
	}
	for l, lib := range libraries {
		var src strings.Builder
		src.WriteString(stubPrelude)
		for _, d := range Decls {
			if d.Lib != Library(l) || defined[d.Symbol] {
				continue
			}
			ret := "return 0;"
			if strings.HasPrefix(d.C, "const char *") {
				ret = `return "stub";`
			}
			fmt.Fprintf(&src, "%s { %s }\n", d.C, ret)
		}
		stubs := filepath.Join(dir, lib.name+".c")
		if err := os.WriteFile(stubs, []byte(src.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-shared", "-fPIC", "-w", "-O1", "-o", filepath.Join(dir, lib.sonames[len(lib.sonames)-1]), stubs}
		switch Library(l) {
		case CUDNN:
			args = append(args, "-DSTANDIN_CUDNN", `-DTWIN_C="`+twinC+`"`, "testdata/standin_dnn.c")
		case CUBLAS:
			args = append(args, "-DSTANDIN_CUBLAS", `-DTWIN_C="`+twinC+`"`, "testdata/standin_dnn.c")
		case NCCL:
			args = append(args, "-DSTANDIN_NCCL", `-DTWIN_C="`+twinC+`"`, "testdata/standin_dnn.c")
		}
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", lib.name, err, out)
		}
	}
	out := inChild(t, "TestDNNStandIns", "FASTER_CUDA_DNN_CHILD", dir, "-test.v")
	if !strings.Contains(string(out), "--- PASS: TestDNNStandIns") {
		t.Fatalf("the child did not pass:\n%s", out)
	}
	t.Logf("child:\n%s", out)
}

// standInMachine is the twin with dnn's convolutions and products.
type standInMachine struct {
	*twinMachine
	dnn
}

func (m *standInMachine) do(f func() error) error    { return f() }
func (m *standInMachine) dnnOf() *dnn                { return &m.dnn }
func (m *standInMachine) ncclStream() unsafe.Pointer { return nil }

// conv and gemm check every allocation's fences after the library's call,
// as the twin's loops do: a workspace said to be larger than it is (the
// stand-ins write over all of it) fails the call.
func (m *standInMachine) conv(c *convShape, dir convDir, a, b, out uint64) error {
	if err := m.dnn.conv(c, dir, a, b, out); err != nil {
		return err
	}
	if err := m.fences(); err != nil {
		return fmt.Errorf("cuDNN stand-in: convolution %v (direction %d) %w", *c, dir, err)
	}
	return nil
}
func (m *standInMachine) gemm(g gemmArgs) error {
	if err := m.dnn.gemm(g); err != nil {
		return err
	}
	if err := m.fences(); err != nil {
		return fmt.Errorf("cuBLAS stand-in: product %d×%d×%d %w", g.M, g.N, g.K, err)
	}
	return nil
}
func (m *standInMachine) tuneChoices() []train.TuneChoice { return m.dnn.tuneChoices() }
func (m *standInMachine) close() error {
	m.releaseWorkspace()
	return m.twinMachine.close()
}

func openStandIn(t *testing.T, o train.BackendOptions) *Backend {
	t.Helper()
	if _, err := checkOptions(o); err != nil {
		t.Fatal(err)
	}
	m := &standInMachine{twinMachine: newTwin()}
	m.dnn = dnn{host: m, autotune: o.Autotune, math: cudnnDefaultMath, algos: map[string]algo{}}
	if _, err := m.dnn.open(); err != nil {
		t.Fatal(err)
	}
	n, err := blasWorkspaceBytes("", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.dnn.setBLASWorkspace(n); err != nil {
		t.Fatal(err)
	}
	b := newBackend(m, o)
	t.Cleanup(func() { b.Close() })
	return b
}

// dnnChild runs in the child process, where the stand-ins are the
// libraries.
func dnnChild(t *testing.T) {
	if !loaded(CUDNN) || !loaded(CUBLAS) {
		t.Fatalf("stand-ins not loaded: %s", describe(load(), false))
	}
	t.Run("layers", func(t *testing.T) { traintest.RunLayers(t, openStandIn(t, train.BackendOptions{})) })
	// The layout timings' plumbing: shapes noted, both layouts ranked.
	t.Run("layouts", func(t *testing.T) {
		for _, p := range []train.Precision{train.Float32, train.BFloat16} {
			convLayouts(t, func(o train.BackendOptions) *Backend { return openStandIn(t, o) }, p, []layoutNet{{
				name: "small-thinnet", n: 4, c: 1, h: 10, w: 10,
				build: func(b train.Backend) (train.Layer, error) { return train.NewThinNet(b, traintest.SmallThinNet(), 1) },
			}})
		}
	})
	t.Run("torch-step", func(t *testing.T) { traintest.RunTorchStep(t, openStandIn(t, train.BackendOptions{})) })
	// NCCL at world size 1: the unique id reaches ncclCommInitRank by value
	// (the stand-in checks its 128 bytes), the all-reduce runs in place.
	t.Run("nccl", func(t *testing.T) {
		b := openStandIn(t, train.BackendOptions{})
		id, err := NewNCCLID()
		if err != nil {
			t.Fatal(err)
		}
		c, err := b.NCCL(1, 0, id)
		if err != nil {
			t.Fatal(err)
		}
		x, err := b.NewTensor(3, 5)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Release()
		in := make([]float32, 15)
		for i := range in {
			in[i] = float32(i) - 7.5
		}
		if err := x.Write(in); err != nil {
			t.Fatal(err)
		}
		if err := c.AllReduceSum(x); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, 15)
		if err := x.Read(got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, in) {
			t.Errorf("a sum over one rank changed the values: %v", got)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		id[100]++
		// The refusal carries NCCL's last error (which step failed), not
		// only ncclGetErrorString's words.
		if _, err := b.NCCL(1, 0, id); err == nil || !strings.Contains(err.Error(), "ncclCommInitRank") ||
			!strings.Contains(err.Error(), "invalid argument: the unique id differs at byte 100") {
			t.Errorf("another id: %v, want ncclCommInitRank's refusal with NCCL's last error", err)
		}
		if _, err := twinBackend(t).NCCL(1, 0, id); err == nil {
			t.Error("the twin opened NCCL")
		}
	})
	// DDP at world size 1 through the backend's own all-reduce (NCCL on
	// the stand-in), ZeroGrad on the device: the single run's bits.
	t.Run("ddp-nccl", func(t *testing.T) {
		ddpOneRank(t, openStandIn(t, train.BackendOptions{}), &ncclBackend{openStandIn(t, train.BackendOptions{})}, 0)
	})
	// Native bf16 and fp16: 16-bit descriptors with float compute and
	// tensor-op math, cublasGemmEx; the twin's arithmetic, so the same bits.
	// Channels-last too (cuDNN NHWC descriptors, the casts moving the
	// values): the same bits as the twin's channels-first run.
	for _, run := range []struct {
		p    train.Precision
		nhwc bool
	}{{train.BFloat16, false}, {train.Float16, false}, {train.BFloat16, true}, {train.Float16, true}} {
		name := "trainer-" + run.p.String()
		if run.nhwc {
			name += "-nhwc"
		}
		t.Run(name, func(t *testing.T) {
			o := train.BackendOptions{Precision: run.p}
			so := o
			so.ChannelsLast = run.nhwc
			got := trainRun(t, openStandIn(t, so), 1, "", "")
			tw, err := OpenTwin(o)
			if err != nil {
				t.Fatal(err)
			}
			defer tw.Close()
			want := trainRun(t, tw, 1, "", "")
			nearLosses(t, got.losses, want.losses, 0)
			near(t, "weights", got.weights, want.weights, 0)
		})
	}
	for _, autotune := range []bool{false, true} {
		t.Run(fmt.Sprintf("trainer-autotune-%v", autotune), func(t *testing.T) {
			b := openStandIn(t, train.BackendOptions{Autotune: autotune})
			got := trainRun(t, b, 2, "", "")
			want := trainRun(t, twinBackend(t), 2, "", "")
			nearLosses(t, got.losses, want.losses, 0)
			near(t, "weights", got.weights, want.weights, 0)
			near(t, "momentum", got.velocity, want.velocity, 0)
			choices := b.TuneChoices()
			if autotune != (len(choices) > 0) {
				t.Fatalf("autotune %v: %d choices", autotune, len(choices))
			}
			for _, c := range choices {
				if c.Chosen != "algo 1" || len(c.Candidates) != 3 || c.Candidates[0].Err == "" || !strings.Contains(c.Candidates[1].Err, "workspace") ||
					c.Candidates[2].Seconds != 0.5e-3 {
					t.Errorf("%s: chose %q of %+v; want algo 1, algo 0 refused, algo 2 over the workspace, algo 1 timed 0.5 ms", c.Op, c.Chosen, c.Candidates)
				}
			}
			// SmallThinNet's 4 convolution shapes × 3 directions, each
			// chosen once over 8 steps, less the first layer's backward
			// data (no input gradient is asked of it).
			if autotune && len(choices) != 11 {
				t.Errorf("%d choices, want 11 (4 shapes × 3 directions − 1)", len(choices))
			}
		})
	}
}
