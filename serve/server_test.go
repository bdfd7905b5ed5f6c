//go:build linux

package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRoundTripEpochs(t *testing.T) {
	before := runtime.NumGoroutine()
	src := fakeSource{n: 7, size: 4, rowBytes: 12, last: 3}
	o := fakeOptions(t, src, 3)
	c, done := start(t, context.Background(), src, o)
	if _, err := os.Stat(c.hello.Path); err != nil {
		t.Fatalf("before attach the file must exist: %v", err)
	}
	c.attach()
	for _, e := range []int{0, 5} {
		c.epoch(e)
		for b := range src.n {
			r := c.nextReady()
			rows := src.size
			if b == src.n-1 {
				rows = src.last
			}
			if r.epoch != e || r.index != b || r.valid != rows || r.rows != rows {
				t.Fatalf("epoch %d batch %d: got %+v", e, b, r)
			}
			img := c.images(r)
			for row := range rows {
				want := bytes.Repeat([]byte{fill(e, b, row)}, src.rowBytes)
				if !bytes.Equal(img[row*src.rowBytes:][:src.rowBytes], want) {
					t.Fatalf("epoch %d batch %d row %d: pixels differ", e, b, row)
				}
				if r.keys[row] != fmt.Sprintf("e%d/b%d/r%d", e, b, row) {
					t.Fatalf("key %q", r.keys[row])
				}
			}
			if lb := c.labels(r); lb[rows-1] != b*100+rows-1 {
				t.Fatalf("labels %v", lb)
			}
			c.free(r.slot)
		}
		if got := c.nextEnd(); got != (end{e, src.n, (src.n-1)*src.size + src.last, false}) {
			t.Fatalf("end %+v", got)
		}
	}
	if _, err := os.Stat(c.hello.Path); !os.IsNotExist(err) {
		t.Fatalf("after attach the file must be unlinked: %v", err)
	}
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatalf("Serve after the consumer left: %v", err)
	}
	checkGoroutines(t, before)
}

// The server never writes a slot the consumer holds: with every slot held
// nothing more is announced, and held slots keep their contents; each free
// lets exactly one more batch through.
func TestBackpressure(t *testing.T) {
	src := fakeSource{n: 10, size: 2, rowBytes: 64}
	const slots = 3
	c, done := start(t, context.Background(), src, fakeOptions(t, src, slots))
	c.attach()
	c.epoch(1)
	var held []ready
	for range slots {
		held = append(held, c.nextReady())
	}
	if typ, p, ok := c.poll(150 * time.Millisecond); ok {
		t.Fatalf("with all %d slots held the server sent %q %q", slots, typ, p)
	}
	next := 0
	for len(held) > 0 {
		r := held[0]
		held = held[1:]
		if r.index != next {
			t.Fatalf("batch %d, want %d", r.index, next)
		}
		next++
		img := c.images(r)
		for i := range img {
			if img[i] != fill(1, r.index, i/src.rowBytes) {
				t.Fatalf("held slot %d (batch %d) was overwritten", r.slot, r.index)
			}
		}
		c.free(r.slot)
		if next+len(held) < src.n {
			held = append(held, c.nextReady())
			if next+len(held) < src.n {
				if _, _, ok := c.poll(20 * time.Millisecond); ok {
					t.Fatal("one free let two batches through")
				}
			}
		}
	}
	if e := c.nextEnd(); e.batches != src.n {
		t.Fatalf("end %+v", e)
	}
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestCancelEpochThenContinue(t *testing.T) {
	before := runtime.NumGoroutine()
	src := fakeSource{n: 50, size: 2, rowBytes: 8}
	c, done := start(t, context.Background(), src, fakeOptions(t, src, 2))
	c.attach()
	c.epoch(0)
	r := c.nextReady()
	c.free(r.slot)
	c.send(FrameCancel, nil)
	var e end
	for {
		typ, p := c.recv()
		if typ == FrameEnd {
			e = parseEnd(t, typ, p)
			break
		}
		c.free(parseReady(t, typ, p).slot)
	}
	if !e.cancelled || e.batches >= src.n {
		t.Fatalf("end after cancel %+v", e)
	}
	// A cancel between epochs is harmless; the next epoch runs in full.
	c.send(FrameCancel, nil)
	c.epoch(1)
	for range src.n {
		c.free(c.nextReady().slot)
	}
	if e := c.nextEnd(); e.cancelled || e.batches != src.n {
		t.Fatalf("end %+v", e)
	}
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkGoroutines(t, before)
}

// The consumer goes away mid-epoch, while the server waits for a slot or
// for a stalled source, or before it attached: Serve returns nil, the file is gone, no goroutine
// stays.
func TestConsumerGone(t *testing.T) {
	for _, when := range []string{"before-attach", "blocked-on-ring", "mid-epoch", "source-stalled"} {
		t.Run(when, func(t *testing.T) {
			before := runtime.NumGoroutine()
			src := fakeSource{n: 1000, size: 2, rowBytes: 8}
			if when == "source-stalled" {
				src.stallAt = 1
			}
			o := fakeOptions(t, src, 2)
			c, done := start(t, context.Background(), src, o)
			switch when {
			case "blocked-on-ring":
				c.attach()
				c.epoch(0)
				c.nextReady()
				c.nextReady()
			case "source-stalled":
				c.attach()
				c.epoch(0)
				c.free(c.nextReady().slot)
			case "mid-epoch":
				c.attach()
				c.epoch(0)
				for range 5 {
					c.free(c.nextReady().slot)
				}
			}
			c.conn.Close()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Serve: %v", err)
				}
			case <-time.After(30 * time.Second): // a hang guard, not a speed check
				t.Fatal("Serve did not return after the consumer left")
			}
			if f := shmFiles(t, o.Dir); len(f) > 0 {
				t.Fatalf("left behind: %v", f)
			}
			checkGoroutines(t, before)
		})
	}
}

