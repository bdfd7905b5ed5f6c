//go:build cgo

package cuda

/*
#include <stdlib.h>
#include <string.h>
#include "twin.h"

static void *twin_p(unsigned long long a) { return (void *)(size_t)a; }
// An allocation is fenced: TWIN_FENCE bytes of TWIN_POISON before and after
// it, so a write past either end shows (twin_fence_bad), and a read there
// gives NaN (float32, float64, fp16 and bf16 alike) or -1. The buffer
// itself starts 256-byte aligned, as cuMemAlloc's.
#define TWIN_FENCE 256
#define TWIN_POISON 0xff
static unsigned long long twin_alloc(size_t n) {
	unsigned char *b = aligned_alloc(TWIN_FENCE, (n + 3 * TWIN_FENCE - 1) / TWIN_FENCE * TWIN_FENCE);
	if (!b)
		return 0;
	memset(b, TWIN_POISON, TWIN_FENCE);
	memset(b + TWIN_FENCE, 0, n);
	memset(b + TWIN_FENCE + n, TWIN_POISON, TWIN_FENCE);
	return (unsigned long long)(size_t)(b + TWIN_FENCE);
}
static void twin_free(unsigned long long a) { free((unsigned char *)(size_t)a - TWIN_FENCE); }
// twin_fence_bad: 0 when both fences of the n-byte allocation at a hold;
// else 1, *at the offset from a of the first byte changed (negative:
// before a; n or more: past its end).
static int twin_fence_bad(unsigned long long a, size_t n, long long *at) {
	const unsigned char *p = (const unsigned char *)(size_t)a;
	for (long long i = -TWIN_FENCE; i < 0; i++)
		if (p[i] != TWIN_POISON) {
			*at = i;
			return 1;
		}
	for (size_t i = n; i < n + TWIN_FENCE; i++)
		if (p[i] != TWIN_POISON) {
			*at = (long long)i;
			return 1;
		}
	return 0;
}
static void twin_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
*/
import "C"

import (
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/faster-training/faster/train"
	"github.com/faster-training/faster/train/cuda/kernels"
)

// twinMachine is the machine on the host's CPU: C memory (so an address is
// a real pointer a kernel's CPU build can use), kernels.cu's CPU build
// (kernels.LaunchCPU) and the loops of twin.c. It runs everything at once:
// nothing is queued.
type twinMachine struct {
	mu        sync.Mutex
	live      map[uint64]int // allocations and their sizes
	closed    bool
	capturing *twinGraph // between beginCapture and endCapture: the calls recorded
	// refuse, set by tests, is a call (call.String) the twin refuses
	// while it records, as the GPU refuses work it cannot hold in a graph
	// (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: a library call that
	// synchronises or allocates), or "end" for a refused end of the
	// capture (a graph that cannot be instantiated).
	refuse string
	// refuseCaptures, when above 0, limits the refusals to the first
	// that many captures (a cause that passes).
	refuseCaptures int
	// captures counts beginCapture's calls.
	captures int
}

// twinGraph is the twin's record of a step: its calls (kernel name, launch
// and 8-byte slots; convolutions and products with their buffers; memsets),
// run again in order by replay.
type twinGraph struct{ calls []call }

// errCapturing is a call the twin refuses while it records (as the GPU
// refuses it during stream capture).
func errCapturing(what string) error {
	return fmt.Errorf("cuda twin: %s while capturing a step (a CUDA graph cannot hold it)", what)
}

func (m *twinMachine) beginCapture() error {
	if m.capturing != nil {
		return errCapturing("a second capture")
	}
	m.capturing = &twinGraph{}
	m.captures++
	return nil
}

func (m *twinMachine) endCapture() (record, error) {
	g := m.capturing
	if g == nil {
		return nil, fmt.Errorf("cuda twin: endCapture without beginCapture")
	}
	m.capturing = nil
	if m.refuse == "end" && m.refusing() {
		return nil, errCapturing("an end of the capture it was told to refuse")
	}
	return g, nil
}

func (m *twinMachine) replay(r record) error {
	g, ok := r.(*twinGraph)
	if !ok || m.capturing != nil {
		return fmt.Errorf("cuda twin: replay of %T", r)
	}
	for i := range g.calls {
		if err := execCall(m, &g.calls[i]); err != nil {
			return fmt.Errorf("cuda twin: replaying call %d (%s): %w", i, g.calls[i].String(), err)
		}
	}
	return nil
}

func (m *twinMachine) dropRecord(record) {}

// refusing reports whether the capture running is one the twin refuses.
func (m *twinMachine) refusing() bool {
	return m.refuseCaptures <= 0 || m.captures <= m.refuseCaptures
}

// recorded appends c to the capture when one runs (refusing m.refuse).
func (m *twinMachine) recorded(c call) (bool, error) {
	if m.capturing == nil {
		return false, nil
	}
	if m.refuse != "" && c.String() == m.refuse && m.refusing() {
		return true, errCapturing(c.String())
	}
	m.capturing.calls = append(m.capturing.calls, c)
	return true, nil
}

