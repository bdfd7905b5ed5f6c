//go:build cgo

package nvjpeg

/*
#include <stdlib.h>
#include "dl.h"
#include "nvj.h"
*/
import "C"

import "unsafe"

// nvj is nvj.c's state for one GPU (its stream and handles), in C memory.
type nvj struct{ c *C.struct_faster_nvj }

// openNVJ makes the stream and handles of GPU ordinal (after load), the
// hardware decoder's buffers allocated for batches of up to maxBatch
// images.
func openNVJ(ordinal, maxBatch int) (*nvj, error) {
	n := &nvj{(*C.struct_faster_nvj)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_faster_nvj{}))))}
	report := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(report))
	if r := C.faster_nvj_open(n.c, C.int(ordinal), C.int(maxBatch), report, 512); r != 0 {
		err := &Error{Call: C.GoString(report), Code: int(r)}
		n.close()
		return nil, err
	}
	return n, nil
}

func (n *nvj) close() {
	if n.c != nil {
		C.faster_nvj_close(n.c)
		C.free(unsafe.Pointer(n.c))
		n.c = nil
	}
}

// hasHardware reports whether the hardware backend opened.
func (n *nvj) hasHardware() bool { return n.c.hw != nil }

// stream is the stage's stream (a cudaStream_t, non-blocking), from open
// to close.
func (n *nvj) stream() unsafe.Pointer { return n.c.stream }

// uploadStream is the stream of the CPU's rows (non-blocking), from open
// to close.
func (n *nvj) uploadStream() unsafe.Pointer { return n.c.upload }

// sync waits for the stream: the work queued on it is done.
func (n *nvj) sync() error {
	report := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(report))
	if r := C.faster_nvj_sync(n.c, report, 512); r != 0 {
		return &Error{Call: C.GoString(report), Code: int(r)}
	}
	return nil
}

// decode queues nvj.c's decode of len(off) images on the stream: image
// k's bytes at data[off[k]:][:lens[k]] (data: pinned memory that must stay
// as it is until the stream is synchronised), its region roi[4k:4k+4]
// into device address dst[k] with pitch[k]; route[k] is 0 (hardware) or 1
// (hybrid) on entry and what ran on return (2: neither: status[k]
// says why). The pixels are there once sync returns.
func (n *nvj) decode(data unsafe.Pointer, off, lens []uint64, roi []int32, dst []uint64, pitch []uint64, route, status []int32) error {
	k := len(off)
	if k == 0 {
		return nil
	}
	report := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(report))
	if r := C.faster_nvj_decode(n.c, C.int(k), (*C.uchar)(data), (*C.size_t)(unsafe.Pointer(&off[0])), (*C.size_t)(unsafe.Pointer(&lens[0])),
		(*C.int)(unsafe.Pointer(&roi[0])), (*C.ulonglong)(unsafe.Pointer(&dst[0])), (*C.size_t)(unsafe.Pointer(&pitch[0])),
		(*C.int)(unsafe.Pointer(&route[0])), (*C.int)(unsafe.Pointer(&status[0])), report, 512); r != 0 {
		return &Error{Call: C.GoString(report), Code: int(r)}
	}
	return nil
}
