package gpudecode

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/faster-training/faster/gpudecode/nvjpeg"
	"github.com/faster-training/faster/gpudecode/nvjpeg/kernels"
	"github.com/faster-training/faster/loader"
)

func init() { loader.RegisterBatchDecoder("cuda", Open) }

// Open opens the stage on cfg's GPU (loader.DecoderConfig.Ordinal), its
// nvJPEG decoder's buffers allocated for cfg.Batch images.
func Open(cfg loader.DecoderConfig) (loader.BatchDecoder, error) {
	d, err := nvjpeg.Open(nvjpeg.Options{Ordinal: cfg.Ordinal, MaxBatch: cfg.Batch})
	if err != nil {
		return nil, err
	}
	return newStage(d, d, cfg), nil
}

func newStage(g gpu, d *nvjpeg.Decoder, cfg loader.DecoderConfig) *Stage {
	return &Stage{g: g, d: d, workers: cfg.Workers, share: cfg.CPUShare}
}

// Stage is the loader.BatchDecoder of one GPU.
type Stage struct {
	g       gpu
	d       *nvjpeg.Decoder // g, when it is nvJPEG's (nil in tests)
	workers int
	share   float64 // of each batch, decoded on the CPU beside the GPU (loader.ShareRows)
	lut     []float32
	lutFor  [2][3]float32
}

// gpu is what the stage needs of the GPU: nvjpeg.Decoder's (a fake in
// tests).
type gpu interface {
	Device() string
	Alloc(n int) (*nvjpeg.Buffer, error)
	Free(b *nvjpeg.Buffer) error
	DecodeBatch(jobs []nvjpeg.Job, dst *nvjpeg.Buffer, rows nvjpeg.Rows) (nvjpeg.Result, error)
	Upload(b *nvjpeg.Buffer, off int, host []byte) error
	Close() error
}

var (
	_ loader.BatchDecoder      = (*Stage)(nil)
	_ loader.DeviceBatchBuffer = (*DeviceBuffer)(nil)
)

// DeviceBuffer is a batch buffer in device memory.
type DeviceBuffer struct {
	b   *nvjpeg.Buffer
	dev string
	d   *nvjpeg.Decoder
}

func (b *DeviceBuffer) Size() int    { return b.b.Size() }
func (b *DeviceBuffer) Host() []byte { return nil }

// Ptr is the buffer's device address; Device names the GPU ("cuda:0").
func (b *DeviceBuffer) Ptr() uint64    { return b.b.Ptr() }
func (b *DeviceBuffer) Device() string { return b.dev }

// Export implements package serve's ExportableBuffer: the buffer's
// cudaIpcMemHandle_t, kind "cuda-ipc" (serve.HandleCUDA, repeated here:
// gpudecode does not import serve).
func (b *DeviceBuffer) Export() (string, []byte, error) {
	if b.d == nil {
		return "", nil, fmt.Errorf("%s: not nvJPEG's memory: no IPC handle", b.dev)
	}
	h, err := b.d.IPCHandle(b.b)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", b.dev, err)
	}
	return "cuda-ipc", h, nil
}

// Decoder is the stage's nvJPEG decoder (Download, for checks).
func (s *Stage) Decoder() *nvjpeg.Decoder { return s.d }

func (s *Stage) Device() string { return s.g.Device() }

func (s *Stage) Alloc(n int) (loader.BatchBuffer, error) {
	b, err := s.g.Alloc(n)
	if err != nil {
		return nil, err
	}
	return &DeviceBuffer{b: b, dev: s.g.Device(), d: s.d}, nil
}

func (s *Stage) Free(b loader.BatchBuffer) error {
	db, ok := b.(*DeviceBuffer)
	if !ok {
		return fmt.Errorf("%s: free of a buffer the stage did not give", s.Device())
	}
	return s.g.Free(db.b)
}

func (s *Stage) Close() error { return s.g.Close() }

