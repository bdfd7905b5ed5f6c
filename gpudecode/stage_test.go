//go:build cgo

package gpudecode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/faster-training/faster/gpudecode/nvjpeg"
	"github.com/faster-training/faster/internal/testenv"
	"github.com/faster-training/faster/loader"
)

// fakeGPU stands in for nvjpeg.Decoder: buffers in host memory, a
// DecodeBatch that writes each job's row as its mark (byte 0x80 + the
// row's index) and routes every fifth job it is given to the CPU, and an
// Upload that copies. It records the rows it was asked to decode, and with
// share set (the rows of a batch the stage's CPU share takes) holds each
// DecodeBatch until one of this batch's share rows is uploaded: the share
// decoded beside the GPU.
type fakeGPU struct {
	mu       sync.Mutex
	mem      map[*nvjpeg.Buffer][]byte
	decoded  map[*nvjpeg.Buffer][]int // by buffer: the row indices its last DecodeBatch was given, in order
	rowBytes int
	share    []bool   // by row: the share's (nil: do not wait)
	ups      chan int // share rows uploaded
	calls    int      // DecodeBatch calls
	seen     int      // share uploads taken from ups
	overlap  int      // batches whose DecodeBatch saw one of its share rows uploaded
	t        *testing.T
}

func newFakeGPU(t *testing.T) *fakeGPU {
	return &fakeGPU{mem: map[*nvjpeg.Buffer][]byte{}, decoded: map[*nvjpeg.Buffer][]int{}, ups: make(chan int, 1024), t: t}
}

func (g *fakeGPU) Device() string { return "cuda:7" }

func (g *fakeGPU) Alloc(n int) (*nvjpeg.Buffer, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := new(nvjpeg.Buffer)
	g.mem[b] = make([]byte, n)
	return b, nil
}

func (g *fakeGPU) Free(b *nvjpeg.Buffer) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mem[b] == nil {
		return fmt.Errorf("free of an unknown buffer")
	}
	delete(g.mem, b)
	return nil
}

