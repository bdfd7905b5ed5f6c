//go:build linux

package serve

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/faster-training/faster/loader"
)

// epochKeys runs epoch e on c (after the frames already sent) and returns
// the keys served, or the refusal.
func epochKeys(t *testing.T, c *client, e int) (keys []string, refused string) {
	t.Helper()
	c.epoch(e)
	for {
		typ, p := c.recv()
		switch typ {
		case FrameEnd:
			return keys, ""
		case FrameRefused:
			return nil, string(p)
		}
		r := parseReady(t, typ, p)
		keys = append(keys, r.keys...)
		c.free(r.slot)
	}
}

func orderFrame(idx ...int64) []byte {
	var p []byte
	for _, i := range idx {
		p = binary.LittleEndian.AppendUint64(p, uint64(i))
	}
	return p
}

// TestServeSamplerOrderAndSeed: with --sampler indices each epoch serves
// the order the consumer sent before it ('O' frames, appended), exactly;
// an epoch without one, or an index out of range, is refused ('N') and the
// session goes on; a seed ('S') makes the epochs those of a loader opened
// with it (issue 39 items 3 and 5: before, no way to send either).
func TestServeSamplerOrderAndSeed(t *testing.T) {
	data := makeTree(t, 3) // 9 images
	base := loader.Options{Transform: loader.Eval, Resolution: 8, Layout: loader.U8HWC, Batch: 4, Seed: 3, Workers: 1, Shuffle: loader.ShuffleOff}
	ref, err := loader.Open(data, base)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for b, err := range ref.IterEpoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Valid {
			all = append(all, b.Items[i].Key)
		}
		b.Release()
	}
	ref.Close()

	lo := base
	lo.Sampler = loader.SamplerIndices
	l, err := loader.Open(data, lo)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o := ForLoader(l, lo)
	o.Dir, o.Slots = t.TempDir(), 2
	c, done := start(t, context.Background(), l, o)
	if c.hello.Sampler != loader.SamplerIndices || c.hello.Steps != -1 {
		t.Fatalf("hello: sampler %q, steps %d", c.hello.Sampler, c.hello.Steps)
	}
	c.attach()
	if _, why := epochKeys(t, c, 0); !strings.Contains(why, "no order sent") {
		t.Fatalf("epoch without an order: %q", why)
	}
	c.send(FrameOrder, orderFrame(2, 9))
	if _, why := epochKeys(t, c, 0); !strings.Contains(why, "sampler index 9 (at position 1") {
		t.Fatalf("index 9 of 9: %q", why)
	}
	for e, order := range [][]int64{{8, 0, 0, 5, 1, 2, 7}, {}, {4}} {
		half := len(order) / 2
		c.send(FrameOrder, orderFrame(order[:half]...))
		c.send(FrameOrder, orderFrame(order[half:]...))
		got, why := epochKeys(t, c, e)
		if why != "" {
			t.Fatalf("epoch %d refused: %s", e, why)
		}
		var want []string
		for _, i := range order {
			want = append(want, all[i])
		}
		if !slices.Equal(got, want) {
			t.Fatalf("epoch %d: served %v, want %v", e, got, want)
		}
	}
	c.conn.Close()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}

	// The seed: a shuffled loader opened with seed 3, told seed 11,
	// serves seed 11's epoch 2.
	sh := base
	sh.Shuffle = loader.ShuffleOn
	keysOf := func(seed *uint64, open uint64) []string {
		lo := sh
		lo.Seed = open
		l, err := loader.Open(data, lo)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		o := ForLoader(l, lo)
		o.Dir, o.Slots = t.TempDir(), 2
		c, done := start(t, context.Background(), l, o)
		c.attach()
		if seed != nil {
			c.send(FrameSeed, binary.LittleEndian.AppendUint64(nil, *seed))
		}
		k, why := epochKeys(t, c, 2)
		if why != "" {
			t.Fatal(why)
		}
		c.conn.Close()
		if err := <-done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
		return k
	}
	eleven := uint64(11)
	told, opened, other := keysOf(&eleven, 3), keysOf(nil, 11), keysOf(nil, 3)
	if !slices.Equal(told, opened) || slices.Equal(told, other) {
		t.Fatalf("seed 11 sent: %v; opened with 11: %v; with 3: %v", told, opened, other)
	}
}