// DecodeBatch decodes the jobs on the GPU and, beside it, the stage's CPU
// share of them (loader.ShareRows) on the CPU; then the ones the GPU
// cannot take on the CPU too. Every CPU row is uploaded into its place.
// It reports the share's rows as Shared and the others the CPU decoded as
// the fallback.
func (s *Stage) DecodeBatch(ctx context.Context, jobs []*loader.DecodeJob, dst loader.BatchBuffer, f loader.RowFormat) (loader.BatchReport, error) {
	var rep loader.BatchReport
	db, ok := dst.(*DeviceBuffer)
	if !ok {
		return rep, fmt.Errorf("%s: destination is not the stage's buffer", s.Device())
	}
	if f.C != 3 {
		return rep, fmt.Errorf("%s: rows of %d channels: the stage writes three", s.Device(), f.C)
	}
	f32 := f.Layout == loader.F32CHW
	elem := 1
	if f32 {
		elem = 4
		if s.lut == nil || s.lutFor != [2][3]float32{f.Mean, f.Std} {
			s.lut, s.lutFor = kernels.NormLUT(f.Mean, f.Std), [2][3]float32{f.Mean, f.Std}
		}
	}
	var shared, onGPU []int // indices into jobs
	js := make([]nvjpeg.Job, 0, len(jobs))
	for i, cpu := range loader.ShareRows(len(jobs), s.share) {
		if cpu {
			shared = append(shared, i)
			continue
		}
		j := jobs[i]
		onGPU = append(onGPU, i)
		js = append(js, nvjpeg.Job{Data: j.Data, Crop: j.Crop, ResizeW: j.ResizeW, ResizeH: j.ResizeH, View: j.View,
			Flip: j.Flip, Filter: j.Filter, Dst: int64(i * f.RowBytes / elem)})
	}
	// The share's rows are decoded while the GPU decodes the rest; this
	// goroutine ends before DecodeBatch returns.
	shareErr := make(chan error, 1)
	go func() { shareErr <- s.fallback(ctx, jobs, shared, db, f, s.shareWorkers()) }()
	res, err := s.g.DecodeBatch(js, db.b, nvjpeg.Rows{W: f.W, H: f.H, F32: f32, LUT: s.lut})
	if serr := <-shareErr; err == nil {
		err = serr
	}
	if err != nil {
		return rep, err
	}
	var cpu []int
	for k, r := range res.Routes {
		if r == nvjpeg.CPU {
			cpu = append(cpu, onGPU[k])
		}
	}
	rep.Fallback, rep.Shared = len(cpu), len(shared)
	return rep, s.fallback(ctx, jobs, cpu, db, f, s.fallbackWorkers())
}

// fallbackWorkers is the goroutines that decode what the GPU cannot
// take: Workers, else 4 (GPU.md's budget: the GPU path on at most four
// cores).
func (s *Stage) fallbackWorkers() int {
	if s.workers > 0 {
		return s.workers
	}
	return 4
}

// shareWorkers is the goroutines that decode the CPU's share: Workers,
// else every CPU (a share asks the cores to add their rate).
func (s *Stage) shareWorkers() int {
	if s.workers > 0 {
		return s.workers
	}
	return runtime.GOMAXPROCS(0)
}

// fallback decodes jobs[idx] with the CPU path on up to workers
// goroutines, each row uploaded as it is made (on the decoder's stream,
// done when Upload returns); the lowest failing row's error.
func (s *Stage) fallback(ctx context.Context, jobs []*loader.DecodeJob, idx []int, db *DeviceBuffer, f loader.RowFormat, workers int) error {
	if len(idx) == 0 {
		return nil
	}
	workers = min(max(workers, 1), len(idx))
	errs := make([]error, len(idx))
	next := make(chan int, len(idx)) // bounded by the batch
	for k := range idx {
		next <- k
	}
	close(next)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			row := make([]byte, f.RowBytes)
			for k := range next {
				if err := ctx.Err(); err != nil {
					errs[k] = err
					continue
				}
				i := idx[k]
				if err := jobs[i].DecodeCPU(row); err != nil {
					errs[k] = err
					continue
				}
				errs[k] = s.g.Upload(db.b, i*f.RowBytes, row)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
