//go:build linux

package serve

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/faster-training/faster/loader"
	"github.com/faster-training/faster/pipeline"
)

// pipeSource is a fakeSource built on a pipeline Batch stage with an
// Arena and a Prefetch, as a loader is, so its rows are written straight
// into the server's slots. The last leak batches of an epoch are taken
// from the pipeline and dropped without a Release, as a prefetch queue cut
// short drops them.
type pipeSource struct{ n, size, rowBytes, prefetch, leak int }

func (f pipeSource) IterEpoch(ctx context.Context, e int) iter.Seq2[*loader.Batch, error] {
	items := make([]loader.Item, f.n*f.size)
	for i := range items {
		items[i] = loader.Item{Key: fmt.Sprintf("e%d/b%d/r%d", e, i/f.size, i%f.size), Label: i}
	}
	fillRow := func(row []byte, it loader.Item) error {
		for j := range row {
			row[j] = fill(e, it.Label/f.size, it.Label%f.size)
		}
		return nil
	}
	var d pipeline.Dataset[*loader.Batch] = pipeline.Batch(pipeline.FromSlice(items), f.size).Arena(f.rowBytes, fillRow)
	if f.prefetch > 0 {
		d = pipeline.Prefetch(d, f.prefetch)
	}
	return func(yield func(*loader.Batch, error) bool) {
		for b, err := range d.Iter(ctx) {
			if err == nil && b.Index >= f.n-f.leak {
				continue
			}
			if !yield(b, err) {
				return
			}
		}
	}
}

// checkReady checks that r is batch b of epoch e of a pipeSource.
func checkReady(t testing.TB, c *client, f pipeSource, r ready, e, b int) {
	t.Helper()
	if r.epoch != e || r.index != b || r.valid != f.size {
		t.Fatalf("ready %+v, want epoch %d batch %d of %d rows", r, e, b, f.size)
	}
	im := c.images(r)
	for row := range f.size {
		for j := range f.rowBytes {
			if im[row*f.rowBytes+j] != fill(e, b, row) {
				t.Fatalf("epoch %d batch %d row %d byte %d: %d, want %d", e, b, row, j, im[row*f.rowBytes+j], fill(e, b, row))
			}
		}
	}
}

// A loader's batches are decoded straight into the slots: every batch is
// announced in place and no byte is copied, and the consumer still sees
// exactly what the loader makes (digests as TestServeLoaderIdentical). A
// Source whose batches have memory of their own is copied, and counted.
func TestServeInPlaceNoCopy(t *testing.T) {
	data := makeTree(t, 7)
	for _, layout := range []loader.Layout{loader.F32CHW, loader.U8HWC} {
		lo := loader.Options{Transform: loader.Train, Resolution: 24, Batch: 4, Seed: 3, Workers: 2, Layout: layout}
		want, _ := loaderDigests(t, data, lo, nil, 1)
		l, err := loader.Open(data, lo)
		if err != nil {
			t.Fatal(err)
		}
		o := ForLoader(l, lo)
		o.Dir, o.Slots, o.Counters = t.TempDir(), 3, &Counters{}
		c, done := start(t, context.Background(), l, o)
		c.attach()
		var got []string
		for e := range 2 { // epoch 1 after epoch 0: slots reused across epochs
			c.epoch(e)
			for {
				typ, p := c.recv()
				if typ == FrameEnd {
					break
				}
				r := parseReady(t, typ, p)
				if e == 1 {
					got = append(got, batchDigest(c.images(r), c.labels(r), r.keys))
				}
				c.free(r.slot)
			}
		}
		c.conn.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		l.Close()
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("%s: served digests differ from the loader's:\n got %v\nwant %v", layout, got, want)
		}
		n := o.Counters.Batches.Load()
		if n != int64(2*len(want)) || o.Counters.InPlace.Load() != n || o.Counters.CopiedBytes.Load() != 0 {
			t.Fatalf("%s: %d batches, %d in place, %d bytes copied; want %d, all in place, none copied",
				layout, n, o.Counters.InPlace.Load(), o.Counters.CopiedBytes.Load(), 2*len(want))
		}
	}

	src := fakeSource{n: 3, size: 2, rowBytes: 8}
	o := fakeOptions(t, src, 2)
	o.Counters = &Counters{}
	c, done := start(t, context.Background(), src, o)
	c.attach()
	c.epoch(0)
	for range src.n {
		c.free(c.nextReady().slot)
	}
	c.nextEnd()
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if o.Counters.InPlace.Load() != 0 || o.Counters.CopiedBytes.Load() != int64(src.n*src.size*src.rowBytes) {
		t.Fatalf("own memory: %d in place, %d bytes copied; want 0 and %d", o.Counters.InPlace.Load(), o.Counters.CopiedBytes.Load(), src.n*src.size*src.rowBytes)
	}
}

