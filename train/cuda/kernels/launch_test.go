package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// signatures parses kernels.cu (params): each kernel's parameters as the
// unpacking cpu.c must do ("P(0), I(1), L(2), F(3)": pointer, i32, i64,
// float).
func signatures(t *testing.T) map[string]string {
	t.Helper()
	sigs := map[string]string{}
	names, ps := params()
	for j, name := range names {
		var slots []string
		for i, q := range ps[j] {
			p := q.text
			var k string
			switch {
			case q.pointee != "":
				k = "P"
			case strings.HasPrefix(p, "i32 "):
				k = "I"
			case strings.HasPrefix(p, "i64 "):
				k = "L"
			case strings.HasPrefix(p, "float "):
				k = "F"
			default:
				t.Fatalf("kernel %s: parameter %d %q: not a pointer, i32, i64 or float", name, i, p)
			}
			slots = append(slots, fmt.Sprintf("%s(%d)", k, i))
		}
		sigs[name] = strings.Join(slots, ", ")
	}
	return sigs
}

func TestNames(t *testing.T) {
	names := Names()
	if len(names) != len(Kernels) || !slices.Contains(names, "cast_f32_bf16") || !slices.Contains(names, "bn_plane_sum") {
		t.Fatalf("Names() = %v", names)
	}
	if sigs := signatures(t); len(sigs) != len(names) {
		t.Fatalf("%d signatures parsed, %d KERNEL names", len(sigs), len(names))
	}
}

// Every KERNEL of kernels.cu is in cpu.c's dispatch table, unpacking as
// many slots as it has parameters, each by its parameter's type, and the
// table holds nothing else.
func TestDispatchTable(t *testing.T) {
	needCPU(t)
	table, sigs := dispatchTable(), signatures(t)
	for _, name := range Names() {
		got, ok := table[name]
		if !ok {
			t.Errorf("kernel %s: not in cpu.c's dispatch table", name)
			continue
		}
		if got != sigs[name] {
			t.Errorf("kernel %s: cpu.c unpacks %q, kernels.cu's signature wants %q", name, got, sigs[name])
		}
	}
	for name := range table {
		if _, ok := sigs[name]; !ok {
			t.Errorf("cpu.c dispatches %s, which kernels.cu does not define", name)
		}
	}
}

// slot packs arguments as train/cuda's Arg does.
func ptrSlot[T any](s []T) uint64 { return uint64(uintptr(unsafe.Pointer(&s[0]))) }
func i32Slot(v int) uint64        { return uint64(uint32(int32(v))) }
func i64Slot(v int) uint64        { return uint64(int64(v)) }
func f32Slot(v float32) uint64    { return uint64(math.Float32bits(v)) }

// pin pins the first element of each slice for the test's duration, so
// their addresses may go to C inside a []uint64.
func pin(t *testing.T, s ...any) {
	t.Helper()
	var p runtime.Pinner
	for _, v := range s {
		switch v := v.(type) {
		case []float32:
			p.Pin(&v[0])
		case []uint16:
			p.Pin(&v[0])
		case []int32:
			p.Pin(&v[0])
		case []float64:
			p.Pin(&v[0])
		case []uint8:
			p.Pin(&v[0])
		default:
			t.Fatalf("pin: %T", v)
		}
	}
	t.Cleanup(p.Unpin)
}

func TestLaunchCPUByName(t *testing.T) {
	needCPU(t)
	r := rand.New(rand.NewPCG(37, 40))
	in := randn(r, 10_000, 10)
	for i := 0; i < len(in); i += 31 {
		in[i] = math.Float32frombits(r.Uint32())
	}
	for _, l := range []Launch{{1, 32}, {3, 64}, {40, 256}} {
		want, got := make([]uint16, len(in)), make([]uint16, len(in))
		if err := CastF32BF16(l, in, want); err != nil {
			t.Fatal(err)
		}
		pin(t, in, got)
		if err := LaunchCPU("cast_f32_bf16", l, []uint64{ptrSlot(in), ptrSlot(got), i64Slot(len(in))}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("launch %+v: cast_f32_bf16 by name differs from CastF32BF16", l)
		}
	}

	// i32 and float slots: sgd's hyper-parameters and flags.
	w0, g := randn(r, 5000, 0.1), randn(r, 5000, 0.01)
	for _, nesterov := range []bool{false, true} {
		w, v := slices.Clone(w0), randn(r, len(w0), 0.01)
		w2, v2 := slices.Clone(w), slices.Clone(v)
		a := SGDArgs{LR: 0.1, Momentum: 0.9, WeightDecay: 5e-4, Nesterov: nesterov}
		l := Launch{4, 128}
		if err := SGD(l, w, g, v, a); err != nil {
			t.Fatal(err)
		}
		pin(t, w2, g, v2)
		if err := LaunchCPU("sgd", l, []uint64{ptrSlot(w2), ptrSlot(g), ptrSlot(v2), i64Slot(len(w2)),
			f32Slot(a.LR), f32Slot(a.Momentum), f32Slot(a.WeightDecay), i32Slot(int(b2int(nesterov))), i32Slot(0)}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(w, w2) || !slices.Equal(v, v2) {
			t.Errorf("nesterov %v: sgd by name differs from SGD", nesterov)
		}
	}
}

func b2int(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func TestLaunchCPUErrors(t *testing.T) {
	needCPU(t)
	for _, c := range []struct {
		name string
		l    Launch
		args []uint64
		want []string
	}{
		{"no_such_kernel", Launch{1, 32}, []uint64{1}, []string{"no_such_kernel", "1 arguments"}},
		{"cast_f32_bf16", Launch{1, 32}, []uint64{0, 0}, []string{"cast_f32_bf16", "takes 3", "2 given"}},
		{"sgd", Launch{1, 32}, nil, []string{"sgd", "takes 9", "0 given"}},
		{"cast_f32_bf16", Launch{1, 48}, []uint64{0, 0, 0}, []string{"cast_f32_bf16", "power-of-two"}},
		{"cast_f32_bf16", Launch{0, 32}, []uint64{0, 0, 0}, []string{"cast_f32_bf16", "grid"}},
	} {
		err := LaunchCPU(c.name, c.l, c.args)
		if err == nil {
			t.Errorf("LaunchCPU(%s, %+v, %d args): no error", c.name, c.l, len(c.args))
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("LaunchCPU(%s, %+v, %d args): %v; want it to say %q", c.name, c.l, len(c.args), err, w)
			}
		}
	}
	// n = 0 touches no memory: a valid launch with null pointers.
	if err := LaunchCPU("cast_f32_bf16", Launch{2, 32}, []uint64{0, 0, 0}); err != nil {
		t.Errorf("empty cast: %v", err)
	}
}
