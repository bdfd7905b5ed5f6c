//go:build cgo && !faster_serveonly && !faster_noonednn

package onednn

/*
#cgo CFLAGS: -fopenmp
#cgo LDFLAGS: -ldnnl -lgomp -lm
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Error is a failed oneDNN call.
type Error struct {
	Op     string // what was being done
	Status int    // the dnnl_status_t
	Msg    string // its name
}

func (e *Error) Error() string { return fmt.Sprintf("onednn: %s: %s", e.Op, e.Msg) }

func check(op string, st C.dnnl_status_t) error {
	if st == C.dnnl_success {
		return nil
	}
	return &Error{Op: op, Status: int(st), Msg: C.GoString(C.shim_status(st))}
}

type memDesc = C.dnnl_memory_desc_t

func dims(shape []int) (d C.dnnl_dims_t) {
	for i, v := range shape {
		d[i] = C.int64_t(v)
	}
	return d
}

func dimsPtr(d *C.dnnl_dims_t) *C.int64_t { return (*C.int64_t)(unsafe.Pointer(&d[0])) }

// newMD describes an f32 tensor of shape in plain row-major layout, or in
// whatever layout a primitive prefers when anyFormat.
func newMD(shape []int, anyFormat bool) (memDesc, error) {
	var md memDesc
	tag := C.dnnl_format_tag_t(C.dnnl_format_tag_any)
	if !anyFormat {
		switch len(shape) {
		case 1:
			tag = C.dnnl_a
		case 2:
			tag = C.dnnl_ab
		case 3:
			tag = C.dnnl_abc
		case 4:
			tag = C.dnnl_abcd
		default:
			return md, fmt.Errorf("onednn: rank %d not supported", len(shape))
		}
	}
	d := dims(shape)
	err := check("memory descriptor", C.dnnl_memory_desc_init_by_tag(&md, C.int(len(shape)), dimsPtr(&d), C.dnnl_f32, tag))
	return md, err
}

// newMDOf describes a tensor of shape with data type dt in the layout tag
// (dnnl_format_tag_any: whatever a primitive prefers).
func newMDOf(shape []int, dt C.dnnl_data_type_t, tag C.dnnl_format_tag_t) (memDesc, error) {
	var md memDesc
	d := dims(shape)
	err := check("memory descriptor", C.dnnl_memory_desc_init_by_tag(&md, C.int(len(shape)), dimsPtr(&d), dt, tag))
	return md, err
}

// layoutName is md's layout in oneDNN's tag notation ("acdb", "aBcd8b").
func layoutName(md *memDesc) string {
	var buf [64]C.char
	n := C.shim_md_layout(md, &buf[0], C.int(len(buf)))
	return C.GoStringN(&buf[0], n)
}

// mdKey identifies a memory descriptor (as a map key).
func mdKey(md *memDesc) string {
	return C.GoStringN((*C.char)(unsafe.Pointer(md)), C.int(unsafe.Sizeof(*md)))
}

func mdEqual(a, b *memDesc) bool { return C.shim_md_equal(a, b) != 0 }
func mdSize(a *memDesc) int      { return int(C.shim_md_size(a)) }

// mem is a library-allocated buffer with its descriptor.
type mem struct {
	md memDesc
	m  C.dnnl_memory_t
}

func newMem(md memDesc) (*mem, error) {
	m := &mem{md: md}
	if err := check("memory create", C.shim_memory_create(&m.m, &m.md)); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *mem) free() {
	if m != nil && m.m != nil {
		C.dnnl_memory_destroy(m.m)
		m.m = nil
	}
}

// floats views the first n floats of the buffer (C memory).
func (m *mem) floats(n int) []float32 {
	p := C.shim_data(m.m)
	if p == nil || n*4 > mdSize(&m.md) {
		panic("onednn: buffer view out of range")
	}
	return unsafe.Slice((*float32)(p), n)
}

// prim is a primitive and its descriptor.
type prim struct {
	pd      C.dnnl_primitive_desc_t
	p       C.dnnl_primitive_t
	scratch int // bytes of scratchpad it needs, passed by stream.exec
}

// newPrim creates a primitive from an operation descriptor (a pointer to
// a C struct held in Go memory for the duration of the call only).
func newPrim(op string, desc unsafe.Pointer, hint *prim) (*prim, error) {
	return newPrimAttr(op, desc, hint, C.shim_attr())
}

// newPrimReLU is newPrim with a ReLU post-op on the output.
func newPrimReLU(op string, desc unsafe.Pointer, hint *prim) (*prim, error) {
	return newPrimAttr(op, desc, hint, C.shim_attr_relu())
}

func newPrimAttr(op string, desc unsafe.Pointer, hint *prim, attr C.const_dnnl_primitive_attr_t) (*prim, error) {
	p := &prim{}
	var h C.const_dnnl_primitive_desc_t
	if hint != nil {
		h = C.const_dnnl_primitive_desc_t(hint.pd)
	}
	if err := check(op+" primitive descriptor", C.dnnl_primitive_desc_create(&p.pd, C.const_dnnl_op_desc_t(desc), attr, C.shim_engine(), h)); err != nil {
		return nil, err
	}
	if err := check(op+" primitive", C.dnnl_primitive_create(&p.p, C.const_dnnl_primitive_desc_t(p.pd))); err != nil {
		C.dnnl_primitive_desc_destroy(p.pd)
		return nil, err
	}
	md := p.md(C.DNNL_ARG_SCRATCHPAD)
	p.scratch = mdSize(&md)
	return p, nil
}

// impl names the implementation oneDNN picked ("jit:avx2", "gemm:jit").
func (p *prim) impl() string { return C.GoString(C.shim_impl(C.const_dnnl_primitive_desc_t(p.pd))) }

func newReorder(from, to *memDesc) (*prim, error) {
	p := &prim{}
	e := C.shim_engine()
	if err := check("reorder primitive descriptor", C.dnnl_reorder_primitive_desc_create(&p.pd, from, e, to, e, C.shim_attr())); err != nil {
		return nil, err
	}
	if err := check("reorder primitive", C.dnnl_primitive_create(&p.p, C.const_dnnl_primitive_desc_t(p.pd))); err != nil {
		C.dnnl_primitive_desc_destroy(p.pd)
		return nil, err
	}
	md := p.md(C.DNNL_ARG_SCRATCHPAD)
	p.scratch = mdSize(&md)
	return p, nil
}

// md returns the memory descriptor the primitive wants for argument arg
// (zero when it takes none).
func (p *prim) md(arg C.int) memDesc {
	return C.shim_query_md(C.const_dnnl_primitive_desc_t(p.pd), arg)
}

func (p *prim) free() {
	if p != nil && p.p != nil {
		C.dnnl_primitive_destroy(p.p)
		C.dnnl_primitive_desc_destroy(p.pd)
		p.p = nil
	}
}

type execArg = C.dnnl_exec_arg_t

func arg(kind C.int, m *mem) execArg { return execArg{arg: kind, memory: m.m} }

// stream executes primitives in order, waiting for each.
// bind sets the calling OS thread's OpenMP thread count to threads before
// primitives are created on it. oneDNN plans a primitive's work split (and
// so the order of its floating-point sums) for the count in force at
// creation; creating it under another count than it runs with gave results
// that differed in the last bit between the first and later runs of a
// process.
func (s *stream) bind(threads int) { C.shim_set_threads(C.int(threads)) }

type stream struct {
	s       C.dnnl_stream_t
	threads int
	// scratch is the scratchpad shared by all primitives run on this
	// stream (one at a time), grown to the largest need.
	scratch     *mem
	scratchSize int
	// bnThreads runs BatchNorm, which synchronises its threads several
	// times per call: on busy cores a descheduled thread stalls the rest.
	bnThreads int
}

func newStream(threads int) (*stream, error) {
	if err := check("engine create", C.shim_init()); err != nil {
		return nil, err
	}
	s := &stream{threads: threads, bnThreads: threads}
	if err := check("stream create", C.shim_stream_create(&s.s)); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *stream) exec(op string, p *prim, args ...execArg) error {
	return s.execThreads(op, p, s.threads, args...)
}

func (s *stream) execThreads(op string, p *prim, threads int, args ...execArg) error {
	if p.scratch > 0 {
		if s.scratchSize < p.scratch {
			s.scratch.free()
			s.scratch, s.scratchSize = nil, 0
			d := dims([]int{p.scratch})
			var md memDesc
			if err := check("scratchpad descriptor", C.dnnl_memory_desc_init_by_tag(&md, 1, dimsPtr(&d), C.dnnl_u8, C.dnnl_a)); err != nil {
				return err
			}
			m, err := newMem(md)
			if err != nil {
				return err
			}
			s.scratch, s.scratchSize = m, p.scratch
		}
		args = append(args, arg(C.DNNL_ARG_SCRATCHPAD, s.scratch))
	}
	return check(op, C.shim_execute(C.const_dnnl_primitive_t(p.p), s.s, C.int(len(args)), &args[0], C.int(threads)))
}

func (s *stream) close() {
	s.scratch.free()
	s.scratch = nil
	if s.s != nil {
		C.dnnl_stream_destroy(s.s)
		s.s = nil
	}
}

// slot converts a buffer into the layout a primitive wants, through a
// reorder and a buffer created on first need and kept.
type slot struct {
	m    *mem
	r    *prim
	from memDesc
}

func (sl *slot) get(s *stream, src *mem, want memDesc) (*mem, error) {
	if mdEqual(&src.md, &want) {
		return src, nil
	}
	if sl.m == nil || !mdEqual(&sl.from, &src.md) || !mdEqual(&sl.m.md, &want) {
		sl.free()
		m, err := newMem(want)
		if err != nil {
			return nil, err
		}
		s.bind(s.threads)
		r, err := newReorder(&src.md, &want)
		if err != nil {
			m.free()
			return nil, err
		}
		sl.m, sl.r, sl.from = m, r, src.md
	}
	if err := s.exec("reorder", sl.r, arg(C.DNNL_ARG_FROM, src), arg(C.DNNL_ARG_TO, sl.m)); err != nil {
		return nil, err
	}
	return sl.m, nil
}

func (sl *slot) free() {
	sl.m.free()
	sl.r.free()
	sl.m, sl.r = nil, nil
}

// Arguments, re-exported for the op files.
const (
	argSrc         = C.DNNL_ARG_SRC
	argDst         = C.DNNL_ARG_DST
	argWeights     = C.DNNL_ARG_WEIGHTS
	argBias        = C.DNNL_ARG_BIAS
	argDiffSrc     = C.DNNL_ARG_DIFF_SRC
	argDiffDst     = C.DNNL_ARG_DIFF_DST
	argDiffWeights = C.DNNL_ARG_DIFF_WEIGHTS
	argDiffBias    = C.DNNL_ARG_DIFF_BIAS
	argMean        = C.DNNL_ARG_MEAN
	argVariance    = C.DNNL_ARG_VARIANCE
	argScale       = C.DNNL_ARG_SCALE
	argShift       = C.DNNL_ARG_SHIFT
	argDiffScale   = C.DNNL_ARG_DIFF_SCALE
	argDiffShift   = C.DNNL_ARG_DIFF_SHIFT
	argWorkspace   = C.DNNL_ARG_WORKSPACE
	argSrc1        = C.DNNL_ARG_SRC_1
)
