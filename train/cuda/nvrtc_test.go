//go:build cgo

package cuda

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/train/cuda/kernels"

	jpegkernels "github.com/faster-training/faster/gpudecode/nvjpeg/kernels"
)

// nvrtcLoaded is the NVRTC version the loader opened, or a test's failure
// (under FASTER_REQUIRE_DATA=1, as make test sets: scripts/setup.sh
// installs Debian's libnvrtc) or skip.
func nvrtcLoaded(t *testing.T) string {
	t.Helper()
	load()
	if !loaded(NVRTC) {
		testenv.Missing(t, "no NVRTC library opened (tried %s): scripts/setup.sh installs Debian's libnvrtc11.2",
			strings.Join(libraries[NVRTC].sonames, ", "))
	}
	return nvrtcVersion()
}

// The kernels the GPU runs compile with a real NVRTC — no GPU needed — for
// the architectures of the machines they are meant for (sm_90: H100, H200;
// sm_80: A100), with the backend's options, through the backend's own
// compile; and the cubin is an ELF that exports every kernel the backend
// launches, by its unmangled name (cuModuleGetFunction looks them up so),
// for that architecture. CI runs this on every change: kernels.cu and
// resize.cu are otherwise only compiled as C by gcc (the CPU twin) here.
func TestNVRTCCompilesKernels(t *testing.T) {
	ver := nvrtcLoaded(t)
	t.Logf("NVRTC %s", ver)
	for _, src := range []struct {
		name, source string
		kernels      []string
	}{
		{"kernels.cu", kernels.GPUSource(), kernels.Names()},
		{"resize.cu", jpegkernels.GPUSource(), jpegkernels.Names},
	} {
		for _, arch := range []string{"sm_80", "sm_90"} {
			t.Run(src.name+"/"+arch, func(t *testing.T) {
				opts := append(slices.Clone(nvrtcOptions), "--ptxas-options=-v")
				img, log, err := compileLog(CacheKey{Arch: arch, NVRTC: ver, Source: src.source, Options: opts})
				if err != nil {
					t.Fatalf("NVRTC %s: %v", ver, err)
				}
				checkSpills(t, log, src.kernels)
				// A cubin's e_version holds its CUDA ABI version (debug/elf
				// wants EV_CURRENT there): read a copy that says 1.
				elfImg := bytes.Clone(img)
				if len(elfImg) >= 24 {
					binary.LittleEndian.PutUint32(elfImg[20:], uint32(elf.EV_CURRENT))
				}
				f, err := elf.NewFile(bytes.NewReader(elfImg))
				if err != nil {
					t.Fatalf("the cubin (%d bytes) is no ELF: %v", len(img), err)
				}
				if sm, flags := cubinSM(img); sm != arch {
					t.Errorf("the cubin is for %s (e_flags %#x), want %s", sm, flags, arch)
				}
				syms, err := f.Symbols()
				if err != nil {
					t.Fatal(err)
				}
				funcs := map[string]bool{}
				for _, s := range syms {
					if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
						funcs[s.Name] = true
					}
				}
				if len(src.kernels) == 0 {
					t.Fatal("no kernels listed")
				}
				for _, k := range src.kernels {
					if !funcs[k] {
						t.Errorf("the cubin has no function %q (its functions: %d)", k, len(funcs))
					}
				}
			})
		}
	}
}

// A source NVRTC rejects fails the compile with NVRTC's log, its line
// numbers kernels.cu's (GPUSource's #line), not the prelude's.
func TestNVRTCReportsTheLine(t *testing.T) {
	ver := nvrtcLoaded(t)
	lines := strings.Count(kernels.Source, "\n")
	src := kernels.GPUSource() + "KERNEL broken(int n) { undeclared_name(n); }\n"
	_, err := compile(CacheKey{Arch: "sm_90", NVRTC: ver, Source: src, Options: nvrtcOptions})
	if err == nil {
		t.Fatal("a call of an undeclared function compiled")
	}
	for _, want := range []string{"nvrtcCompileProgram", fmt.Sprintf("kernels.cu(%d)", lines+1), "undeclared_name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// cubinSM is the SM a cubin is built for, from its ELF header's e_flags
// (at byte 48 of an ELF64 header): EF_CUDA_SM, the low byte, as cuobjdump
// reads it.
func cubinSM(img []byte) (string, uint32) {
	if len(img) < 52 {
		return "", 0
	}
	flags := binary.LittleEndian.Uint32(img[48:])
	return fmt.Sprintf("sm_%d", flags&0xff), flags
}

// ptxasEntry and ptxasSpills read ptxas's report (--ptxas-options=-v) of
// each kernel: "Compiling entry function 'name' for 'sm_90'", then its
// "N bytes stack frame, N bytes spill stores, N bytes spill loads".
var (
	ptxasEntry  = regexp.MustCompile(`Compiling entry function '(\w+)'`)
	ptxasSpills = regexp.MustCompile(`(\d+) bytes spill stores, (\d+) bytes spill loads`)
)

// checkSpills fails t for a kernel whose registers spill to local memory
// (each spill a round trip through the cache on every thread: a kernel
// meant to be bound by its tensors' bytes would be bound by its own), and
// for a listed kernel ptxas did not report.
func checkSpills(t *testing.T, log string, kernels []string) {
	t.Helper()
	seen := map[string]bool{}
	cur := ""
	for _, line := range strings.Split(log, "\n") {
		if m := ptxasEntry.FindStringSubmatch(line); m != nil {
			cur = m[1]
			continue
		}
		if m := ptxasSpills.FindStringSubmatch(line); m != nil && cur != "" {
			seen[cur] = true
			if m[1] != "0" || m[2] != "0" {
				t.Errorf("%s spills registers: %s", cur, strings.TrimSpace(line))
			}
		}
	}
	for _, k := range kernels {
		if !seen[k] {
			t.Errorf("ptxas reported no spills line for %s:\n%s", k, log)
		}
	}
}