// With the rows written in place the batch stage waits for a slot while
// the consumer holds them all, and the server waits for the stage: a cancel
// then must still end the epoch; batches the pipeline held when it stopped
// (its prefetch queue) come back to the ring, so the next epoch can fill
// every slot; the session ends cleanly with no goroutine left.
func TestServeInPlaceCancelWhileHoldingAll(t *testing.T) {
	before := runtime.NumGoroutine()
	src := pipeSource{n: 40, size: 2, rowBytes: 8, prefetch: 2}
	o := Options{Slots: 3, Dir: t.TempDir(), Batch: src.size, DType: "uint8", Shape: []int{src.rowBytes}, Counters: &Counters{}}
	c, done := start(t, context.Background(), src, o)
	c.attach()
	c.epoch(0)
	var held []int
	for b := range o.Slots {
		r := c.nextReady()
		checkReady(t, c, src, r, 0, b)
		held = append(held, r.slot)
	}
	if _, _, ok := c.poll(50 * time.Millisecond); ok {
		t.Fatal("a batch announced while the consumer holds every slot")
	}
	c.send(FrameCancel, nil) // holding all: the stage waits in Alloc
	if e := c.nextEnd(); !e.cancelled || e.batches != o.Slots {
		t.Fatalf("end after cancel %+v, want cancelled after %d batches", e, o.Slots)
	}
	for _, s := range held {
		c.free(s)
	}
	// Cancel mid-epoch with the prefetch queue full, twice.
	for e := 1; e <= 2; e++ {
		c.epoch(e)
		r := c.nextReady()
		checkReady(t, c, src, r, e, 0)
		time.Sleep(20 * time.Millisecond) // let the stage fill its queue (the test holds either way)
		c.free(r.slot)
		c.send(FrameCancel, nil)
		for {
			typ, p := c.recv()
			if typ == FrameEnd {
				if !parseEnd(t, typ, p).cancelled {
					t.Fatal("end not cancelled")
				}
				break
			}
			c.free(parseReady(t, typ, p).slot)
		}
	}
	// Every slot is free again: the consumer can hold all of them.
	c.epoch(3)
	held = held[:0]
	for b := range o.Slots {
		r := c.nextReady()
		checkReady(t, c, src, r, 3, b)
		held = append(held, r.slot)
	}
	for _, s := range held {
		c.free(s)
	}
	for b := o.Slots; b < src.n; b++ {
		r := c.nextReady()
		checkReady(t, c, src, r, 3, b)
		c.free(r.slot)
	}
	if e := c.nextEnd(); e.cancelled || e.batches != src.n {
		t.Fatalf("end %+v, want %d batches", e, src.n)
	}
	// A source that drops batches unreleased does not shrink the ring.
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	leaky := pipeSource{n: 3, size: 2, rowBytes: 8, leak: 1}
	c, done = start(t, context.Background(), leaky, o)
	c.attach()
	for e := range 2 {
		c.epoch(e)
		held = held[:0]
		for b := range leaky.n - leaky.leak { // held at once, with the leaked one: every slot
			r := c.nextReady()
			checkReady(t, c, leaky, r, e, b)
			held = append(held, r.slot)
		}
		if end := c.nextEnd(); end.batches != leaky.n-leaky.leak {
			t.Fatalf("end %+v", end)
		}
		for _, s := range held {
			c.free(s)
		}
	}
	if o.Counters.CopiedBytes.Load() != 0 || o.Counters.InPlace.Load() != o.Counters.Batches.Load() {
		t.Fatalf("%d bytes copied, %d of %d in place", o.Counters.CopiedBytes.Load(), o.Counters.InPlace.Load(), o.Counters.Batches.Load())
	}
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkGoroutines(t, before)
}

// The consumer leaves while the stage waits for a slot (it holds them
// all), or mid-epoch: Serve returns nil, the file is gone, no goroutine
// stays.
func TestServeInPlaceConsumerGone(t *testing.T) {
	for _, when := range []string{"holding-all", "mid-epoch"} {
		t.Run(when, func(t *testing.T) {
			before := runtime.NumGoroutine()
			src := pipeSource{n: 1000, size: 2, rowBytes: 8, prefetch: 2}
			o := Options{Slots: 2, Dir: t.TempDir(), Batch: src.size, DType: "uint8", Shape: []int{src.rowBytes}}
			c, done := start(t, context.Background(), src, o)
			c.attach()
			c.epoch(0)
			if when == "holding-all" {
				c.nextReady()
				c.nextReady()
			} else {
				for range 7 {
					c.free(c.nextReady().slot)
				}
			}
			c.conn.Close()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Serve: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Serve did not return after the consumer left")
			}
			if f := shmFiles(t, o.Dir); len(f) > 0 {
				t.Fatalf("left behind: %v", f)
			}
			checkGoroutines(t, before)
		})
	}
}