// twinMemory is what the twin reports as free memory: a fixed budget, so
// that a plan made on it does not follow the build machine's load.
const twinMemory = 8 << 30

func newTwin() *twinMachine { return &twinMachine{live: map[uint64]int{}} }

func (m *twinMachine) alloc(bytes int) (uint64, error) {
	if m.capturing != nil {
		return 0, errCapturing("an allocation")
	}
	if bytes < 0 {
		return 0, fmt.Errorf("cuda twin: alloc of %d bytes", bytes)
	}
	p := uint64(C.twin_alloc(C.size_t(bytes)))
	if p == 0 {
		return 0, fmt.Errorf("cuda twin: alloc of %d bytes failed", bytes)
	}
	m.mu.Lock()
	m.live[p] = bytes
	m.mu.Unlock()
	return p, nil
}

func (m *twinMachine) free(p uint64) {
	m.mu.Lock()
	_, ok := m.live[p]
	delete(m.live, p)
	m.mu.Unlock()
	if ok {
		C.twin_free(C.ulonglong(p))
	}
}

func (m *twinMachine) copyIn(dst uint64, src unsafe.Pointer, bytes int) error {
	if m.capturing != nil {
		return errCapturing("a copy from host memory")
	}
	if bytes > 0 {
		C.twin_copy(C.twin_p(C.ulonglong(dst)), src, C.size_t(bytes))
	}
	return nil
}

func (m *twinMachine) copyOut(dst unsafe.Pointer, src uint64, bytes int) error {
	if m.capturing != nil {
		return errCapturing("a read back to host memory")
	}
	if bytes > 0 {
		C.twin_copy(dst, C.twin_p(C.ulonglong(src)), C.size_t(bytes))
	}
	return nil
}

func (m *twinMachine) copyDev(dst, src uint64, bytes int) error {
	if m.capturing != nil {
		return errCapturing("a copy of another producer's memory")
	}
	if bytes > 0 {
		C.twin_copy(C.twin_p(C.ulonglong(dst)), C.twin_p(C.ulonglong(src)), C.size_t(bytes))
	}
	return nil
}

// fence has nothing to wait for: the twin runs each call as it is made.
func (m *twinMachine) fence() error {
	if m.capturing != nil {
		return errCapturing("a wait for the stream")
	}
	return nil
}

func (m *twinMachine) zero(p uint64, bytes int) error {
	if ok, err := m.recorded(call{kind: callZero, out: p, n: bytes}); ok {
		return err
	}
	if bytes > 0 {
		C.memset(C.twin_p(C.ulonglong(p)), 0, C.size_t(bytes))
	}
	return nil
}

func (m *twinMachine) launch(name string, l kernels.Launch, args ...uint64) error {
	if ok, err := m.recorded(call{kind: callLaunch, name: name, l: l, args: slices.Clone(args)}); ok {
		return err
	}
	if err := kernels.LaunchCPU(name, l, args); err != nil {
		return err
	}
	if err := m.fences(); err != nil {
		return fmt.Errorf("cuda twin: kernel %s %w", name, err)
	}
	return nil
}

// fences checks every live allocation's fences after a call (a kernel, a
// convolution, a product), which the caller names in front of the error:
// a write past a buffer's end, on the GPU an illegal address (the context
// lost) or another buffer's bytes changed, fails the call that made it.
func (m *twinMachine) fences() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, n := range m.live {
		var at C.longlong
		if C.twin_fence_bad(C.ulonglong(p), C.size_t(n), &at) != 0 {
			return fmt.Errorf("wrote outside a buffer of %d bytes at %#x: byte %d of it changed (on the GPU: another buffer's bytes or an illegal address)", n, p, int64(at))
		}
	}
	return nil
}

func fptr(a uint64) *C.float { return (*C.float)(C.twin_p(C.ulonglong(a))) }

func u16ptr(a uint64) *C.uint16_t { return (*C.uint16_t)(C.twin_p(C.ulonglong(a))) }

func (m *twinMachine) conv(c *convShape, dir convDir, a, b, out uint64) error {
	if ok, err := m.recorded(call{kind: callConv, cs: c, dir: dir, a: a, b: b, out: out}); ok {
		return err
	}
	if err := m.convLoops(c, dir, a, b, out); err != nil {
		return err
	}
	if err := m.fences(); err != nil {
		return fmt.Errorf("cuda twin: convolution %v (direction %d) %w", *c, dir, err)
	}
	return nil
}

