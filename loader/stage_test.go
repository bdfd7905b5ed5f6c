package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"iter"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/internal/testenv"
)

// standIn opens the batch-decode stage with a CPUBatchDecoder that counts
// rows whose bytes are not a JPEG as fallbacks.
func standIn(d **CPUBatchDecoder) func(DecoderConfig) (BatchDecoder, error) {
	return func(cfg DecoderConfig) (BatchDecoder, error) {
		*d = &CPUBatchDecoder{Workers: 2, CanDecode: func(b []byte) bool { return bytes.HasPrefix(b, []byte{0xff, 0xd8}) }}
		return *d, nil
	}
}

// runStaged is runEpoch over IterStaged, with the fallbacks per batch.
func runStaged(t testing.TB, l *Loader, e int) (epoch, []int) {
	t.Helper()
	var out epoch
	var fb []int
	for b, err := range l.IterStaged(context.Background(), e) {
		if err != nil {
			t.Fatal(err)
		}
		if b.Index != out.nb {
			t.Fatalf("batch %d has index %d", out.nb, b.Index)
		}
		out.nb++
		out.sizes = append(out.sizes, b.Valid)
		out.repeats += b.Repeats
		host := b.Host()
		for i := range b.Valid {
			if i < b.Valid-b.Repeats {
				out.first = append(out.first, b.Items[i].Key)
			}
			out.keys = append(out.keys, b.Items[i].Key)
			out.labels = append(out.labels, b.Items[i].Label)
			out.rows = append(out.rows, bytes.Clone(host[i*b.RowBytes:(i+1)*b.RowBytes]))
		}
		fb = append(fb, b.Fallback)
		b.Release()
		b.Release() // twice: harmless
	}
	return out, fb
}

func sameStaged(t *testing.T, what string, a, b epoch) {
	t.Helper()
	if len(a.keys) == 0 {
		t.Fatalf("%s: empty epoch", what)
	}
	if !slices.Equal(a.keys, b.keys) || !slices.Equal(a.labels, b.labels) || !slices.Equal(a.sizes, b.sizes) || a.repeats != b.repeats {
		t.Fatalf("%s: order differs:\n cpu    %v %v (%d repeats)\n staged %v %v (%d repeats)", what, a.keys, a.sizes, a.repeats, b.keys, b.sizes, b.repeats)
	}
	for i := range a.rows {
		if !bytes.Equal(a.rows[i], b.rows[i]) {
			t.Fatalf("%s: row %d (%s) pixels differ", what, i, a.keys[i])
		}
	}
}

