//go:build cgo

package nvjpeg

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// stubNVJPEG is a stand-in of libnvjpeg whose answers depend on the third
// byte of each "JPEG": 'A' the hardware takes it; 'P' the hardware refuses
// it (nvjpegDecodeBatchedSupportedEx), the GPU-hybrid backend takes it;
// 'X' both refuse it (the hybrid's nvjpegDecodeJpegHost returns
// NVJPEG_STATUS_JPEG_NOT_SUPPORTED); 'F' fails the hardware's whole batch.
// A decode writes its backend's tag ("HW" or "GP") and the region's x and
// width into the destination; "device memory" is the host's.
const stubNVJPEG = `#include <stddef.h>
#include <string.h>
#include <stdlib.h>
struct faster_nvjpeg_image { unsigned char *channel[4]; size_t pitch[4]; };
struct params { int x, y, w, h; };
static const unsigned char *last;
int nvjpegGetProperty(int type, int *value) { *value = 13; return 0; }
int nvjpegCreateEx(int backend, void *a, void *b, unsigned int flags, void **handle) { *handle = malloc(8); return 0; }
int nvjpegDestroy(void *h) { free(h); return 0; }
int nvjpegJpegStateCreate(void *h, void **s) { *s = malloc(8); return 0; }
int nvjpegJpegStateDestroy(void *s) { free(s); return 0; }
int nvjpegDecodeBatchedInitialize(void *h, void *s, int n, int threads, int fmt) { return fmt == 5 ? 0 : 2; }
static void mark(struct faster_nvjpeg_image *d, const char *tag, struct params *p) {
	d->channel[0][0] = tag[0]; d->channel[0][1] = tag[1]; d->channel[0][2] = (unsigned char)p->x; d->channel[0][3] = (unsigned char)p->w;
}
int nvjpegDecodeBatchedEx(void *h, void *s, const unsigned char *const *data, const size_t *lengths, struct faster_nvjpeg_image *dst, void **params, void *stream) {
	int n = 0; while (data[n] && n < 64 && lengths[n]) n++;
	return -1; /* replaced below */
}
`

func stubSource() string {
	s := stubNVJPEG
	s = strings.Replace(s, `int nvjpegDecodeBatchedInitialize(void *h, void *s, int n, int threads, int fmt) { return fmt == 5 ? 0 : 2; }`,
		`static int batch;
int nvjpegDecodeBatchedInitialize(void *h, void *s, int n, int threads, int fmt) { batch = n; return fmt == 5 ? 0 : 2; }`, 1)
	s = strings.Replace(s, `	int n = 0; while (data[n] && n < 64 && lengths[n]) n++;
	return -1; /* replaced below */`, `	for (int i = 0; i < batch; i++)
		if (data[i][2] == 'F')
			return 6; /* NVJPEG_STATUS_EXECUTION_FAILED */
	for (int i = 0; i < batch; i++)
		mark(&dst[i], "HW", params[i]);
	return 0;`, 1)
	return s + `
int nvjpegDecodeBatchedSupportedEx(void *h, void *stream, void *params, int *sup) { *sup = last[2] == 'P' || last[2] == 'X'; return 0; }
int nvjpegJpegStreamCreate(void *h, void **s) { *s = malloc(8); return 0; }
int nvjpegJpegStreamDestroy(void *s) { free(s); return 0; }
int nvjpegJpegStreamParse(void *h, const unsigned char *data, size_t len, int a, int b, void *s) { last = data; return len >= 3 ? 0 : 3; }
int nvjpegDecodeParamsCreate(void *h, void **p) { *p = calloc(1, sizeof(struct params)); return 0; }
int nvjpegDecodeParamsDestroy(void *p) { free(p); return 0; }
int nvjpegDecodeParamsSetOutputFormat(void *p, int fmt) { return fmt == 5 ? 0 : 2; }
int nvjpegDecodeParamsSetROI(void *p, int x, int y, int w, int h) { struct params *q = p; q->x = x; q->y = y; q->w = w; q->h = h; return 0; }
int nvjpegDecoderCreate(void *h, int impl, void **d) { *d = malloc(8); return impl == 2 ? 0 : 2; }
int nvjpegDecoderDestroy(void *d) { free(d); return 0; }
int nvjpegDecoderStateCreate(void *h, void *d, void **s) { *s = malloc(8); return 0; }
int nvjpegBufferPinnedCreate(void *h, void *a, void **b) { *b = malloc(8); return 0; }
int nvjpegBufferPinnedDestroy(void *b) { free(b); return 0; }
int nvjpegBufferDeviceCreate(void *h, void *a, void **b) { *b = malloc(8); return 0; }
int nvjpegBufferDeviceDestroy(void *b) { free(b); return 0; }
int nvjpegStateAttachPinnedBuffer(void *s, void *b) { return 0; }
int nvjpegStateAttachDeviceBuffer(void *s, void *b) { return 0; }
static struct params *hybrid;
int nvjpegDecodeJpegHost(void *h, void *d, void *s, void *p, void *stream) { hybrid = p; return last[2] == 'X' ? 4 : 0; }
int nvjpegDecodeJpegTransferToDevice(void *h, void *d, void *s, void *js, void *stream) { return 0; }
int nvjpegDecodeJpegDevice(void *h, void *d, void *s, struct faster_nvjpeg_image *dst, void *stream) { mark(dst, "GP", hybrid); return 0; }
`
}