func (g *fakeGPU) DecodeBatch(jobs []nvjpeg.Job, dst *nvjpeg.Buffer, rows nvjpeg.Rows) (nvjpeg.Result, error) {
	if g.share != nil {
		// The batches before this one uploaded all their share rows
		// (the stage joins its share before it returns): wait for one
		// more.
		per := 0
		for _, c := range g.share {
			if c {
				per++
			}
		}
		// A stage that decoded the share after the GPU would never
		// upload one here: the test then hangs until go test's -timeout
		// names it, whatever the machine's load.
		for g.seen <= per*g.calls {
			<-g.ups
			g.seen++
		}
		g.overlap++
		g.calls++
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	res := nvjpeg.Result{Routes: make([]nvjpeg.Route, len(jobs)), Why: make([]string, len(jobs))}
	elem := int64(1)
	if rows.F32 {
		elem = 4
	}
	g.rowBytes = rows.W * rows.H * 3 * int(elem)
	g.decoded[dst] = g.decoded[dst][:0]
	for k, j := range jobs {
		i := int(j.Dst * elem / int64(g.rowBytes))
		g.decoded[dst] = append(g.decoded[dst], i)
		if k%5 == 0 {
			res.Routes[k], res.Why[k] = nvjpeg.CPU, "the fake's fifth"
			continue
		}
		row := g.mem[dst][int(j.Dst*elem):][:g.rowBytes]
		for x := range row {
			row[x] = byte(0x80 + i)
		}
	}
	return res, nil
}

func (g *fakeGPU) Upload(b *nvjpeg.Buffer, off int, host []byte) error {
	g.mu.Lock()
	copy(g.mem[b][off:], host)
	g.mu.Unlock()
	if row := off / len(host); g.share != nil && g.share[row] {
		g.ups <- row
	}
	return nil
}

func (g *fakeGPU) Close() error { return nil }

// A share of each batch (loader.ShareRows) is decoded on the CPU beside
// the GPU's decode — the GPU is never given those rows, and it decodes
// while they are made (the fake holds its decode until the first of them
// is uploaded) — and their rows, as the rows the GPU routes to the CPU,
// are the CPU path's bytes; the GPU's rows are its own. The batch reports
// the share as Shared and the GPU's refusals as Fallback, with every
// share (0, a quarter, a half, all of it) and both layouts.
func TestStageCPUShare(t *testing.T) {
	folder := testenv.WriteFolder(t, 3, 8) // 24 images
	for _, layout := range []loader.Layout{loader.U8HWC, loader.F32CHW} {
		for _, share := range []float64{0, 0.25, 0.5, 1} {
			t.Run(fmt.Sprintf("%s/share=%v", layout, share), func(t *testing.T) {
				o := loader.Options{Resolution: 16, Batch: 8, Seed: 4, Layout: layout, FullDecode: true, CPUShare: share}
				var g *fakeGPU
				so := o
				so.NewBatchDecoder = func(cfg loader.DecoderConfig) (loader.BatchDecoder, error) {
					g = newFakeGPU(t)
					if cfg.CPUShare > 0 && cfg.CPUShare < 1 {
						g.share = loader.ShareRows(8, cfg.CPUShare)
					}
					return newStage(g, nil, cfg), nil
				}
				st, err := loader.Open(folder, so)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				ro := o
				ro.CPUShare = 0
				ro.NewBatchDecoder = func(loader.DecoderConfig) (loader.BatchDecoder, error) { return &loader.CPUBatchDecoder{}, nil }
				ref, err := loader.Open(folder, ro)
				if err != nil {
					t.Fatal(err)
				}
				defer ref.Close()
				var want [][]byte
				for sb, err := range ref.IterStaged(context.Background(), 0) {
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, slices.Clone(sb.Buffer.Host()[:sb.Valid*sb.RowBytes]))
					sb.Release()
				}
				batches, shared, fallback := 0, 0, 0
				for sb, err := range st.IterStaged(context.Background(), 0) {
					if err != nil {
						t.Fatal(err)
					}
					g.mu.Lock()
					b := sb.Buffer.(*DeviceBuffer).b // ours until Release: no later batch decodes into it
					got := slices.Clone(g.mem[b][:sb.Valid*sb.RowBytes])
					asked := slices.Clone(g.decoded[b])
					g.mu.Unlock()
					rows := loader.ShareRows(len(sb.Items), share)
					var gpuRows []int
					for i, cpu := range rows {
						if !cpu {
							gpuRows = append(gpuRows, i)
						}
					}
					if !slices.Equal(asked, gpuRows) {
						t.Fatalf("batch %d: the GPU was given rows %v, want %v (the share's never)", batches, asked, gpuRows)
					}
					for i := range sb.Valid {
						row, ref := got[i*sb.RowBytes:][:sb.RowBytes], want[batches][i*sb.RowBytes:][:sb.RowBytes]
						k := slices.Index(gpuRows, i)
						onCPU := k < 0 || k%5 == 0
						if onCPU && !bytes.Equal(row, ref) {
							t.Fatalf("batch %d row %d (decoded on the CPU): not the CPU path's bytes", batches, i)
						}
						if !onCPU && !bytes.Equal(row, bytes.Repeat([]byte{byte(0x80 + i)}, sb.RowBytes)) {
							t.Fatalf("batch %d row %d (the GPU's): not the GPU's row", batches, i)
						}
					}
					if wantShared, wantFB := len(rows)-len(gpuRows), (len(gpuRows)+4)/5; sb.Shared != wantShared || sb.Fallback != wantFB {
						t.Fatalf("batch %d: shared %d, fallback %d; want %d, %d", batches, sb.Shared, sb.Fallback, wantShared, wantFB)
					}
					shared += sb.Shared
					fallback += sb.Fallback
					batches++
					sb.Release()
				}
				if batches != 3 || st.SharedRows() != int64(shared) || st.Fallbacks() != int64(fallback) {
					t.Fatalf("%d batches; loader counts %d shared, %d fallbacks; batches %d, %d", batches, st.SharedRows(), st.Fallbacks(), shared, fallback)
				}
				if want := int(share * 8); shared != 3*want {
					t.Fatalf("%d rows shared over 3 batches of 8 at share %v, want %d", shared, share, 3*want)
				}
				if g.share != nil && g.overlap != batches {
					t.Fatalf("the share ran beside the GPU's decode in %d of %d batches", g.overlap, batches)
				}
			})
		}
	}
}

// With a share, an early break and a cancelled epoch end every goroutine
// of the stage (the share's decode joins before its batch returns) and
// give every buffer back; Close frees them all.
func TestStageCPUShareBreakCancel(t *testing.T) {
	folder := testenv.WriteFolder(t, 3, 8) // 24 images
	base := runtime.NumGoroutine()
	var g *fakeGPU
	l, err := loader.Open(folder, loader.Options{Resolution: 16, Batch: 4, Seed: 2, Prefetch: 2, CPUShare: 0.5,
		NewBatchDecoder: func(cfg loader.DecoderConfig) (loader.BatchDecoder, error) {
			g = newFakeGPU(t)
			return newStage(g, nil, cfg), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for sb, err := range l.IterStaged(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		sb.Release()
		break
	}
	last := testenv.CancelAfter(func(ctx context.Context) iter.Seq2[*loader.StagedBatch, error] { return l.IterStaged(ctx, 1) }, 2, (*loader.StagedBatch).Release)
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("cancelled epoch ended with %v", last)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	live := len(g.mem)
	g.mu.Unlock()
	if live != 0 {
		t.Fatalf("%d buffers live after Close", live)
	}
	testenv.GoroutinesBack(t, base)
}