// Cancelling ctx closes the connection too, so Serve's loop can see the
// consumer "leave" and ctx end at once: it must say context.Canceled
// whichever it sees first. The session runs many times because the order
// is the scheduler's (returning nil here failed about 1 run in 300).
func TestContextCancelled(t *testing.T) {
	before := runtime.NumGoroutine()
	src := fakeSource{n: 1000, size: 2, rowBytes: 8}
	for i := range 100 {
		o := fakeOptions(t, src, 2)
		ctx, cancel := context.WithCancel(context.Background())
		c, done := start(t, ctx, src, o)
		c.epoch(0)
		c.nextReady()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("session %d: Serve: %v, want context.Canceled", i, err)
		}
		if f := shmFiles(t, o.Dir); len(f) > 0 {
			t.Fatalf("session %d: left behind (never attached): %v", i, f)
		}
	}
	checkGoroutines(t, before)
}

// Errors reach the consumer as an 'X' frame and end Serve.
func TestErrors(t *testing.T) {
	cases := []struct {
		name   string
		src    fakeSource
		act    func(c *client)
		want   string
		isProt bool
	}{
		{"source", fakeSource{n: 5, size: 1, rowBytes: 4, failAt: 2}, func(c *client) { c.epoch(0) }, "bad image in batch 2", false},
		{"free-unheld", fakeSource{n: 5, size: 1, rowBytes: 4}, func(c *client) { c.free(1) }, "does not hold", true},
		{"unknown-frame", fakeSource{n: 5, size: 1, rowBytes: 4}, func(c *client) { c.send('Z', nil) }, "unknown frame", true},
		{"epoch-in-epoch", fakeSource{n: 5, size: 1, rowBytes: 4}, func(c *client) { c.epoch(0); c.epoch(1) }, "while one runs", true},
		{"bad-length", fakeSource{n: 5, size: 1, rowBytes: 4}, func(c *client) { c.conn.Write([]byte{0, 0, 0, 0x7f, 'E'}) }, "frame length", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := fakeOptions(t, tc.src, 2)
			c, done := start(t, context.Background(), tc.src, o)
			c.attach()
			tc.act(c)
			var msg string
			for {
				typ, p := c.recv()
				if typ == FrameError {
					msg = string(p)
					break
				}
				parseReady(t, typ, p) // held: 2 slots hold batches 0 and 1
			}
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("error frame %q, want %q", msg, tc.want)
			}
			err := <-done
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrProtocol) != tc.isProt {
				t.Fatalf("Serve: %v", err)
			}
			if f := shmFiles(t, o.Dir); len(f) > 0 {
				t.Fatalf("left behind: %v", f)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{Slots: -1, DType: "int4", Shape: []int{0}}
	err := o.ensureDefaults()
	for _, want := range []string{"slots", "batch", "dtype", "dimensions must be positive"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	o = Options{Batch: 3, DType: "float32", Shape: []int{3, 5, 7}}
	if err := o.ensureDefaults(); err != nil {
		t.Fatal(err)
	}
	rowBytes, labelsOff, slotBytes, size := layout(&o, false)
	if rowBytes != 3*5*7*4 || labelsOff%labelAlign != 0 || labelsOff < SlotHeader+3*int64(rowBytes) ||
		slotBytes%pageBytes != 0 || slotBytes < labelsOff+3*8 || size != HeaderBytes+4*slotBytes {
		t.Fatalf("layout %d %d %d %d", rowBytes, labelsOff, slotBytes, size)
	}
	if !slices.Equal(o.Shape, []int{3, 5, 7}) || o.Slots != 4 || o.Dir != "/dev/shm" {
		t.Fatalf("defaults %+v", o)
	}
}