// convLoops runs the convolution c in direction dir on twin.c's loops.
func (m *twinMachine) convLoops(c *convShape, dir convDir, a, b, out uint64) error {
	n, ci, h, w, k, r := C.int(c.N), C.int(c.C), C.int(c.H), C.int(c.W), C.int(c.K), C.int(c.R)
	p, s, oh, ow := C.int(c.Pad), C.int(c.Stride), C.int(c.OH), C.int(c.OW)
	if c.Dtype != dtFloat {
		if dir < convFwd || dir > convBwdFilter {
			return fmt.Errorf("cuda twin: convolution direction %d", dir)
		}
		if c.NHWC {
			C.twin_conv_16_nhwc(C.int(dir), b2c(c.Dtype == dtBF16), u16ptr(a), u16ptr(b), u16ptr(out), n, ci, h, w, k, r, p, s, oh, ow)
			return nil
		}
		C.twin_conv_16(C.int(dir), b2c(c.Dtype == dtBF16), u16ptr(a), u16ptr(b), u16ptr(out), n, ci, h, w, k, r, p, s, oh, ow)
		return nil
	}
	if c.NHWC {
		return fmt.Errorf("cuda twin: a channels-last float32 convolution (ChannelsLast is for 16-bit ones)")
	}
	switch dir {
	case convFwd:
		C.twin_conv_fwd(fptr(a), fptr(b), fptr(out), n, ci, h, w, k, r, p, s, oh, ow)
	case convBwdData:
		C.twin_conv_bwd_data(fptr(a), fptr(b), fptr(out), n, ci, h, w, k, r, p, s, oh, ow)
	case convBwdFilter:
		C.twin_conv_bwd_filter(fptr(a), fptr(b), fptr(out), n, ci, h, w, k, r, p, s, oh, ow)
	default:
		return fmt.Errorf("cuda twin: convolution direction %d", dir)
	}
	return nil
}

func b2c(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func (m *twinMachine) gemm(g gemmArgs) error {
	if ok, err := m.recorded(call{kind: callGemm, g: g}); ok {
		return err
	}
	if g.In != dtFloat {
		C.twin_gemm_16(b2c(g.In == dtBF16), b2c(g.TA), b2c(g.TB), C.int(g.M), C.int(g.N), C.int(g.K), C.float(g.Alpha), u16ptr(g.A),
			C.int(g.LDA), u16ptr(g.B), C.int(g.LDB), C.float(g.Beta), fptr(g.C), C.int(g.LDC))
	} else {
		C.twin_sgemm(b2c(g.TA), b2c(g.TB), C.int(g.M), C.int(g.N), C.int(g.K), C.float(g.Alpha), fptr(g.A), C.int(g.LDA),
			fptr(g.B), C.int(g.LDB), C.float(g.Beta), fptr(g.C), C.int(g.LDC))
	}
	if err := m.fences(); err != nil {
		return fmt.Errorf("cuda twin: product %d×%d×%d %w", g.M, g.N, g.K, err)
	}
	return nil
}

// Events: the twin runs each call at once, so a mark is always passed.
func (m *twinMachine) newEvent() (unsafe.Pointer, error) { return unsafe.Pointer(new(byte)), nil }
func (m *twinMachine) recordEvent(unsafe.Pointer) error {
	if m.capturing != nil { // as the GPU machine: not inside a capture
		return errCapturing("an event record")
	}
	return nil
}
func (m *twinMachine) streamWait(unsafe.Pointer) error {
	if m.capturing != nil {
		return errCapturing("a wait for an event")
	}
	return nil
}
func (m *twinMachine) freeEvent(unsafe.Pointer) {}

// Timed events (eventTimer): the host's clock when recorded, the twin's
// calls running as they are queued.
func (m *twinMachine) newTimedEvent() (unsafe.Pointer, error) { return unsafe.Pointer(new(int64)), nil }
func (m *twinMachine) recordTimed(ev unsafe.Pointer) error {
	*(*int64)(ev) = time.Now().UnixNano()
	return nil
}
func (m *twinMachine) elapsed(start, end unsafe.Pointer) (float64, error) {
	return float64(*(*int64)(end)-*(*int64)(start)) / 1e6, nil
}

func (m *twinMachine) sync() error {
	if m.capturing != nil {
		return errCapturing("a sync")
	}
	return nil
}
func (m *twinMachine) freeMemory() (int64, error) { return twinMemory, nil }

// facts are the H200's: the twin plans the launches the GPU would run.
func (m *twinMachine) facts() kernels.Facts { return kernels.H200 }
func (m *twinMachine) device() string       { return "cuda-twin" }

// tuneChoices is empty: the twin has one implementation of each call.
func (m *twinMachine) tuneChoices() []train.TuneChoice { return nil }

func (m *twinMachine) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := range m.live {
		C.twin_free(C.ulonglong(p))
	}
	m.live, m.closed = map[uint64]int{}, true
	return nil
}

// liveBytes is the memory the twin holds (the tests' leak check).
func (m *twinMachine) liveBytes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, b := range m.live {
		n += b
	}
	return n
}
