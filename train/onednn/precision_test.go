//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/faster-training/faster/train"
)

// roundArith rounds v to p by arithmetic (round to nearest, ties to even):
// bf16 has 8 significant bits and float's range, fp16 11 bits, subnormals
// below 2^-14 and ±Inf from 65520 on.
func roundArith(p train.Precision, v float32) float32 {
	f := float64(v)
	if f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return v
	}
	bits, minExp, maxFinite := 8, -126, float64(math.MaxFloat32)
	if p == train.Float16 {
		bits, minExp, maxFinite = 11, -14, 65504
	}
	_, e := math.Frexp(f)
	q := math.Ldexp(1, max(e-1, minExp)-(bits-1))
	r := math.RoundToEven(f/q) * q
	if math.Abs(r) > maxFinite {
		return float32(math.Inf(int(math.Copysign(1, f))))
	}
	return float32(r)
}

// The C rounding (vector and scalar paths: lengths not a multiple of 8,
// chunks over two threads) against arithmetic rounding, on random bit
// patterns and on edge cases: ties, the fp16 overflow boundary,
// subnormals, NaN, Inf, signed zero.
func TestRound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 1<<21+5) // over two threads
	for i := range src {
		src[i] = math.Float32frombits(rng.Uint32())
		if i%3 == 0 { // values in fp16's range, subnormals included
			src[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-25))
		}
	}
	copy(src, []float32{0, float32(math.Copysign(0, -1)), 1 + 0x1p-8, 1 + 3*0x1p-8, 1 + 0x1p-11, 1 + 3*0x1p-11,
		65504, 65519, 65520, -65520, 1e-7, 0x1p-25, 3 * 0x1p-25, 0x1p-149, math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())})
	for _, p := range []train.Precision{train.BFloat16, train.Float16} {
		for _, threads := range []int{1, 2} {
			dst := make([]float32, len(src))
			roundFloats(p, dst, src, threads)
			bad := 0
			for i, v := range src {
				want := roundArith(p, v)
				got := dst[i]
				if math.Float32bits(got) != math.Float32bits(want) && !(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) {
					if bad++; bad < 10 {
						t.Errorf("%v of %g (%#08x): %g (%#08x), want %g (%#08x)", p, v, math.Float32bits(v), got, math.Float32bits(got), want, math.Float32bits(want))
					}
				}
			}
			// In place.
			in := append([]float32(nil), src...)
			roundFloats(p, in, in, threads)
			for i := range in {
				if math.Float32bits(in[i]) != math.Float32bits(dst[i]) && !math.IsNaN(float64(in[i])) {
					t.Fatalf("%v in place differs at %d", p, i)
				}
			}
		}
	}
}

// BenchmarkRound times the rounding of one ThinNet activation tensor
// (64×32×26×26 floats; one thread per Mi floats at most).
func BenchmarkRound(b *testing.B) {
	src := make([]float32, 64*32*26*26)
	for i := range src {
		src[i] = float32(i%1000) * 0.001
	}
	dst := make([]float32, len(src))
	for _, p := range []train.Precision{train.BFloat16, train.Float16} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%v/threads=%d", p, threads), func(b *testing.B) {
				b.SetBytes(int64(4 * len(src)))
				for range b.N {
					roundFloats(p, dst, src, threads)
				}
			})
		}
	}
}

// Implementation names oneDNN 2.6 and 3.x report: only a bf16 ISA counts
// as native.
func TestBF16ISA(t *testing.T) {
	for impl, want := range map[string]bool{
		"jit_bf16:avx512_core_bf16": true,
		"brg:avx512_core_amx":       true,
		"brgconv:avx512_core_bf16":  true,
		"jit_bf16:avx512_core":      false, // oneDNN's emulation on AVX-512 without bf16
		"jit:avx2":                  false,
		"gemm:jit":                  false,
		"?":                         false,
	} {
		if got := bf16ISA(impl); got != want {
			t.Errorf("bf16ISA(%q) = %v, want %v", impl, got, want)
		}
	}
}

// On a CPU whose bf16 instructions oneDNN may not use (DNNL_MAX_CPU_ISA
// below AVX512_CORE_BF16, as on AVX-512 CPUs without them), bf16 is not
// native even though oneDNN creates an emulating bf16 convolution; where
// the CPU has them and nothing caps the ISA, it is. The probe runs in a
// child process, as oneDNN reads the cap once.
func TestNativeBF16NeedsBF16ISA(t *testing.T) {
	if os.Getenv("FASTER_BF16_PROBE_CHILD") == "1" {
		if _, err := newStream(1); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("native=%v\n", nativeBF16())
		return
	}
	probe := func(env ...string) string {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestNativeBF16NeedsBF16ISA$", "-test.count", "1")
		cmd.Env = append(append(os.Environ(), "FASTER_BF16_PROBE_CHILD=1"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("probe %v: %v\n%s", env, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "native="); ok {
				return v
			}
		}
		t.Fatalf("probe %v printed no result:\n%s", env, out)
		return ""
	}
	for _, isa := range []string{"AVX512_CORE_VNNI", "AVX512_CORE", "AVX2"} {
		if got := probe("DNNL_MAX_CPU_ISA=" + isa); got != "false" {
			t.Errorf("with DNNL_MAX_CPU_ISA=%s: native bf16 = %s, want false", isa, got)
		}
	}
	if cpu.X86.HasAVX512BF16 {
		if got := probe("DNNL_MAX_CPU_ISA=ALL"); got != "true" {
			t.Errorf("the CPU has AVX512_BF16 and the ISA is not capped: native bf16 = %s, want true", got)
		}
	}
}
