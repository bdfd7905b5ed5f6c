//go:build cgo

package nvjpeg

/*
#include <stdlib.h>
#include "dl.h"

static int nvj_malloc(unsigned long long *p, size_t n) {
	void *v = NULL;
	int r = faster_nvj_p_cudaMalloc(&v, n);
	*p = (unsigned long long)(size_t)v;
	return r;
}
static int nvj_free(unsigned long long p) { return faster_nvj_p_cudaFree((void *)(size_t)p); }
static int nvj_host_alloc(void **p, size_t n) { return faster_nvj_p_cudaHostAlloc(p, n, FASTER_cudaHostAllocDefault); }
static int nvj_free_host(void *p) { return faster_nvj_p_cudaFreeHost(p); }

// nvj_htod_async queues a copy of n bytes of host memory src to dst on
// stream; src (pinned) must stay as it is until the stream is
// synchronised.
static int nvj_htod_async(void *stream, unsigned long long dst, const void *src, size_t n) {
	return faster_nvj_p_cudaMemcpyAsync((void *)(size_t)dst, src, n, FASTER_cudaMemcpyHostToDevice, stream);
}

// nvj_copy_sync copies n bytes (kind: cudaMemcpyHostToDevice or
// DeviceToHost) on stream, after the work queued there, and waits for it:
// the host memory (the caller's, pageable) is done with on return. call
// names the failing call.
static int nvj_copy_sync(void *stream, void *dst, const void *src, size_t n, int kind, const char **call) {
	*call = "cudaMemcpyAsync";
	int r = faster_nvj_p_cudaMemcpyAsync(dst, src, n, kind, stream);
	if (r != 0)
		return r;
	*call = "cudaStreamSynchronize";
	return faster_nvj_p_cudaStreamSynchronize(stream);
}
static int nvj_upload(void *stream, unsigned long long dst, const void *src, size_t n, const char **call) {
	return nvj_copy_sync(stream, (void *)(size_t)dst, src, n, FASTER_cudaMemcpyHostToDevice, call);
}
static int nvj_download(void *stream, void *dst, unsigned long long src, size_t n, const char **call) {
	return nvj_copy_sync(stream, dst, (const void *)(size_t)src, n, FASTER_cudaMemcpyDeviceToHost, call);
}
static int nvj_ipc_handle(void *h, unsigned long long p) { return faster_nvj_p_cudaIpcGetMemHandle(h, (void *)(size_t)p); }
static int nvj_set_device(int d) { return faster_nvj_p_cudaSetDevice(d); }
static const char *nvj_err(int r) { return faster_nvj_p_cudaGetErrorString(r); }
static int nvj_version(int *v) { return faster_nvj_p_cudaRuntimeGetVersion(v); }
static int nvj_property(int t, int *v) { return faster_nvj_p_nvjpegGetProperty(t, v); }
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/gpudecode/nvjpeg/kernels"
	"github.com/faster-training/faster/train/cuda"
)

// Decoder is one GPU's nvJPEG decoder: its handles, its stream, its
// kernels, its scratch memory (the decoded regions, the tables) and the
// batch buffers it gave out. Every copy, decode and kernel of a batch is
// queued on the decoder's own stream, made with cudaStreamNonBlocking:
// it does not wait for the legacy default stream nor for a trainer's
// stream on the same GPU, and a batch ends with that stream's
// synchronisation, never the device's. DecodeBatch is for one goroutine
// at a time; Upload and Download may run beside each other and beside
// DecodeBatch (the fallback's and the CPU share's workers), not beside
// Close; Alloc, Free and Close may be called from any. Upload's copies,
// into rows the batch's work does not write, go on a second stream of
// the decoder's, so a row the CPU made does not wait for the batch the
// GPU decodes beside it; Download's on the batch's stream, after its
// work.
type Decoder struct {
	ordinal int
	dev     *cuda.Device
	fh, fu8 *cuda.Function
	ff32    *cuda.Function
	stream  unsafe.Pointer // the stage's stream (nvj.c's), from Open to Close
	upload  unsafe.Pointer // Upload's stream (nvj.c's), from Open to Close

	mu      sync.Mutex // guards what follows
	n       *nvj
	jpegs   hostMem // the batch's JPEGs, copied: nvJPEG reads them while the stream runs
	tables  hostMem // the kernels' descriptors, tables and LUT, staged for one copy
	scratch devMem  // decoded regions
	params  devMem  // descriptors, tables, LUT, the horizontal pass's rows
	live    map[*Buffer]bool
	closed  bool
}

// devMem is device memory that grows.
type devMem struct {
	ptr uint64
	cap int
}

// hostMem is pinned host memory (cudaHostAlloc) that grows: what the
// stream reads from the host, left as it is until the stream is
// synchronised (the batch's end).
type hostMem struct {
	p   unsafe.Pointer
	cap int
}

// Buffer is device memory a Decoder gave out (Alloc): batch rows.
type Buffer struct {
	ptr  uint64
	size int
}

// Size is the buffer's length in bytes.
func (b *Buffer) Size() int { return b.size }

// Ptr is the buffer's device address (a CUdeviceptr of the decoder's
// GPU, in its primary context).
func (b *Buffer) Ptr() uint64 { return b.ptr }

func cudaErr(call string, r C.int) error {
	if r == 0 {
		return nil
	}
	return &Error{Call: call + ": " + C.GoString(C.nvj_err(r)), Code: int(r)}
}

// do runs f on a locked thread with the decoder's GPU current
// (cudaSetDevice holds for the calling thread only).
func (d *Decoder) do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cudaErr(fmt.Sprintf("cudaSetDevice(%d)", d.ordinal), C.nvj_set_device(C.int(d.ordinal))); err != nil {
		return err
	}
	return f()
}

// Probe says what this machine offers the GPU decode: the libraries
// opened and their versions, or why not.
func Probe() string {
	a, err := load()
	if err != nil {
		return err.Error()
	}
	var rt, maj, min C.int
	C.nvj_version(&rt)
	C.nvj_property(0, &maj) // libraryPropertyType MAJOR_VERSION = 0 (library_types.h)
	C.nvj_property(1, &min) // MINOR_VERSION = 1
	var sos []string
	for _, x := range a {
		if x.Err == "" {
			sos = append(sos, x.Soname)
		}
	}
	return fmt.Sprintf("opened %v: nvJPEG %d.%d, CUDA runtime %d", sos, maj, min, rt)
}

// Open opens GPU o.Ordinal for decoding: the CUDA driver and NVRTC (train/cuda,
// for the kernels), nvJPEG and the CUDA runtime (dlopen by soname), the
// decoder's stream, the hardware and hybrid backends, and the kernels
// compiled by NVRTC. Its error names every library tried and why each
// failed.
func Open(o Options) (*Decoder, error) {
	if o.Ordinal < 0 {
		return nil, fmt.Errorf("nvjpeg: GPU %d: want an index ≥ 0", o.Ordinal)
	}
	_, lerr := load()
	dev, derr := cuda.Open(cuda.Options{Ordinal: o.Ordinal, CacheDir: o.CacheDir, NoCache: o.NoCache})
	if lerr != nil || derr != nil {
		if dev != nil {
			dev.Close()
		}
		return nil, &OpenError{Ordinal: o.Ordinal, Errs: []error{lerr, derr}}
	}
	d := &Decoder{ordinal: o.Ordinal, dev: dev, live: map[*Buffer]bool{}}
	maxBatch := o.MaxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	n, err := openNVJ(o.Ordinal, maxBatch)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.n, d.stream, d.upload = n, n.stream(), n.uploadStream()
	m, err := dev.Compile(kernels.GPUSource())
	if err == nil {
		d.fh, err = m.Function("resize_h")
	}
	if err == nil {
		d.fu8, err = m.Function("resize_v_u8")
	}
	if err == nil {
		d.ff32, err = m.Function("resize_v_f32")
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("nvjpeg: the resize kernels: %w", err)
	}
	return d, nil
}

// Device names the decoder's GPU: "cuda:N".
func (d *Decoder) Device() string { return fmt.Sprintf("cuda:%d", d.ordinal) }

// Alloc gives n bytes of device memory, the caller's until Free (Close
// frees what is left).
func (d *Decoder) Alloc(n int) (*Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("nvjpeg: decoder closed")
	}
	b := &Buffer{size: n}
	var p C.ulonglong
	if err := d.do(func() error { return cudaErr(fmt.Sprintf("cudaMalloc(%d)", n), C.nvj_malloc(&p, C.size_t(n))) }); err != nil {
		return nil, err
	}
	b.ptr = uint64(p)
	d.live[b] = true
	return b, nil
}

// Free gives b back.
func (d *Decoder) Free(b *Buffer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.live[b] {
		return errors.New("nvjpeg: free of a buffer this decoder did not give (or twice)")
	}
	delete(d.live, b)
	return d.do(func() error { return cudaErr("cudaFree", C.nvj_free(C.ulonglong(b.ptr))) })
}

// IPCHandle returns b's cudaIpcMemHandle_t (cudaIpcGetMemHandle): what
// another process on the same GPU opens with cudaIpcOpenMemHandle to read
// b's bytes (package serve's device ring).
func (d *Decoder) IPCHandle(b *Buffer) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.live[b] {
		return nil, errors.New("nvjpeg: IPC handle of a buffer this decoder did not give (or freed)")
	}
	var h []byte
	err := d.do(func() (err error) {
		h, err = ipcHandle(b.ptr)
		return err
	})
	return h, err
}

// ipcHandle is cudaIpcGetMemHandle of device address ptr (on the current
// device), as its IPCHandleBytes bytes.
func ipcHandle(ptr uint64) ([]byte, error) {
	h := make([]byte, IPCHandleBytes)
	if err := cudaErr("cudaIpcGetMemHandle", C.nvj_ipc_handle(unsafe.Pointer(&h[0]), C.ulonglong(ptr))); err != nil {
		return nil, err
	}
	return h, nil
}

// Live is the buffers given and not freed.
func (d *Decoder) Live() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.live)
}

// Upload copies host bytes to b at byte offset off (a row the CPU made,
// which no work queued on the decoder's stream writes): on the upload
// stream, done when it returns.
func (d *Decoder) Upload(b *Buffer, off int, host []byte) error {
	if off < 0 || off+len(host) > b.size {
		return fmt.Errorf("nvjpeg: upload of %d bytes at %d into %d", len(host), off, b.size)
	}
	if len(host) == 0 {
		return nil
	}
	return d.do(func() error {
		var call *C.char
		r := C.nvj_upload(d.upload, C.ulonglong(b.ptr+uint64(off)), unsafe.Pointer(&host[0]), C.size_t(len(host)), &call)
		return cudaErr(C.GoString(call)+" to the device", r)
	})
}

// Download copies b's bytes from offset off into host (tests, checks):
// on the decoder's stream, after the work queued there (a batch's rows
// included), and done when it returns.
func (d *Decoder) Download(host []byte, b *Buffer, off int) error {
	if off < 0 || off+len(host) > b.size {
		return fmt.Errorf("nvjpeg: download of %d bytes at %d from %d", len(host), off, b.size)
	}
	if len(host) == 0 {
		return nil
	}
	return d.do(func() error {
		var call *C.char
		r := C.nvj_download(d.stream, unsafe.Pointer(&host[0]), C.ulonglong(b.ptr+uint64(off)), C.size_t(len(host)), &call)
		return cudaErr(C.GoString(call)+" to the host", r)
	})
}

// grow makes m at least n bytes (on d's thread, its GPU current): at most
// a few times a run, as it doubles (cudaFree may wait for the whole
// device). The stream has nothing queued that uses m: the last batch's
// end waited for it, and this batch's work that uses m is queued after.
func (d *Decoder) grow(m *devMem, n int) error {
	if m.cap >= n {
		return nil
	}
	n = max(n, 2*m.cap, 1<<20)
	if m.ptr != 0 {
		C.nvj_free(C.ulonglong(m.ptr))
		m.ptr, m.cap = 0, 0
	}
	var p C.ulonglong
	if err := cudaErr(fmt.Sprintf("cudaMalloc(%d) of scratch", n), C.nvj_malloc(&p, C.size_t(n))); err != nil {
		return err
	}
	m.ptr, m.cap = uint64(p), n
	return nil
}

// grow makes m at least n bytes, at least least (as devMem's grow).
func (m *hostMem) grow(n, least int) error {
	if m.cap >= n {
		return nil
	}
	n = max(n, 2*m.cap, least)
	if m.p != nil {
		C.nvj_free_host(m.p)
		m.p, m.cap = nil, 0
	}
	if err := cudaErr(fmt.Sprintf("cudaHostAlloc(%d)", n), C.nvj_host_alloc(&m.p, C.size_t(n))); err != nil {
		return err
	}
	m.cap = n
	return nil
}

// release frees m's memory (cudaFreeHost), leaving m empty.
func (m *hostMem) release() error {
	if m.p == nil {
		return nil
	}
	err := cudaErr("cudaFreeHost", C.nvj_free_host(m.p))
	m.p, m.cap = nil, 0
	return err
}

// at is m's bytes from off on.
func (m *hostMem) at(off int) unsafe.Pointer { return unsafe.Add(m.p, off) }

const align = 256

func roundUp(n int) int { return (n + align - 1) / align * align }

// DecodeBatch decodes jobs into dst: each JPEG's Crop by nvJPEG (the
// hardware backend where CanDecode and nvJPEG allow, else the hybrid
// one) into scratch, then resampled, flipped and written as rows by the
// kernels, all queued on the decoder's stream. The images routed CPU
// (Result) are left for the caller, who decodes them and writes their
// rows with Upload. It returns when the rows are written: it ends with
// cudaStreamSynchronize, so a reader on any stream, or in another
// process, sees them.
func (d *Decoder) DecodeBatch(jobs []Job, dst *Buffer, rows Rows) (Result, error) {
	res := Result{Routes: make([]Route, len(jobs)), Why: make([]string, len(jobs))}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return res, errors.New("nvjpeg: decoder closed")
	}
	if !d.live[dst] {
		return res, errors.New("nvjpeg: destination is not this decoder's buffer")
	}
	elem := int64(1)
	if rows.F32 {
		elem = 4
		if len(rows.LUT) < 3*256 {
			return res, fmt.Errorf("nvjpeg: float32 rows need a normalisation table (kernels.NormLUT)")
		}
	}
	rowElems := int64(rows.W * rows.H * 3)
	var idx []int // the jobs nvJPEG takes
	var off, lens, dsts, pitch []uint64
	var roi, route []int32
	total, scratch := 0, 0
	for i, j := range jobs {
		if j.Dst < 0 || (j.Dst+rowElems)*elem > int64(dst.size) {
			return res, fmt.Errorf("nvjpeg: job %d: row at %d past the %d-byte buffer", i, j.Dst, dst.size)
		}
		h, err := Inspect(j.Data)
		r, why := CPU, ""
		if err != nil {
			why = err.Error()
		} else {
			r, why = h.Route()
		}
		if r == CPU {
			res.Routes[i], res.Why[i] = CPU, why
			continue
		}
		c := j.Crop
		idx = append(idx, i)
		off = append(off, uint64(total))
		lens = append(lens, uint64(len(j.Data)))
		total += roundUp(len(j.Data))
		if c.Min.X == 0 && c.Min.Y == 0 && c.Dx() == h.Width && c.Dy() == h.Height {
			// The whole frame: no region at all (nvJPEG's 0, 0, -1, -1,
			// as DALI and nvImageCodec pass without a crop), so no
			// backend takes a slower path, or refuses, for a region.
			roi = append(roi, 0, 0, -1, -1)
		} else {
			roi = append(roi, int32(c.Min.X), int32(c.Min.Y), int32(c.Dx()), int32(c.Dy()))
		}
		dsts = append(dsts, uint64(scratch))
		pitch = append(pitch, uint64(c.Dx()*3))
		scratch += roundUp(c.Dx() * c.Dy() * 3)
		route = append(route, int32(r))
	}
	if len(idx) == 0 {
		return res, nil
	}
	err := d.do(func() error {
		if err := d.jpegs.grow(total, 8<<20); err != nil {
			return err
		}
		if err := d.grow(&d.scratch, scratch); err != nil {
			return err
		}
		pin := unsafe.Slice((*byte)(d.jpegs.p), d.jpegs.cap)
		for k, i := range idx {
			copy(pin[off[k]:], jobs[i].Data)
		}
		for k := range dsts {
			dsts[k] += d.scratch.ptr
		}
		status := make([]int32, len(idx))
		// From here work is queued on the stream: wait for it whatever
		// happens, so that nothing it uses is freed or rewritten under it.
		err := d.n.decode(d.jpegs.p, off, lens, roi, dsts, pitch, route, status)
		if err == nil {
			err = d.resample(jobs, idx, route, status, dsts, dst, rows, &res)
		}
		return errors.Join(err, d.n.sync())
	})
	return res, err
}

// resample records where each of jobs[idx] went (route, status) in res
// and queues the kernels over the decoded regions in scratch.
func (d *Decoder) resample(jobs []Job, idx []int, route, status []int32, dsts []uint64, dst *Buffer, rows Rows, res *Result) error {
	var imgs []kernels.Image
	for k, i := range idx {
		j := jobs[i]
		switch route[k] {
		case 0:
			res.Routes[i] = Hardware
		case 1:
			res.Routes[i] = Hybrid
		default:
			res.Routes[i], res.Why[i] = CPU, fmt.Sprintf("nvJPEG refused it (status %d)", int(status[k]))
			continue
		}
		w, h := j.Crop.Dx(), j.Crop.Dy()
		imgs = append(imgs, kernels.Image{Src: int64(dsts[k]) - int64(d.scratch.ptr), W: w, H: h, Stride: w * 3,
			Box: augment.Box{X1: float64(w), Y1: float64(h)}, FullW: j.ResizeW, FullH: j.ResizeH, View: j.View,
			Flip: j.Flip, Filter: j.Filter, Dst: j.Dst})
	}
	if len(imgs) == 0 {
		return nil
	}
	b, err := kernels.Plan(imgs, rows.W, rows.H, 3)
	if err != nil {
		return err
	}
	// params: desc | tab | lut | tmp, each aligned; desc, tab and lut
	// staged in pinned memory and copied by one cudaMemcpyAsync.
	descB, tabB := len(b.Desc)*8, len(b.Tab)*4
	lutB := 0
	if rows.F32 {
		lutB = 3 * 256 * 4
	}
	oTab := roundUp(descB)
	oLUT := oTab + roundUp(tabB)
	oTmp := oLUT + roundUp(lutB)
	if err := d.grow(&d.params, oTmp+int(b.TmpBytes)); err != nil {
		return err
	}
	if err := d.tables.grow(oTmp, 1<<20); err != nil {
		return err
	}
	copy(unsafe.Slice((*int64)(d.tables.p), len(b.Desc)), b.Desc)
	copy(unsafe.Slice((*int32)(d.tables.at(oTab)), len(b.Tab)), b.Tab)
	if rows.F32 {
		copy(unsafe.Slice((*float32)(d.tables.at(oLUT)), 3*256), rows.LUT)
	}
	p := d.params.ptr
	if err := cudaErr("cudaMemcpyAsync of the tables", C.nvj_htod_async(d.stream, C.ulonglong(p), d.tables.p, C.size_t(oTmp))); err != nil {
		return err
	}
	h, v := b.Launches()
	src, tmp, tab, desc := cuda.I64(int64(d.scratch.ptr)), cuda.I64(int64(p)+int64(oTmp)), cuda.I64(int64(p)+int64(oTab)), cuda.I64(int64(p))
	if err := d.fh.LaunchOn(d.stream, launch(h), cuda.I32(int32(h.GX)), src, tmp, tab, desc, cuda.I32(int32(b.OutW)), cuda.I32(3)); err != nil {
		return err
	}
	out := cuda.I64(int64(dst.ptr))
	if rows.F32 {
		return d.ff32.LaunchOn(d.stream, launch(v), cuda.I32(int32(v.GX)), tmp, out, tab, desc, cuda.I64(int64(p)+int64(oLUT)),
			cuda.I32(int32(b.OutW)), cuda.I32(int32(b.OutH)), cuda.I32(3))
	}
	return d.fu8.LaunchOn(d.stream, launch(v), cuda.I32(int32(v.GX)), tmp, out, tab, desc, cuda.I32(int32(b.OutW)), cuda.I32(int32(b.OutH)), cuda.I32(3))
}

// Close waits for the stream, frees every buffer still given out, the
// scratch and the staging, then the handles and the stream.
func (d *Decoder) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	if d.n != nil {
		errs = append(errs, d.n.sync())
		// The frees' errors in a slice of their own: appended to errs
		// inside f, they would be lost when the outer append, whose
		// first operand was read before f ran, writes its result.
		var freeErrs []error
		err := d.do(func() error {
			for b := range d.live {
				freeErrs = append(freeErrs, cudaErr("cudaFree", C.nvj_free(C.ulonglong(b.ptr))))
			}
			for _, m := range []*devMem{&d.scratch, &d.params} {
				if m.ptr != 0 {
					freeErrs = append(freeErrs, cudaErr("cudaFree of scratch", C.nvj_free(C.ulonglong(m.ptr))))
				}
			}
			for _, m := range []*hostMem{&d.jpegs, &d.tables} {
				freeErrs = append(freeErrs, m.release())
			}
			return nil
		})
		errs = append(errs, err)
		errs = append(errs, freeErrs...)
		d.live = nil
		d.n.close()
		d.n, d.stream = nil, nil
	}
	if d.dev != nil {
		errs = append(errs, d.dev.Close())
	}
	return errors.Join(errs...)
}