const stubCUDART = `#include <stddef.h>
#include <stdlib.h>
#include <string.h>
int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }
int cudaGetDeviceCount(int *n) { *n = 1; return 0; }
int cudaSetDevice(int d) { return d == 0 ? 0 : 101; }
const char *cudaGetErrorString(int e) { return "stub error"; }
int cudaMalloc(void **p, size_t n) { *p = malloc(n); return 0; }
int cudaFree(void *p) { free(p); return 0; }
int cudaHostAlloc(void **p, size_t n, unsigned int f) { *p = malloc(n); return 0; }
int cudaFreeHost(void *p) { free(p); return 0; }
int cudaMemcpy(void *d, const void *s, size_t n, int kind) { memcpy(d, s, n); return 0; }
int cudaDeviceSynchronize(void) { return 0; }
int cudaIpcGetMemHandle(void *h, void *p) { memset(h, 0, 64); memcpy(h, &p, sizeof p); return 0; }
`

// nvj.c's routing against the stand-ins, in a child process: hardware
// first, a refused image to the GPU-hybrid backend, an image both refuse
// to the CPU with nvJPEG's status, a failed hardware batch wholly to the
// GPU-hybrid backend; each image's region of interest reaches the backend
// that decodes it; GPU 1 of a one-GPU machine is refused by name; and a
// buffer's IPC handle (package serve's device ring) is cudaIpcGetMemHandle's
// 64 bytes for its address.
func TestNVJRoutesWithStubs(t *testing.T) {
	if os.Getenv("FASTER_NVJPEG_ROUTE_CHILD") == "1" {
		routeChild()
		return
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	for name, src := range map[string]string{"libnvjpeg.so.13": stubSource(), "libcudart.so.13": stubCUDART} {
		c := filepath.Join(dir, name+".c")
		os.WriteFile(c, []byte(src), 0o644)
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-w", "-o", filepath.Join(dir, name), c).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", name, err, out)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNVJRoutesWithStubs$")
	cmd.Env = append(os.Environ(), "FASTER_NVJPEG_ROUTE_CHILD=1", "LD_LIBRARY_PATH="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
	for _, want := range []string{
		"hardware: true",
		"batch 1: routes [0 1 2 0] status [0 0 4 0] outputs [HW x5 w7 | GP x6 w8 | - | HW x8 w10]",
		"batch 2: routes [1 1 1] status [0 0 0] outputs [GP x5 w7 | GP x6 w8 | GP x7 w9]",
		"gpu 1: nvjpeg: cudaSetDevice(1): stub error (101) (status 101)",
		// the stand-in's handle is the pointer, little-endian: the call
		// reaches cudaIpcGetMemHandle with the buffer's address
		"ipc handle: 64 bytes, cdab341200000000",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

func routeChild() {
	if _, err := load(); err != nil {
		fmt.Println("load:", err)
		return
	}
	n, err := openNVJ(0)
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer n.close()
	fmt.Println("hardware:", n.hasHardware())
	run := func(name string, tags string) {
		var data []byte
		var off, lens, dst, pitch []uint64
		var roi, route, status []int32
		outs := make([][]byte, len(tags))
		var pin runtime.Pinner
		defer pin.Unpin()
		for k, tag := range []byte(tags) {
			off = append(off, uint64(len(data)))
			img := []byte{0xff, 0xd8, tag, 0, 0, 0}
			data = append(data, img...)
			lens = append(lens, uint64(len(img)))
			roi = append(roi, int32(5+k), 1, int32(7+k), 3)
			outs[k] = make([]byte, 4)
			pin.Pin(&outs[k][0])
			dst = append(dst, uint64(uintptr(unsafe.Pointer(&outs[k][0]))))
			pitch = append(pitch, 21)
			route = append(route, 0)
			status = append(status, 0)
		}
		if err := n.decode(unsafe.Pointer(&data[0]), off, lens, roi, dst, pitch, route, status); err != nil {
			fmt.Println(name, "error:", err)
			return
		}
		var desc []string
		for _, o := range outs {
			if o[0] == 0 {
				desc = append(desc, "-")
			} else {
				desc = append(desc, fmt.Sprintf("%s x%d w%d", o[:2], o[2], o[3]))
			}
		}
		fmt.Printf("%s: routes %v status %v outputs [%s]\n", name, route, status, strings.Join(desc, " | "))
	}
	run("batch 1", "APXA")
	run("batch 2", "AFA")
	if h, err := ipcHandle(0x1234abcd); err != nil {
		fmt.Println("ipc handle:", err)
	} else {
		fmt.Printf("ipc handle: %d bytes, %x\n", len(h), h[:8])
	}
	if _, err := openNVJ(1); err != nil {
		fmt.Println("gpu 1:", err)
	}
}
