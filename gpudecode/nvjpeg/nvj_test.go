//go:build cgo

package nvjpeg

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/faster-training/faster/train/cuda"
)

// The stand-ins of libcudart, libnvjpeg, libcuda and libnvrtc
// (testdata/standin_*.c; their comments say what each does and checks),
// built by gcc into a directory a child process finds them in by soname
// (LD_LIBRARY_PATH). Their streams run queued work only when synchronised,
// and every breach of the stage's stream discipline (a call on the NULL
// stream, cudaDeviceSynchronize, cuCtxSynchronize, a synchronous
// cudaMemcpy, host memory changed under queued work) is a line
// "standin: VIOLATION …" in the child's output.
func buildStandIns(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	standin, err := os.ReadFile("testdata/standin_cuda.c")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^int (\w+)\(`).FindAllStringSubmatch(string(standin), -1) {
		defined[m[1]] = true
	}
	// train/cuda's other declarations of the driver and NVRTC: stubs.
	stubs := func(lib cuda.Library) string {
		var src strings.Builder
		src.WriteString("#include <stddef.h>\n")
		for _, d := range cuda.Decls {
			if d.Lib != lib || defined[d.Symbol] {
				continue
			}
			ret := "return 0;"
			if strings.HasPrefix(d.C, "const char *") {
				ret = `return "stub";`
			}
			fmt.Fprintf(&src, "%s { %s }\n", d.C, ret)
		}
		c := filepath.Join(dir, lib.String()+"_stubs.c")
		if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return c
	}
	link := []string{"-L" + dir, "-l:libcudart.so.13", "-Wl,-rpath," + dir}
	for _, b := range []struct {
		soname string
		args   []string
	}{
		{"libcudart.so.13", []string{"testdata/standin_cudart.c", "-pthread"}},
		{"libnvjpeg.so.13", append([]string{"testdata/standin_nvjpeg.c"}, link...)},
		{"libcuda.so.1", append([]string{"-DSTANDIN_DRIVER", "-Ikernels", "testdata/standin_cuda.c", "kernels/cpu.c", stubs(cuda.Driver)}, link...)},
		{"libnvrtc.so.13", []string{"-DSTANDIN_NVRTC", "testdata/standin_cuda.c", stubs(cuda.NVRTC)}},
	} {
		args := append([]string{"-shared", "-fPIC", "-w", "-std=gnu11", "-O2", "-Wl,-Bsymbolic", "-Wl,-soname," + b.soname,
			"-o", filepath.Join(dir, b.soname)}, b.args...)
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", b.soname, err, out)
		}
	}
	return dir
}

// runChild runs test name of this binary in a child process with env set
// and the stand-ins in dir; its output, the stand-ins' lines included.
func runChild(t *testing.T, dir, name, env string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), env+"=1", "LD_LIBRARY_PATH="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "VIOLATION") {
		t.Errorf("the stand-ins saw the stream discipline broken:\n%s", out)
	}
	return string(out)
}

// nvj.c's routing against the stand-ins, in a child process: hardware
// first, a refused image to the hybrid backend, an image both refuse to
// the CPU with nvJPEG's status, a failed hardware batch wholly to the
// hybrid backend; each image's region of interest reaches the backend
// that decodes it; GPU 1 of a one-GPU machine is refused by name; and a
// buffer's IPC handle (package serve's device ring) is cudaIpcGetMemHandle's
// 64 bytes for its address.
//
// Every call that takes a stream gets the one faster_nvj_open made
// (non-blocking), the decodes run when it is synchronised, three images
// on the hybrid backend in a row leave no pinned buffer rewritten under a
// queued transfer, and nothing synchronises the device.
//
// The handles: the decoupled decoder is NVJPEG_BACKEND_HYBRID's (1; the
// stand-in refuses any other), both handles' allocations are padded, the
// hardware decoder is pre-allocated for the largest batch once at open
// and no batch within it initialises past that; the hardware's admission
// parses the header alone (nvjpegJpegStreamParseHeader, 7 images), and
// only the hybrid backend's images are parsed whole (5: P and X of batch
// 1, the failed batch 2's three).
func TestNVJRoutesWithStubs(t *testing.T) {
	if os.Getenv("FASTER_NVJPEG_ROUTE_CHILD") == "1" {
		routeChild()
		return
	}
	out := runChild(t, buildStandIns(t), "TestNVJRoutesWithStubs", "FASTER_NVJPEG_ROUTE_CHILD")
	t.Logf("child:\n%s", out)
	for _, want := range []string{
		"standin: cudaStreamCreateWithFlags(flags 1) made s1",
		"hardware: true",
		"batch 1: routes [0 1 2 0] status [0 0 4 0] outputs [HW x5 w7 | GP x6 w8 | - | HW x8 w10]",
		"batch 2: routes [1 1 1] status [0 0 0] outputs [GP x5 w7 | GP x6 w8 | GP x7 w9]",
		"standin: s1 ran nvjpegDecodeBatchedEx",
		"standin: s3 ran nvjpegDecodeJpegTransferToDevice", // the hybrid stream
		"standin: s3 ran nvjpegDecodeJpegDevice",
		"standin: s1 ran cudaStreamWaitEvent",
		"standin: cudaStreamDestroy(s1)",
		"gpu 1: nvjpeg: cudaSetDevice(1): stub error (101) (status 101)",
		// the stand-in's handle is the pointer, little-endian: the call
		// reaches cudaIpcGetMemHandle with the buffer's address
		"ipc handle: 64 bytes, cdab341200000000",
		"standin: nvjpegCreateEx(backend 3)",
		"standin: nvjpegSetDeviceMemoryPadding(16777216) on backend 3",
		"standin: nvjpegSetPinnedMemoryPadding(8388608) on backend 3",
		"standin: nvjpegDecodeBatchedPreAllocate(backend 3, batch 4, 512x512, css 0, output 5)",
		"standin: nvjpegCreateEx(backend 1)",
		"standin: nvjpegSetDeviceMemoryPadding(16777216) on backend 1",
		"standin: nvjpegSetPinnedMemoryPadding(8388608) on backend 1",
		"standin: nvjpegDecoderCreate(backend 1) on backend 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
	for _, c := range []struct {
		line string
		n    int
	}{
		{"standin: nvjpegJpegStreamParseHeader on backend 3\n", 7},
		{"standin: nvjpegJpegStreamParse on backend 3\n", 0},
		{"standin: nvjpegJpegStreamParse on backend 1\n", 5},
		{"standin: nvjpegDecodeBatchedPreAllocate(", 1},
		{"past the pre-allocation", 0},
	} {
		if n := strings.Count(out, c.line); n != c.n {
			t.Errorf("child output has %q %d times, want %d", c.line, n, c.n)
		}
	}
}

func routeChild() {
	if _, err := load(); err != nil {
		fmt.Println("load:", err)
		return
	}
	n, err := openNVJ(0, 4)
	if err != nil {
		fmt.Println("open:", err)
		return
	}
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
		pin.Pin(&data[0]) // read by the decodes as the stream runs them
		if err := n.decode(unsafe.Pointer(&data[0]), off, lens, roi, dst, pitch, route, status); err != nil {
			fmt.Println(name, "error:", err)
			return
		}
		if err := n.sync(); err != nil {
			fmt.Println(name, "sync error:", err)
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
	n.close()
	if _, err := openNVJ(1, 4); err != nil {
		fmt.Println("gpu 1:", err)
	}
}
