//go:build cgo

package nvjpeg

import (
	"bytes"
	"encoding/binary"
	"image"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/faster-training/faster/augment"
	"github.com/faster-training/faster/gpudecode/nvjpeg/kernels"
	"github.com/faster-training/faster/train/cuda"
)

// The Decoder as a whole (Open, DecodeBatch, Upload, Download, Close)
// against the stand-ins, in a child process: the nvJPEG decodes, the
// tables' copy and the kernels (resize.cu's CPU build behind the
// stand-in cuLaunchKernel) are all queued on the decoder's own
// non-blocking stream and run only when it is synchronised. The rows are
// read straight from the stand-in's "device memory" the moment
// DecodeBatch returns: they are right only if the batch ended with the
// stream's synchronisation. The stand-ins fail the test (a VIOLATION
// line) if any call is left on the NULL stream, if the device or the
// context is synchronised, or if host memory under queued work changes.
func TestDecoderStreamWithStandIns(t *testing.T) {
	if os.Getenv("FASTER_NVJPEG_STREAM_CHILD") == "1" {
		streamChild(t)
		return
	}
	out := runChild(t, buildStandIns(t), "TestDecoderStreamWithStandIns", "FASTER_NVJPEG_STREAM_CHILD")
	t.Logf("child:\n%s", out)
	for _, want := range []string{
		"--- PASS: TestDecoderStreamWithStandIns",
		"standin: cudaStreamCreateWithFlags(flags 1) made s1",
		"standin: s1 ran nvjpegDecodeBatchedEx",
		"standin: s3 ran nvjpegDecodeJpegTransferToDevice",
		"standin: s3 ran nvjpegDecodeJpegDevice",
		"standin: s3 ran cudaEventRecord",
		"standin: s1 ran cudaStreamWaitEvent",
		"standin: s1 ran cudaMemcpyAsync(to the device)",
		"standin: s1 ran cuLaunchKernel(resize_h)",
		"standin: s1 ran cuLaunchKernel(resize_v_u8)",
		"standin: s1 ran cuLaunchKernel(resize_v_f32)",
		"standin: s1 ran cudaMemcpyAsync(to the host)",
		"standin: cudaStreamDestroy(s1)",
		// Options.MaxBatch 0: the hardware decoder pre-allocated for
		// DefaultMaxBatch images
		"standin: nvjpegDecodeBatchedPreAllocate(backend 3, batch 256, 512x512, css 0, output 5)",
		"standin: nvjpegDecoderCreate(backend 1) on backend 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("child output lacks %q", want)
		}
	}
	// Three streams: the batch's (s1); s2 for the CPU's rows (Upload),
	// so a row does not wait for the batch the hardware decodes; s3 for
	// the hybrid images, so one's host phase does not wait for the
	// hardware batch either (s1 waits for s3's event before its
	// kernels). Nothing else runs on s2 and s3.
	if !strings.Contains(out, "standin: s2 ran cudaMemcpyAsync(to the device)") || strings.Contains(out, "made s4") {
		t.Errorf("want the uploads on a second stream, the hybrid images on a third, and no fourth:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "standin: s2 ran") && !strings.Contains(line, "cudaMemcpyAsync(to the device)") {
			t.Errorf("batch work on the upload stream: %s", line)
		}
		if strings.Contains(line, "standin: s3 ran") && !strings.Contains(line, "nvjpegDecodeJpeg") && !strings.Contains(line, "cudaEventRecord") {
			t.Errorf("other work on the hybrid stream: %s", line)
		}
	}
	// A job whose crop is the whole frame is decoded without a region
	// (nvJPEG's 0, 0, -1, -1).
	if !strings.Contains(out, "standin: a decode of the whole") {
		t.Errorf("no decode of a whole frame without a region:\n%s", out)
	}
}

// standinPattern is what the stand-in nvJPEG decodes a JPEG file of n
// bytes to: pixel (x, y, c) of the full image (standin_nvjpeg.c's
// pattern()).
func standinPattern(n int, r image.Rectangle) []byte {
	tag := n % 251
	out := make([]byte, 0, r.Dx()*r.Dy()*3)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			for c := range 3 {
				out = append(out, byte(x*3+y*5+c*71+tag*17))
			}
		}
	}
	return out
}

// deviceBytes is n bytes of the stand-ins' device memory at ptr (host
// memory there).
func deviceBytes(ptr uint64, n int) []byte { return unsafe.Slice(*(**byte)(unsafe.Pointer(&ptr)), n) }