// The stage serves epoch e's samples in the CPU path's order with its
// pixels, for both layouts, both recipes, indexed and streamed data, and
// ranks padded to the same count.
func TestStagedMatchesCPU(t *testing.T) {
	folder, shards := makeTree(t, 7) // 21 samples
	for _, path := range []string{folder, shards} {
		for _, o := range []Options{
			{Resolution: 20, Batch: 4, Seed: 5},
			{Resolution: 20, Batch: 4, Seed: 5, Layout: U8HWC, FullDecode: true},
			{Resolution: 16, Batch: 5, Seed: 2, Transform: Eval},
			{Resolution: 16, Batch: 3, Seed: 9, NumShards: 2, ShardIdx: 1, Interpolation: "bicubic"},
			{Resolution: 16, Batch: 4, Seed: 9, NumShards: 2, Drop: true},
		} {
			cpu, err := Open(path, o)
			if err != nil {
				t.Fatal(err)
			}
			var d *CPUBatchDecoder
			so := o
			so.NewBatchDecoder = standIn(&d)
			st, err := Open(path, so)
			if err != nil {
				t.Fatal(err)
			}
			for e := range 2 {
				what := fmt.Sprintf("%s %+v epoch %d", filepath.Base(path), o, e)
				want := runEpoch(t, cpu, e)
				got, fb := runStaged(t, st, e)
				sameStaged(t, what, want, got)
				if len(fb) != want.nb || slices.Max(fb) != 0 {
					t.Fatalf("%s: fallbacks %v on JPEGs only", what, fb)
				}
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if d.Live() != 0 || d.allocs.Load() != int64(st.RingSize()) {
				t.Fatalf("after Close: %d buffers live of %d allocated (ring %d)", d.Live(), d.allocs.Load(), st.RingSize())
			}
			cpu.Close()
		}
	}
}

// A fresh loader asked for epoch e gives what a long-running one gives.
func TestStagedFreshEpoch(t *testing.T) {
	folder, _ := makeTree(t, 6)
	var d1, d2 *CPUBatchDecoder
	long, err := Open(folder, Options{Resolution: 16, Batch: 4, Seed: 3, NewBatchDecoder: standIn(&d1)})
	if err != nil {
		t.Fatal(err)
	}
	defer long.Close()
	var last epoch
	for e := range 3 {
		last, _ = runStaged(t, long, e)
	}
	fresh, err := Open(folder, Options{Resolution: 16, Batch: 4, Seed: 3, NewBatchDecoder: standIn(&d2)})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	got, _ := runStaged(t, fresh, 2)
	sameStaged(t, "fresh epoch 2", last, got)
	e0, _ := runStaged(t, fresh, 0)
	if slices.Equal(e0.keys, got.keys) {
		t.Fatal("epochs 0 and 2 in the same order: the epoch is not an input")
	}
}

// An early break and a cancelled epoch end the decode goroutine and give
// every buffer back to the ring; Close frees them all.
func TestStagedEarlyBreakCancel(t *testing.T) {
	folder, shards := makeTree(t, 8)
	base := runtime.NumGoroutine()
	for _, path := range []string{folder, shards} {
		var d *CPUBatchDecoder
		l, err := Open(path, Options{Resolution: 16, Batch: 3, Seed: 1, Prefetch: 2, NewBatchDecoder: standIn(&d)})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{0, 1, 4} {
			n := 0
			for b, err := range l.IterStaged(context.Background(), k) {
				if err != nil {
					t.Fatal(err)
				}
				b.Release()
				if n == k {
					break
				}
				n++
			}
			if l.ring.idle() != l.RingSize() {
				t.Fatalf("%s: break after %d: %d of %d buffers back", path, k, l.ring.idle(), l.RingSize())
			}
		}
		// A consumer holding two batches (double buffering) still gets the next.
		var held []*StagedBatch
		for b, err := range l.IterStaged(context.Background(), 5) {
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, b)
			if len(held) > 2 {
				held[0].Release()
				held = held[1:]
			}
		}
		for _, b := range held {
			b.Release()
		}
		last := testenv.CancelAfter(func(ctx context.Context) iter.Seq2[*StagedBatch, error] { return l.IterStaged(ctx, 6) }, 2, (*StagedBatch).Release)
		if !errors.Is(last, context.Canceled) {
			t.Fatalf("%s: cancelled epoch ended with %v", path, last)
		}
		if l.ring.idle() != l.RingSize() {
			t.Fatalf("%s: after cancel: %d of %d buffers back", path, l.ring.idle(), l.RingSize())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if d.Live() != 0 {
			t.Fatalf("%s: %d buffers live after Close", path, d.Live())
		}
		if _, err := l.stageRing(); err == nil {
			t.Fatal("a closed loader allocated a ring")
		}
	}
	testenv.GoroutinesBack(t, base)
}

// Closing with a batch still held frees its buffer and says so.
func TestStagedCloseHeld(t *testing.T) {
	folder, _ := makeTree(t, 3)
	var d *CPUBatchDecoder
	l, err := Open(folder, Options{Resolution: 16, Batch: 2, NewBatchDecoder: standIn(&d)})
	if err != nil {
		t.Fatal(err)
	}
	var held *StagedBatch
	for b, err := range l.IterStaged(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		held = b
		break
	}
	err = l.Close()
	if err == nil || !strings.Contains(err.Error(), "1 staged batch(es) not released") {
		t.Fatalf("Close with a batch held: %v", err)
	}
	if d.Live() != 0 {
		t.Fatalf("%d buffers live after Close", d.Live())
	}
	_ = held
}

// Rows the decoder cannot take are counted per batch, exactly: here the
// PNGs among JPEGs, whose pixels are still the CPU path's.
func TestStagedFallbackCounted(t *testing.T) {
	folder, _ := makeTree(t, 5)
	pngs := map[string]bool{}
	for i := range 4 {
		img := image.NewRGBA(image.Rect(0, 0, 33+i, 29))
		for y := range 29 {
			for x := range 33 + i {
				img.Set(x, y, color.RGBA{uint8(x * 7), uint8(y * 5), uint8(i * 40), 255})
			}
		}
		var b bytes.Buffer
		png.Encode(&b, img)
		name := fmt.Sprintf("bee/p%d.png", i)
		os.WriteFile(filepath.Join(folder, name), b.Bytes(), 0o644)
		pngs[name] = true
	}
	o := Options{Resolution: 16, Batch: 4, Seed: 11}
	cpu, err := Open(folder, o)
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	var d *CPUBatchDecoder
	o.NewBatchDecoder = standIn(&d)
	st, err := Open(folder, o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for e := range 2 {
		want := runEpoch(t, cpu, e)
		got, fb := runStaged(t, st, e)
		sameStaged(t, fmt.Sprintf("epoch %d", e), want, got)
		row := 0
		for bi, n := range got.sizes {
			wantFB := 0
			for _, k := range got.keys[row : row+n] {
				if pngs[filepath.ToSlash(k)] {
					wantFB++
				}
			}
			row += n
			if fb[bi] != wantFB {
				t.Fatalf("epoch %d batch %d: fallback %d, want %d (%v)", e, bi, fb[bi], wantFB, got.keys[row-n:row])
			}
		}
	}
	if st.Fallbacks() != 2*int64(len(pngs)) {
		t.Fatalf("Fallbacks %d, want %d", st.Fallbacks(), 2*len(pngs))
	}
}

// The device option: validated, refused where the build has no stage,
// and IterEpoch refuses a staged loader.
func TestStagedDeviceOption(t *testing.T) {
	folder, _ := makeTree(t, 2)
	for _, dev := range []string{"gpu", "cuda:x", "cuda:-1", "CUDA"} {
		if _, err := Open(folder, Options{Device: dev}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("device %q", dev)) {
			t.Errorf("device %q: %v", dev, err)
		}
	}
	for _, dev := range []string{"", "cpu"} {
		l, err := Open(folder, Options{Device: dev, Resolution: 8, Batch: 2})
		if err != nil {
			t.Fatalf("device %q: %v", dev, err)
		}
		if l.BatchDecoder() != nil {
			t.Fatalf("device %q has a batch decoder", dev)
		}
		l.Close()
	}
	decodersMu.Lock()
	saved, had := decoders["cuda"]
	delete(decoders, "cuda")
	decodersMu.Unlock()
	defer func() {
		if had {
			RegisterBatchDecoder("cuda", saved)
		}
	}()
	_, err := Open(folder, Options{Device: "cuda:1"})
	if err == nil || !strings.Contains(err.Error(), `device "cuda:1"`) || !strings.Contains(err.Error(), "gpudecode") {
		t.Fatalf("cuda without a registered stage: %v", err)
	}
	RegisterBatchDecoder("cuda", func(c DecoderConfig) (BatchDecoder, error) {
		return nil, fmt.Errorf("no GPU %d here", c.Ordinal)
	})
	_, err = Open(folder, Options{Device: "cuda:1"})
	if err == nil || !strings.Contains(err.Error(), `device "cuda:1": no GPU 1 here`) {
		t.Fatalf("cuda whose stage fails to open: %v", err)
	}
	_, err = Open(folder, Options{Device: "cuda", Transform: None})
	if err == nil || !strings.Contains(err.Error(), "transform none") {
		t.Fatalf("device cuda, transform none: %v", err)
	}
	var d *CPUBatchDecoder
	l, err := Open(folder, Options{Resolution: 8, Batch: 2, NewBatchDecoder: standIn(&d)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, err := range l.IterEpoch(context.Background(), 0) {
		if !errors.Is(err, ErrStaged) {
			t.Fatalf("IterEpoch on a staged loader: %v", err)
		}
	}
}

// The position is the consumer's: a state taken after k staged batches is
// the CPU path's after k batches (not the decode goroutine's, which runs
// ahead), and a fresh staged loader resumed from it serves the rest of
// the epoch with the CPU path's pixels.
func TestStagedResume(t *testing.T) {
	folder, shards := makeTree(t, 8)
	for _, path := range []string{folder, shards} {
		o := Options{Resolution: 16, Batch: 3, Seed: 4, Prefetch: 3}
		if path == shards {
			o.GlobalShuffle = true
		}
		cpu, err := Open(path, o)
		if err != nil {
			t.Fatal(err)
		}
		full := runEpoch(t, cpu, 1)
		n := 0
		for b, err := range cpu.IterEpoch(context.Background(), 1) {
			if err != nil {
				t.Fatal(err)
			}
			b.Release()
			if n++; n == 2 {
				break
			}
		}
		want, err := cpu.State()
		if err != nil {
			t.Fatal(err)
		}
		var d *CPUBatchDecoder
		so := o
		so.NewBatchDecoder = standIn(&d)
		st, err := Open(path, so)
		if err != nil {
			t.Fatal(err)
		}
		n = 0
		for b, err := range st.IterStaged(context.Background(), 1) {
			if err != nil {
				t.Fatal(err)
			}
			b.Release()
			if n++; n == 2 {
				// Wait until the decoder has run ahead (its queue full and
				// one more batch decoded): the state must not follow it.
				for st.ring.idle() != st.RingSize()-(o.Prefetch+1) {
					runtime.Gosched()
				}
				got, err := st.State()
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: staged state %+v, CPU path's %+v", path, got, want)
				}
				break
			}
		}
		st.Close()
		ro := so
		ro.Resume = &want
		r, err := Open(path, ro)
		if err != nil {
			t.Fatal(err)
		}
		rest, _ := runStaged(t, r, 1)
		if done, _ := r.State(); done.Epoch != 2 {
			t.Fatalf("%s: after the resumed epoch, state %+v", path, done)
		}
		r.Close()
		head := 6 // two batches of 3
		if !slices.Equal(rest.keys, full.keys[head:]) {
			t.Fatalf("%s: resumed %v, want %v", path, rest.keys, full.keys[head:])
		}
		for i := range rest.rows {
			if !bytes.Equal(rest.rows[i], full.rows[head+i]) {
				t.Fatalf("%s: resumed row %d pixels differ", path, i)
			}
		}
		cpu.Close()
	}
}

// ShareRows takes ⌊n·share⌋ of a batch's rows, spread evenly (no two
// runs of the share's rows or of the others differ by more than one row
// where share ≤ ½), and none at 0, all at 1.
func TestShareRows(t *testing.T) {
	for _, n := range []int{1, 7, 8, 256, 257} {
		for _, share := range []float64{0, 0.1, 0.25, 1.0 / 3, 0.5, 0.9, 1} {
			rows := ShareRows(n, share)
			got := 0
			for _, c := range rows {
				if c {
					got++
				}
			}
			if want := int(float64(n) * share); got != want && !(got == want+1 && float64(got) == float64(n)*share) {
				t.Errorf("n %d share %v: %d rows, want %d", n, share, got, want)
			}
			if share > 0 && share <= 0.5 {
				gap, longest := 0, 0
				for _, c := range rows {
					if c {
						gap = 0
						continue
					}
					gap++
					longest = max(longest, gap)
				}
				if per := int(1 / share); longest > per {
					t.Errorf("n %d share %v: %d other rows in a row, want at most %d (spread evenly)", n, share, longest, per)
				}
			}
		}
	}
}

// A CPU share is a GPU stage's: refused outside [0, 1] and on the CPU
// path, naming it; with a stage, the loader counts the rows the stage
// reports as shared, batch by batch and since Open.
func TestCPUShareOptions(t *testing.T) {
	folder, _ := makeTree(t, 4) // 12 samples
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Resolution: 16, Batch: 4, CPUShare: -0.1}, "cpu share -0.1: want 0 to 1"},
		{Options{Resolution: 16, Batch: 4, CPUShare: 1.5}, "cpu share 1.5: want 0 to 1"},
		{Options{Resolution: 16, Batch: 4, CPUShare: math.NaN()}, "cpu share NaN"},
		{Options{Resolution: 16, Batch: 4, CPUShare: 0.5}, "the CPU path"},
	} {
		if _, err := Open(folder, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %q", c.o.CPUShare, err, c.want)
		}
	}
	var d *CPUBatchDecoder
	l, err := Open(folder, Options{Resolution: 16, Batch: 4, CPUShare: 0.5, NewBatchDecoder: func(cfg DecoderConfig) (BatchDecoder, error) {
		d = &CPUBatchDecoder{Share: cfg.CPUShare}
		return d, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var per []int
	for sb, err := range l.IterStaged(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		per = append(per, sb.Shared)
		sb.Release()
	}
	if !slices.Equal(per, []int{2, 2, 2}) || l.SharedRows() != 6 {
		t.Fatalf("shared rows %v by batch, %d since Open; want 2 of each batch of 4, 6", per, l.SharedRows())
	}
}