func streamChild(t *testing.T) {
	d, err := Open(Options{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	// Hardware (baseline), hybrid (three in a row: the pinned
	// buffers alternate), CPU (CMYK).
	files := []string{"ycc420.jpg", "ycc444.jpg", "progressive.jpg", "ycc411.jpg", "gray_progressive.jpg", "cmyk.jpg"}
	wantRoutes := []Route{Hardware, Hardware, Hybrid, Hybrid, Hybrid, CPU}
	const W, H = 8, 6
	var jobs []Job
	for k, f := range files {
		data, err := os.ReadFile(filepath.Join("..", "..", "imgcodec", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		x, y := 10+7*k, 5+3*k
		filter := augment.Triangle
		if k%2 == 1 {
			filter = augment.Bicubic
		}
		crop := image.Rect(x, y, x+40+5*k, y+30+2*k)
		if k == 1 { // the whole frame, as an evaluation's centre crop of a picture its size
			h, err := Inspect(data)
			if err != nil {
				t.Fatal(err)
			}
			crop = image.Rect(0, 0, h.Width, h.Height)
		}
		jobs = append(jobs, Job{Data: data, Crop: crop, ResizeW: 12 + k, ResizeH: 10,
			View: image.Rect(k%3, 1, k%3+W, 1+H), Flip: k%2 == 1, Filter: filter, Dst: int64(k * W * H * 3)})
	}
	lut := kernels.NormLUT([3]float32{0.485, 0.456, 0.406}, [3]float32{0.229, 0.224, 0.225})
	for _, f32 := range []bool{false, true} {
		elem := 1
		if f32 {
			elem = 4
		}
		rowBytes := W * H * 3 * elem
		buf, err := d.Alloc(len(jobs) * rowBytes)
		if err != nil {
			t.Fatal(err)
		}
		res, err := d.DecodeBatch(jobs, buf, Rows{W: W, H: H, F32: f32, LUT: lut})
		if err != nil {
			t.Fatal(err)
		}
		// At once, without Download: DecodeBatch returned, so the rows
		// are there.
		mem := deviceBytes(buf.Ptr(), buf.Size())
		for k, j := range jobs {
			if res.Routes[k] != wantRoutes[k] {
				t.Errorf("f32 %v: %s went %v, want %v (%s)", f32, files[k], res.Routes[k], wantRoutes[k], res.Why[k])
				continue
			}
			if res.Routes[k] == CPU {
				continue
			}
			w, h := j.Crop.Dx(), j.Crop.Dy()
			b, err := kernels.Plan([]kernels.Image{{W: w, H: h, Stride: w * 3, Box: augment.Box{X1: float64(w), Y1: float64(h)},
				FullW: j.ResizeW, FullH: j.ResizeH, View: j.View, Flip: j.Flip, Filter: j.Filter}}, W, H, 3)
			if err != nil {
				t.Fatal(err)
			}
			src := standinPattern(len(j.Data), j.Crop)
			want := make([]byte, rowBytes)
			if f32 {
				fs := make([]float32, W*H*3)
				if err := kernels.RunCPU(b, src, nil, fs, lut); err != nil {
					t.Fatal(err)
				}
				for i, v := range fs {
					binary.LittleEndian.PutUint32(want[4*i:], math.Float32bits(v))
				}
			} else if err := kernels.RunCPU(b, src, want, nil, nil); err != nil {
				t.Fatal(err)
			}
			if got := mem[k*rowBytes : (k+1)*rowBytes]; !bytes.Equal(got, want) {
				t.Errorf("f32 %v: %s (%v): row differs from the CPU build's on the same pixels", f32, files[k], res.Routes[k])
			}
		}
		// The CPU's row, uploaded on the stream in two halves by two
		// goroutines (as the fallback's workers do): there when Upload
		// returns.
		k := len(jobs) - 1
		row := bytes.Repeat([]byte{0x5a, byte(k)}, rowBytes/2)
		var wg sync.WaitGroup
		for h := range 2 {
			half := row[h*rowBytes/2 : (h+1)*rowBytes/2]
			wg.Go(func() {
				if err := d.Upload(buf, k*rowBytes+h*rowBytes/2, half); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if !bytes.Equal(mem[k*rowBytes:(k+1)*rowBytes], row) {
			t.Errorf("f32 %v: the uploaded row is not there when Upload returns", f32)
		}
		got := make([]byte, buf.Size())
		if err := d.Download(got, buf, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, mem) {
			t.Errorf("f32 %v: Download differs from the buffer", f32)
		}
		if err := d.Free(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// The stand-in's device memory is fenced (standin_cudart.c): a write one
// byte past a buffer's end, or one before its start, is a VIOLATION line
// when the buffer is freed, naming the byte; so every test over the
// stand-ins would see a kernel, a decode or a copy write outside its
// buffer. A buffer starts 256-byte aligned, as cudaMalloc's.
func TestStandInFences(t *testing.T) {
	if os.Getenv("FASTER_NVJPEG_FENCE_CHILD") == "1" {
		fenceChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestStandInFences$", "-test.v")
	cmd.Env = append(os.Environ(), "FASTER_NVJPEG_FENCE_CHILD=1", "LD_LIBRARY_PATH="+buildStandIns(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{
		"byte 16 of the buffer of 16 bytes (past its end) was written",
		"byte -1 before the buffer of 32 bytes was written",
	} {
		if !strings.Contains(string(out), "standin: VIOLATION cudaFree(") || !strings.Contains(string(out), want) {
			t.Errorf("child output lacks the violation %q:\n%s", want, out)
		}
	}
	// Pinned host memory (the batch's JPEGs, the kernels' tables) too.
	if !strings.Contains(string(out), "standin: VIOLATION cudaFreeHost(") || !strings.Contains(string(out), "byte 64 of the buffer of 64 bytes (past its end) was written") {
		t.Errorf("child output lacks the pinned buffer's violation:\n%s", out)
	}
	if n := strings.Count(string(out), "VIOLATION"); n != 3 {
		t.Errorf("%d violations, want 3 (the buffers written inside are none):\n%s", n, out)
	}
}

func fenceChild(t *testing.T) {
	d, err := Open(Options{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, c := range []struct{ n, at int }{{64, 64}, {48, 47}} {
		var h hostMem
		if err := h.grow(c.n, c.n); err != nil {
			t.Fatal(err)
		}
		if uintptr(h.p)%256 != 0 {
			t.Errorf("pinned buffer at %p: not 256-byte aligned", h.p)
		}
		unsafe.Slice((*byte)(h.p), c.at+1)[c.at] = 1
		if err := h.release(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ n, at int }{{16, 16}, {32, -1}, {8, 7}} {
		b, err := d.Alloc(c.n)
		if err != nil {
			t.Fatal(err)
		}
		if b.Ptr()%256 != 0 {
			t.Errorf("buffer at %#x: not 256-byte aligned", b.Ptr())
		}
		if c.at < 0 {
			deviceBytes(b.Ptr()-1, 1)[0] = 1
		} else {
			deviceBytes(b.Ptr(), c.at+1)[c.at] = 1
		}
		if err := d.Free(b); err != nil {
			t.Fatal(err)
		}
	}
}

// A launch of the stage's kernels with a pointer not aligned to what it
// points at is refused before cuLaunchKernel (a GPU would fault with
// CUDA_ERROR_MISALIGNED_ADDRESS and lose the context), naming the kernel
// and the argument; the same launch aligned runs.
func TestStandInMisaligned(t *testing.T) {
	if os.Getenv("FASTER_NVJPEG_ALIGN_CHILD") == "1" {
		alignChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestStandInMisaligned$", "-test.v")
	cmd.Env = append(os.Environ(), "FASTER_NVJPEG_ALIGN_CHILD=1", "LD_LIBRARY_PATH="+buildStandIns(t))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestStandInMisaligned") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func alignChild(t *testing.T) {
	d, err := Open(Options{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// resize_v_f32(gx, tmp, dst, tab, desc, lut, outw, outh, ch) over an
	// empty batch (outh 0: no row written), dst a float pointer.
	b, err := d.Alloc(1 << 12)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(b)
	p := int64(b.Ptr())
	run := func(dst int64) error {
		err := d.ff32.LaunchOn(d.stream, launch(kernels.Launch{GX: 1, GY: 1}), cuda.I32(1), cuda.I64(p), cuda.I64(dst),
			cuda.I64(p+1024), cuda.I64(p+2048), cuda.I64(p+3072), cuda.I32(0), cuda.I32(0), cuda.I32(3))
		if err == nil {
			err = d.Download(make([]byte, 4), b, 0) // waits for the stream
		}
		return err
	}
	if err := run(p + 256); err != nil {
		t.Fatalf("an aligned launch: %v", err)
	}
	err = run(p + 258)
	if err == nil || !strings.Contains(err.Error(), "resize_v_f32: argument 2") || !strings.Contains(err.Error(), "4-byte aligned") {
		t.Fatalf("dst at +2: %v, want resize_v_f32's refusal of argument 2", err)
	}
}
